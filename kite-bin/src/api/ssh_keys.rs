//! The public keys a user signs in to the gateway with: what one pasted
//! line must be, and how a key is shown (its fingerprint as `ssh-keygen -l`
//! prints it).

use super::error::ApiError;
use russh::keys::{Algorithm, HashAlg, PublicKey};
use serde::Serialize;
use utoipa::ToSchema;

/// The most keys an account may hold (the CRD allows as many).
pub const MAX_KEYS: usize = 32;

/// The longest key line the CRD allows.
const MAX_LINE: usize = 16_384;

/// The shortest RSA key accepted, in bits.
const MIN_RSA_BITS: u32 = 2048;

/// A key as the API shows it.
#[derive(Serialize, ToSchema, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SshKey {
    /// The key's line, as stored: `<type> <base64> [comment]`.
    pub key: String,
    /// `SHA256:…`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// The key's type, such as `ssh-ed25519`.
    pub kind: String,
    /// The comment, often `user@host`.
    pub comment: String,
}

/// Reads a stored line; `None` when it is not a key (it is then shown as nothing, and never breaks the page).
pub fn shown(line: &str) -> Option<SshKey> {
    let key = PublicKey::from_openssh(line.trim()).ok()?;
    Some(SshKey {
        key: line.trim().to_string(),
        fingerprint: key.fingerprint(HashAlg::Sha256).to_string(),
        kind: key.algorithm().as_str().to_string(),
        comment: key.comment().to_string(),
    })
}

/// Checks one pasted line and returns it as it is to be stored.
pub fn parse(field: &str, line: &str) -> Result<(PublicKey, String), ApiError> {
    let line = line.trim();
    if line.contains(['\n', '\r']) {
        return Err(ApiError::invalid(field, "paste one key, on one line"));
    }
    if line.is_empty() || line.len() > MAX_LINE {
        return Err(ApiError::invalid(
            field,
            format!("paste one OpenSSH public key line of at most {MAX_LINE} characters"),
        ));
    }
    let first = line.split_whitespace().next().unwrap_or_default();
    if first.contains('=') || first.contains(',') {
        return Err(ApiError::invalid(
            field,
            "a key with options (such as command= or from=) is not accepted: paste the key alone, starting with its type",
        ));
    }
    let key = PublicKey::from_openssh(line).map_err(|_| {
        ApiError::invalid(field, "this is not an OpenSSH public key line such as 'ssh-ed25519 AAAA… you@laptop'")
    })?;
    match key.algorithm() {
        Algorithm::Ed25519 | Algorithm::Ecdsa { .. } | Algorithm::SkEd25519 | Algorithm::SkEcdsaSha2NistP256 => {}
        Algorithm::Rsa { .. } => {
            let bits = key.key_data().rsa().map(|rsa| rsa.key_size()).unwrap_or(0);
            if bits < MIN_RSA_BITS {
                return Err(ApiError::invalid(
                    field,
                    format!(
                        "an RSA key of {bits} bits is too weak; use {MIN_RSA_BITS} bits or more, or an ed25519 key"
                    ),
                ));
            }
        }
        other => {
            return Err(ApiError::invalid(
                field,
                format!("{} keys are not accepted; use ed25519, ECDSA or RSA", other.as_str()),
            ));
        }
    }
    Ok((key, line.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn an_ed25519_line() -> String {
        let key = russh::keys::PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).unwrap();
        let mut public = key.public_key().clone();
        public.set_comment("kim@laptop");
        public.to_openssh().unwrap()
    }

    #[test]
    fn one_plain_key_line_is_accepted_and_everything_else_is_named() {
        let line = an_ed25519_line();
        let (_, stored) = parse("key", &format!("  {line}\n")).unwrap();
        assert_eq!(stored, line);
        let key = line.as_str();
        let refusal = |line: &str| parse("key", line).unwrap_err().message().to_string();
        assert!(refusal(&format!("{key}\n{key}")).contains("one line"));
        assert!(refusal(&format!("command=\"ls\" {key}")).contains("options"));
        assert!(refusal(&format!("from=\"10.0.0.1\",no-pty {key}")).contains("options"));
        assert!(refusal("ssh-ed25519 not-base64").contains("not an OpenSSH public key"));
        assert!(refusal("").contains("one OpenSSH public key"));
    }

    #[test]
    fn a_key_is_shown_with_its_sha256_fingerprint() {
        let shown = shown(&an_ed25519_line()).unwrap();
        assert!(shown.fingerprint.starts_with("SHA256:"), "{shown:?}");
        assert_eq!((shown.kind.as_str(), shown.comment.as_str()), ("ssh-ed25519", "kim@laptop"));
        assert_eq!(super::shown("garbage"), None);
    }
}
