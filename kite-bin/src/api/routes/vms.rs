//! `vms`: a user's own machines. The rules are in [`crate::api::machines`].

use crate::api::auth::Caller;
use crate::api::error::{ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::machines::requests::{CreateVm, PatchVm};
use crate::api::machines::rules::USER_LEVEL_MAX_MACHINES;
use crate::api::machines::{self, envelope, own};
use crate::api::models::{VmEnvelope, VmMessage, VmView, VmsEnvelope};
use crate::api::state::{AppState, by};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use kite_core::api::{AccessLevel, PLATFORM_NAME, PowerState};

/// Your machines.
#[utoipa::path(get, path = "/vms", tag = "vms",
    responses((status = 200, body = VmsEnvelope), (status = 401, body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Json<VmsEnvelope> {
    let mut vms: Vec<VmView> =
        state.vms.find(by::NAMESPACE, caller.namespace()).iter().map(|vm| VmView::from(vm.as_ref())).collect();
    vms.sort_by(|a, b| a.name.cmp(&b.name));
    Json(VmsEnvelope { vms })
}

/// One of your machines, with how to reach it.
#[utoipa::path(get, path = "/vms/{name}", tag = "vms", params(("name" = String, Path, description = "The machine's name")),
    responses((status = 200, body = VmEnvelope), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<VmEnvelope>> {
    let vm = own(&state, &caller, &name)?;
    Ok(Json(envelope(&state, &vm)))
}

/// Creates a machine (level 1 and up). Its `sshId` and `domainPrefix`
/// must be free across the platform; of two requests racing for one, one
/// gets a 409.
#[utoipa::path(post, path = "/vms", tag = "vms", request_body = CreateVm,
    responses(
        (status = 201, description = "Created; the controller now builds it", body = VmEnvelope),
        (status = 403, description = "Your level does not allow it", body = ErrorBody),
        (status = 409, description = "The name, sshId or domainPrefix is taken", body = ErrorBody),
        (status = 422, description = "A field is not valid", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Body(request): Body<CreateVm>,
) -> ApiResult<(StatusCode, Json<VmEnvelope>)> {
    caller.require(AccessLevel::User)?;
    let platform = state.platform.get(PLATFORM_NAME);
    let planned = machines::plan::create(&request, caller.level(), &state.platform_spec(), platform.as_deref())?;
    let limit = (caller.level() == AccessLevel::User).then_some(USER_LEVEL_MAX_MACHINES);
    let vm = machines::create(&state, &caller, planned, request.ssh_password, limit).await?;
    Ok((StatusCode::CREATED, Json(envelope(&state, &vm))))
}

/// Changes a machine (level 1 and up; the size only from level 2).
#[utoipa::path(patch, path = "/vms/{name}", tag = "vms", request_body = PatchVm, params(("name" = String, Path)),
    responses(
        (status = 200, body = VmEnvelope),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Body(request): Body<PatchVm>,
) -> ApiResult<Json<VmEnvelope>> {
    caller.require(AccessLevel::User)?;
    let vm = own(&state, &caller, &name)?;
    let updated = machines::change(&state, &caller, &vm, request).await?;
    Ok(Json(envelope(&state, &updated)))
}

/// Asks for a machine's deletion (level 1 and up); the controller removes
/// it and everything made for it.
#[utoipa::path(delete, path = "/vms/{name}", tag = "vms", params(("name" = String, Path)),
    responses((status = 202, body = VmMessage), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<VmMessage>)> {
    caller.require(AccessLevel::User)?;
    let vm = own(&state, &caller, &name)?;
    let deleted = machines::request_deletion(&state, &vm).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(VmMessage { message: "the machine is being deleted".into(), vm: VmView::from(&deleted) }),
    ))
}

async fn power(state: AppState, caller: Caller, name: String, power: PowerState) -> ApiResult<Json<VmEnvelope>> {
    caller.require(AccessLevel::User)?;
    let vm = own(&state, &caller, &name)?;
    let request = PatchVm { power_state: Some(power), ..PatchVm::default() };
    let updated = machines::change(&state, &caller, &vm, request).await?;
    Ok(Json(envelope(&state, &updated)))
}

/// Starts a machine (level 1 and up).
#[utoipa::path(post, path = "/vms/{name}/start", tag = "vms", params(("name" = String, Path)),
    responses((status = 200, body = VmEnvelope), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn start(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<VmEnvelope>> {
    power(state, caller, name, PowerState::On).await
}

/// Stops a machine (level 1 and up).
#[utoipa::path(post, path = "/vms/{name}/stop", tag = "vms", params(("name" = String, Path)),
    responses((status = 200, body = VmEnvelope), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn stop(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<VmEnvelope>> {
    power(state, caller, name, PowerState::Off).await
}
