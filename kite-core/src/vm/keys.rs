//! The VM's SSH keys: the ed25519 pair the gateway logs in with, and the
//! VM's own ed25519 host key, which the gateway pins.
//!
//! Key generation is behind [`KeyGenerator`], the seam tests replace to
//! check that keys are made once and never again while their Secret exists.

use crate::Error;
use russh::keys::ssh_key::LineEnding;
use russh::keys::{Algorithm, PrivateKey};

/// An OpenSSH key pair, as text.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyPair {
    /// The private key in OpenSSH format (`-----BEGIN OPENSSH PRIVATE KEY-----`).
    pub private_openssh: String,
    /// The public key as an `authorized_keys` line (`ssh-ed25519 AAAA... comment`).
    pub public_openssh: String,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a private key, not even in a test failure.
        f.debug_struct("KeyPair").field("public_openssh", &self.public_openssh).finish_non_exhaustive()
    }
}

/// Makes new key pairs.
#[cfg_attr(test, mockall::automock)]
pub trait KeyGenerator: Send + Sync {
    /// A new key pair whose public line ends with `comment`.
    fn generate(&self, comment: &str) -> Result<KeyPair, Error>;
}

/// Generates ed25519 key pairs from the operating system's random source.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ed25519;

impl KeyGenerator for Ed25519 {
    fn generate(&self, comment: &str) -> Result<KeyPair, Error> {
        let mut key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519)
            .map_err(|e| Error::KeyGeneration(e.to_string()))?;
        key.set_comment(comment);
        let private_openssh =
            key.to_openssh(LineEnding::LF).map_err(|e| Error::KeyGeneration(e.to_string()))?.to_string();
        let public_openssh = key.public_key().to_openssh().map_err(|e| Error::KeyGeneration(e.to_string()))?;
        Ok(KeyPair { private_openssh, public_openssh })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_pair_parses_back_and_the_halves_match() {
        let pair = Ed25519.generate("kite-gateway@web").unwrap();
        let private = PrivateKey::from_openssh(&pair.private_openssh).unwrap();
        let public = russh::keys::PublicKey::from_openssh(&pair.public_openssh).unwrap();
        assert_eq!(private.public_key().key_data(), public.key_data());
        assert!(pair.public_openssh.starts_with("ssh-ed25519 "));
        assert!(pair.public_openssh.ends_with(" kite-gateway@web"));
        assert!(!format!("{pair:?}").contains("PRIVATE"));
    }

    #[test]
    fn two_pairs_differ() {
        assert_ne!(Ed25519.generate("a").unwrap(), Ed25519.generate("a").unwrap());
    }
}
