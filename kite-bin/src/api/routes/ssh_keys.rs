//! `me/ssh-keys`: the public keys the caller signs in to the gateway with.
//! Each write replaces `KiteUser.spec.sshAuthorizedKeys` under the object's
//! resourceVersion, so two writes at once cannot lose one another's key.

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::ssh_keys::{self, MAX_KEYS, SshKey};
use crate::api::state::AppState;
use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use kite_core::api::KiteUser;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// A key to add.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// One OpenSSH public key line: `ssh-ed25519 AAAA… you@laptop`.
    pub key: String,
}

/// Which key to remove.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WhichKey {
    /// Its fingerprint, `SHA256:…`.
    pub fingerprint: String,
}

fn listed(user: &KiteUser) -> Vec<SshKey> {
    user.spec.ssh_authorized_keys.iter().filter_map(|line| ssh_keys::shown(line)).collect()
}

/// Writes the caller's key list, failing on a concurrent change.
async fn write(state: &AppState, caller: &Caller, keys: Vec<String>) -> ApiResult<KiteUser> {
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": caller.user.metadata.resource_version },
        "spec": { "sshAuthorizedKeys": keys },
    });
    state.users_write().merge_patch(caller.name(), &patch).await.map_err(|error| match error {
        kube::Error::Api(status) if status.code == 409 => {
            ApiError::conflict("your keys changed meanwhile; reload the page and try again")
        }
        other => ApiError::from_kube("saving SSH keys", other),
    })
}

/// The caller's SSH public keys.
#[utoipa::path(get, path = "/me/ssh-keys", tag = "auth",
    responses(
        (status = 200, description = "The keys", body = [SshKey]),
        (status = 401, description = "Not signed in", body = ErrorBody),
    ))]
pub async fn list(caller: Caller) -> Json<Vec<SshKey>> {
    Json(listed(&caller.user))
}

/// Adds an SSH public key: one plain OpenSSH line, ed25519, ECDSA or RSA
/// of 2048 bits or more, no options, not one the account has already.
#[utoipa::path(post, path = "/me/ssh-keys", tag = "auth", request_body = NewKey,
    responses(
        (status = 201, description = "Added; every key of the account", body = [SshKey]),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 409, description = "The account has this key already, or changed meanwhile", body = ErrorBody),
        (status = 422, description = "Not a key that is accepted, or too many keys", body = ErrorBody),
    ))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    Body(new): Body<NewKey>,
) -> ApiResult<(StatusCode, Json<Vec<SshKey>>)> {
    let (key, line) = ssh_keys::parse("key", &new.key)?;
    let existing = &caller.user.spec.ssh_authorized_keys;
    let duplicate = existing
        .iter()
        .filter_map(|stored| russh::keys::PublicKey::from_openssh(stored.trim()).ok())
        .any(|stored| stored.key_data() == key.key_data());
    if duplicate {
        return Err(ApiError::conflict("your account has this key already"));
    }
    if existing.len() >= MAX_KEYS {
        return Err(ApiError::invalid("key", format!("an account holds at most {MAX_KEYS} keys; remove one first")));
    }
    let mut keys = existing.clone();
    keys.push(line);
    let updated = write(&state, &caller, keys).await?;
    tracing::info!(user = caller.name(), fingerprint = %key.fingerprint(russh::keys::HashAlg::Sha256), "added an SSH key");
    Ok((StatusCode::CREATED, Json(listed(&updated))))
}

/// Removes the SSH public key with this fingerprint.
#[utoipa::path(delete, path = "/me/ssh-keys", tag = "auth", params(WhichKey),
    responses(
        (status = 200, description = "Removed; the keys left", body = [SshKey]),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "The account has no key with this fingerprint", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Query(which): Query<WhichKey>,
) -> ApiResult<Json<Vec<SshKey>>> {
    let existing = &caller.user.spec.ssh_authorized_keys;
    let kept: Vec<String> = existing
        .iter()
        .filter(|line| ssh_keys::shown(line).is_none_or(|key| key.fingerprint != which.fingerprint))
        .cloned()
        .collect();
    if kept.len() == existing.len() {
        return Err(ApiError::not_found("your account has no key with this fingerprint"));
    }
    let updated = write(&state, &caller, kept).await?;
    tracing::info!(user = caller.name(), fingerprint = %which.fingerprint, "removed an SSH key");
    Ok(Json(listed(&updated)))
}
