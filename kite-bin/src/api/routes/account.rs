//! `auth/logout-everywhere` and `me/password`: ending every session of an
//! account, and changing its password (which ends the others).
//!
//! Both raise the user's `sessionGeneration` in `KiteUser.spec`; the
//! [`Caller`] extractor refuses every session of an older generation, on
//! every replica, as soon as its cache sees the change.

use super::auth::{SessionResponse, start_session};
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::models::Message;
use crate::api::rate_limit;
use crate::api::state::AppState;
use crate::api::validate;
use axum::Json;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum_extra::extract::CookieJar;
use kite_core::api::KiteUser;
use serde::Deserialize;
use std::net::SocketAddr;
use utoipa::ToSchema;

/// What changing the password takes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PasswordChange {
    /// The password now.
    pub current_password: String,
    /// The new one: at least 8 characters.
    pub new_password: String,
}

/// Writes `fields` into the caller's spec with the session generation
/// raised by one, and keeps the cache up to date.
async fn raise_generation(
    state: &AppState,
    caller: &Caller,
    mut fields: serde_json::Map<String, serde_json::Value>,
    doing: &str,
) -> ApiResult<KiteUser> {
    let next = caller.user.spec.session_generation.saturating_add(1);
    fields.insert("sessionGeneration".into(), next.into());
    let patch = serde_json::json!({ "spec": fields });
    state.users_write().merge_patch(caller.name(), &patch).await.map_err(|error| ApiError::from_kube(doing, error))
}

/// Signs out every session of the caller's account, this one included.
#[utoipa::path(post, path = "/auth/logout-everywhere", tag = "auth",
    responses(
        (status = 200, description = "Every session of the account is signed out", body = Message),
        (status = 401, description = "Not signed in", body = ErrorBody),
    ))]
pub async fn logout_everywhere(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> ApiResult<(CookieJar, Json<Message>)> {
    raise_generation(&state, &caller, serde_json::Map::new(), "signing out everywhere").await?;
    tracing::info!(user = caller.name(), "signed out everywhere");
    let secure = state.sessions.secure_for(&headers);
    let jar = state.sessions.cleared(secure).into_iter().fold(CookieJar::new(), CookieJar::add);
    Ok((jar, Json(Message { message: "signed out everywhere; sign in again on each device".into() })))
}

/// Changes the caller's password. Every other session of the account is
/// signed out; this one goes on with a new session.
#[utoipa::path(post, path = "/me/password", tag = "auth", request_body = PasswordChange,
    responses(
        (status = 200, description = "Changed; the other sessions are signed out", body = SessionResponse),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "The current password is not right", body = ErrorBody),
        (status = 422, description = "The new password is not valid", body = ErrorBody),
        (status = 429, description = "Too many failed attempts", body = ErrorBody),
        (status = 503, description = "The server is busy checking passwords; try again shortly", body = ErrorBody),
    ))]
pub async fn change_password(
    State(state): State<AppState>,
    caller: Caller,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Body(change): Body<PasswordChange>,
) -> ApiResult<(CookieJar, Json<SessionResponse>)> {
    validate::password("newPassword", &change.new_password)?;
    // Guessing the current password from a stolen session counts as failed sign-ins.
    let client = crate::api::client_address::client_address(peer.ip(), &headers, &state.trusted_proxies);
    let account = caller.user.spec.email.to_lowercase();
    rate_limit::refuse_while_banned(&state.limits, client, &account, "failed attempts")?;
    let (current, stored) = (change.current_password, caller.user.spec.password.clone());
    if !state.hashing.run(move || kite_ssh::password::verify(&current, &stored)).await? {
        state.limits.record_failure(client, &account);
        return Err(ApiError::forbidden("the current password is not right"));
    }
    let hash = state.hashing.hash(change.new_password).await?;
    let mut fields = serde_json::Map::new();
    fields.insert("password".into(), hash.into());
    let updated = raise_generation(&state, &caller, fields, "changing a password").await?;
    tracing::info!(user = caller.name(), "changed the password; other sessions signed out");
    start_session(&state, &headers, &updated, "your password is changed; your other sessions are signed out")
}
