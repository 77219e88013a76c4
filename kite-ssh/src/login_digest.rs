//! How a rejected login name appears in the logs: a rejected name is
//! sometimes a password typed into the wrong field, so it is never logged as
//! typed. Its digest, keyed with a secret drawn when the process starts,
//! tells repeated attempts apart without being reversible from the logs.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

/// The digest of `login` for the logs: 16 hex digits, the same for the same
/// name for as long as the process runs.
pub(crate) fn login_digest(login: &str) -> String {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    format!("{:016x}", KEY.get_or_init(RandomState::new).hash_one(login))
}

#[cfg(test)]
mod tests {
    use super::login_digest;

    #[test]
    fn the_same_name_gives_the_same_digest_and_the_digest_hides_the_name() {
        assert_eq!(login_digest("alice"), login_digest("alice"));
        assert_ne!(login_digest("alice"), login_digest("alicf"));
        assert_eq!(login_digest("hunter2").len(), 16);
        assert!(!login_digest("hunter2").contains("hunter2"));
    }
}
