//! Hashing a password (argon2id) off the async runtime: the hash is
//! deliberately slow, and would otherwise hold up every other request on
//! the worker thread.

use super::error::{ApiError, ApiResult};

/// The argon2id hash of `password`, computed on a blocking thread.
pub async fn hash_password(password: String) -> ApiResult<String> {
    tokio::task::spawn_blocking(move || kite_ssh::password::hash(&password))
        .await
        .map_err(|error| ApiError::internal("hashing a password", error))?
        .map_err(|error| ApiError::internal("hashing a password", error))
}
