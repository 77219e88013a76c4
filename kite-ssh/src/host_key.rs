//! The router's own host key: loaded from an OpenSSH key file, or generated
//! once as ed25519 and saved with mode 0600, so restarts keep the same
//! fingerprint.

use crate::Error;
use russh::keys::ssh_key::LineEnding;
use russh::keys::{Algorithm, HashAlg, PrivateKey};
use std::path::Path;

/// Loads the host key at `path` (ed25519, ECDSA or RSA, OpenSSH or PKCS#8),
/// or, when there is no file, generates an ed25519 key and saves it there.
pub fn load_or_generate(path: &Path) -> Result<PrivateKey, Error> {
    if path.exists() {
        return russh::keys::load_secret_key(path, None)
            .map_err(|e| Error::HostKey { path: path.display().to_string(), message: e.to_string() });
    }
    let key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519)
        .map_err(|e| Error::HostKey { path: path.display().to_string(), message: e.to_string() })?;
    let text = key
        .to_openssh(LineEnding::LF)
        .map_err(|e| Error::HostKey { path: path.display().to_string(), message: e.to_string() })?;
    write_private(path, text.as_bytes())?;
    tracing::info!(path = %path.display(), "generated a new ed25519 host key");
    Ok(key)
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    let io = |e: std::io::Error| Error::HostKey { path: path.display().to_string(), message: e.to_string() };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)
}

/// The SHA256 fingerprint, as `ssh-keygen -l` prints it (`SHA256:...`).
pub fn fingerprint(key: &PrivateKey) -> String {
    key.public_key().fingerprint(HashAlg::Sha256).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_is_saved_private_and_loaded_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host_key");
        let first = load_or_generate(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let again = load_or_generate(&path).unwrap();
        assert_eq!(fingerprint(&first), fingerprint(&again));
        assert!(fingerprint(&first).starts_with("SHA256:"));
    }

    #[test]
    fn a_file_that_is_no_key_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host_key");
        std::fs::write(&path, "not a key").unwrap();
        let error = load_or_generate(&path).unwrap_err().to_string();
        assert!(error.contains("host_key"), "{error}");
    }
}
