//! `admin/users`: the users, their levels, and deleting one with their machines.

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::machines::request_deletion;
use crate::api::models::{Message, PublicUser, UserEnvelope, UsersEnvelope};
use crate::api::state::{AppState, by};
use crate::api::users;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use kite_core::api::{AccessLevel, KiteUser};
use serde::Deserialize;
use std::sync::Arc;
use utoipa::ToSchema;

/// Every user (managers and admins).
#[utoipa::path(get, path = "/admin/users", tag = "admin",
    responses((status = 200, body = UsersEnvelope), (status = 403, body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<UsersEnvelope>> {
    caller.require(AccessLevel::Manager)?;
    let mut users: Vec<PublicUser> = state.users.all().iter().map(|u| PublicUser::from(u.as_ref())).collect();
    users.sort_by_key(|u| u.username.to_lowercase());
    Ok(Json(UsersEnvelope { users }))
}

/// The user `name`: an object name, or a username.
fn find(state: &AppState, name: &str) -> ApiResult<Arc<KiteUser>> {
    state.user_named(name).ok_or_else(|| ApiError::not_found(format!("there is no user '{name}'")))
}

/// A new level.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LevelChange {
    /// `0` read-only, `1` user, `2` manager, `3` admin.
    #[schema(minimum = 0, maximum = 3)]
    pub access_level: u8,
}

/// Changes a user's level. Managers may move users between read-only and
/// user only; nobody changes their own level.
#[utoipa::path(patch, path = "/admin/users/{name}/access-level", tag = "admin", request_body = LevelChange, params(("name" = String, Path, description = "Object name or username")),
    responses(
        (status = 200, body = UserEnvelope),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
pub async fn set_level(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Body(change): Body<LevelChange>,
) -> ApiResult<Json<UserEnvelope>> {
    caller.require(AccessLevel::Manager)?;
    let level = AccessLevel::from_u8(change.access_level)
        .ok_or_else(|| ApiError::invalid("access_level", "use 0 (read-only), 1 (user), 2 (manager) or 3 (admin)"))?;
    let user = find(&state, &name)?;
    let own = user.metadata.name.as_deref() == Some(caller.name());
    users::may_set_level(caller.level(), own, user.spec.access_level, level)?;
    let object = user.metadata.name.clone().unwrap_or_default();
    let updated = users::set_level(&state, &object, level).await?;
    tracing::info!(by = caller.name(), user = %object, level = level.as_u8(), "level changed");
    Ok(Json(UserEnvelope { user: PublicUser::from(&updated) }))
}

/// Deletes a user (admins): asks for the deletion of each of their
/// machines, then removes the account; the controller cleans up the rest.
#[utoipa::path(delete, path = "/admin/users/{name}", tag = "admin", params(("name" = String, Path)),
    responses(
        (status = 202, body = Message),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<Message>)> {
    caller.require(AccessLevel::Admin)?;
    let user = find(&state, &name)?;
    if user.metadata.name.as_deref() == Some(caller.name()) {
        return Err(ApiError::conflict("you cannot delete your own account here"));
    }
    let machines = state.vms.find(by::NAMESPACE, &user.spec.namespace);
    for vm in &machines {
        request_deletion(&state, vm).await?;
    }
    let object = user.metadata.name.clone().unwrap_or_default();
    match state.users_write().delete(&object).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => return Err(ApiError::from_kube("deleting a user", error)),
    }
    tracing::info!(by = caller.name(), user = %object, machines = machines.len(), "user deleted");
    Ok((
        StatusCode::ACCEPTED,
        Json(Message {
            message: format!("{} and their {} machines are being deleted", user.spec.username, machines.len()),
        }),
    ))
}
