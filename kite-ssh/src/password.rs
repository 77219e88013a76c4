//! Password hashes: argon2id PHC strings, and the bcrypt hashes existing
//! Kite objects hold.

use argon2::password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::{Arc, OnceLock};
use tokio::sync::Semaphore;

/// Why a password could not be hashed.
#[derive(Debug, thiserror::Error)]
#[error("could not hash the password: {0}")]
pub struct HashError(String);

fn hasher() -> Argon2<'static> {
    Argon2::default()
}

/// Hashes `password` with argon2id (the crate's default parameters), as a PHC string.
///
/// ```
/// let hash = kite_ssh::password::hash("correct horse").unwrap();
/// assert!(hash.starts_with("$argon2id$"));
/// assert!(kite_ssh::password::verify("correct horse", &hash));
/// assert!(!kite_ssh::password::verify("wrong", &hash));
/// ```
pub fn hash(password: &str) -> Result<String, HashError> {
    hasher().hash_password(password.as_bytes()).map(|h| h.to_string()).map_err(|e| HashError(e.to_string()))
}

/// Hashes with cheap argon2id parameters, for tests only.
pub fn hash_for_tests(password: &str) -> Result<String, HashError> {
    let params = Params::new(8, 1, 1, None).map_err(|e| HashError(e.to_string()))?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| HashError(e.to_string()))
}

/// Whether `password` matches `hash`: an argon2 PHC string, or a bcrypt hash
/// (`$2a$`, `$2b$`, `$2y$`). A hash in any other form never matches.
pub fn verify(password: &str, hash: &str) -> bool {
    if hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$") {
        return bcrypt::verify(password, hash).unwrap_or(false);
    }
    match PasswordHash::new(hash) {
        Ok(parsed) => hasher().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// Spends the time a real verification takes, for a login that has no
/// route, so that unknown logins cannot be told from known ones by timing.
pub fn verify_dummy(password: &str) {
    static DUMMY: OnceLock<Option<String>> = OnceLock::new();
    if let Some(hash) = DUMMY.get_or_init(|| hash("kite-ssh dummy password").ok()) {
        let _ = verify(password, hash);
    }
}

/// The bound on verifications at once: one per core. argon2 is deliberately
/// slow; on the async runtime it would hold up every other connection's
/// traffic, and unbounded it would let a flood of attempts take every core.
fn verifications() -> Arc<Semaphore> {
    static BOUND: OnceLock<Arc<Semaphore>> = OnceLock::new();
    BOUND.get_or_init(|| Arc::new(Semaphore::new(std::thread::available_parallelism().map_or(1, usize::from)))).clone()
}

/// Whether `password` matches `hash`, checked on a blocking thread, at most
/// one per core at a time (others wait their turn). Without a hash, a dummy
/// verification of the same cost runs and the answer is `false`, so that an
/// unknown login cannot be told from a wrong password by timing.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let hash = kite_ssh::password::hash_for_tests("pw").unwrap();
/// assert!(kite_ssh::password::verify_off_runtime("pw", Some(hash)).await);
/// assert!(!kite_ssh::password::verify_off_runtime("pw", None).await);
/// # })
/// ```
pub async fn verify_off_runtime(password: &str, hash: Option<String>) -> bool {
    let Ok(permit) = verifications().acquire_owned().await else { return false };
    let password = password.to_string();
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        match hash {
            Some(hash) => verify(&password, &hash),
            None => {
                verify_dummy(&password);
                false
            }
        }
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bcrypt_hashes_of_the_existing_platform_verify() {
        let hash = bcrypt::hash("hunter2", 4).unwrap();
        assert!(verify("hunter2", &hash));
        assert!(!verify("hunter3", &hash));
        let as_2a = hash.replacen("$2b$", "$2a$", 1);
        assert!(verify("hunter2", &as_2a));
    }

    #[test]
    fn anything_else_never_matches() {
        assert!(!verify("", ""));
        assert!(!verify("x", "plain text"));
        assert!(!verify("x", "$6$rounds=5000$salt$hash"));
    }

    #[test]
    fn cheap_test_hashes_still_verify() {
        let hash = hash_for_tests("pw").unwrap();
        assert!(verify("pw", &hash) && !verify("px", &hash));
    }
}
