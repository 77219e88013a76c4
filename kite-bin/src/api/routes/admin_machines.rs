//! `admin/vms` and `admin/vm-offers`: every machine, and the offers admins make.

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::machines::requests::PatchVm;
use crate::api::machines::{self, envelope, request_deletion};
use crate::api::models::{
    Message, OfferEnvelope, OfferView, OffersEnvelope, VmEnvelope, VmMessage, VmView, VmsEnvelope,
};
use crate::api::state::AppState;
use crate::api::validate;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kite_core::api::{AccessLevel, KiteVirtualMachineOffer, KiteVirtualMachineOfferSpec, PowerState};
use kite_core::key::key;
use serde::Deserialize;
use utoipa::ToSchema;

/// Every machine of every user (admins).
#[utoipa::path(get, path = "/admin/vms", tag = "admin",
    responses((status = 200, body = VmsEnvelope), (status = 403, body = ErrorBody)))]
pub async fn list_vms(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<VmsEnvelope>> {
    caller.require(AccessLevel::Admin)?;
    Ok(Json(VmsEnvelope { vms: state.vms.all().iter().map(|vm| VmView::from(vm.as_ref())).collect() }))
}

/// A power change.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PowerChange {
    /// `On` or `Off`.
    #[schema(value_type = String)]
    pub power_state: PowerState,
}

/// Starts or stops any machine (admins).
#[utoipa::path(patch, path = "/admin/vms/{namespace}/{name}/power", tag = "admin", request_body = PowerChange,
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = VmEnvelope), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn power(
    State(state): State<AppState>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
    Body(change): Body<PowerChange>,
) -> ApiResult<Json<VmEnvelope>> {
    caller.require(AccessLevel::Admin)?;
    let vm = machines::any(&state, &namespace, &name)?;
    let updated =
        machines::change(&state, &caller, &vm, PatchVm { power_state: Some(change.power_state), ..PatchVm::default() })
            .await?;
    Ok(Json(envelope(&state, &updated)))
}

/// Deletes any machine (admins).
#[utoipa::path(delete, path = "/admin/vms/{namespace}/{name}", tag = "admin",
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses((status = 202, body = VmMessage), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete_vm(
    State(state): State<AppState>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<VmMessage>)> {
    caller.require(AccessLevel::Admin)?;
    let vm = machines::any(&state, &namespace, &name)?;
    let deleted = request_deletion(&state, &vm).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(VmMessage { message: "the machine is being deleted".into(), vm: VmView::from(&deleted) }),
    ))
}

/// Every offer (admins).
#[utoipa::path(get, path = "/admin/vm-offers", tag = "admin",
    responses((status = 200, body = OffersEnvelope), (status = 403, body = ErrorBody)))]
pub async fn list_offers(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<OffersEnvelope>> {
    caller.require(AccessLevel::Admin)?;
    Ok(Json(OffersEnvelope { offers: state.offers.all().iter().map(|o| OfferView::from(o.as_ref())).collect() }))
}

/// What an offer grants, and to whom.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateOffer {
    /// The user it is for: their id (`name` in `GET /admin/users`), never a
    /// username or an email, which another account could imitate.
    pub target_user: String,
    /// Virtual CPUs.
    pub cpu: u32,
    /// Memory, such as `8Gi`.
    pub memory: String,
    /// Disk, at least 20Gi.
    pub disk: String,
    /// The golden image; the platform's first when absent.
    pub image: Option<String>,
    /// How long it can be claimed, in hours (default 24, at most a year).
    pub valid_hours: Option<u32>,
}

/// Makes an offer for a user (admins).
#[utoipa::path(post, path = "/admin/vm-offers", tag = "admin", request_body = CreateOffer,
    responses((status = 201, body = OfferEnvelope), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create_offer(
    State(state): State<AppState>,
    caller: Caller,
    Body(request): Body<CreateOffer>,
) -> ApiResult<(StatusCode, Json<OfferEnvelope>)> {
    caller.require(AccessLevel::Admin)?;
    let target = request.target_user.trim();
    let user = state.users.get(target).ok_or_else(|| {
        ApiError::not_found(format!("there is no user with the id '{target}' (the ids are in the list of users)"))
    })?;
    let cpu = validate::cpu(request.cpu)?;
    let memory = validate::size("memory", &request.memory)?;
    let spec = state.platform_spec();
    let image_name = request
        .image
        .clone()
        .filter(|i| !i.trim().is_empty())
        .or_else(|| spec.golden_images.first().map(|i| i.name.clone()));
    let image = spec
        .golden_images
        .iter()
        .find(|i| Some(&i.name) == image_name.as_ref())
        .ok_or_else(|| ApiError::invalid("image", "choose one of the platform's images"))?;
    let disk = validate::disk(&request.disk, Some(&image.size))?;
    let hours = request.valid_hours.unwrap_or(24);
    if !(1..=8760).contains(&hours) {
        return Err(ApiError::invalid("validHours", "use 1 to 8760 hours"));
    }
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_hours(i64::from(hours)))
        .map_err(|error| ApiError::internal("computing an expiry", error))?;
    let name = format!("offer-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let offer = KiteVirtualMachineOffer::new(
        &name,
        KiteVirtualMachineOfferSpec {
            cpu,
            memory,
            disk,
            image: image.name.clone(),
            expires_at: Time(expires),
            created_by: caller.name().to_string(),
        },
    );
    let created = state.offers_write(&user.spec.namespace).create(&offer).await.map_err(|error| match &error {
        kube::Error::Api(status) if status.code == 404 => {
            ApiError::conflict("that user's workspace is still being prepared; try again in a few seconds")
        }
        _ => ApiError::from_kube("creating an offer", error),
    })?;
    Ok((StatusCode::CREATED, Json(OfferEnvelope { offer: OfferView::from(&created) })))
}

/// Withdraws an offer (admins).
#[utoipa::path(delete, path = "/admin/vm-offers/{namespace}/{name}", tag = "admin",
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Message), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete_offer(
    State(state): State<AppState>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> ApiResult<Json<Message>> {
    caller.require(AccessLevel::Admin)?;
    if state.offers.get(&key(Some(&namespace), &name)).is_none() {
        return Err(ApiError::not_found(format!("there is no offer {namespace}/{name}")));
    }
    state
        .offers_write(&namespace)
        .delete(&name)
        .await
        .map_err(|error| ApiError::from_kube("deleting an offer", error))?;
    Ok(Json(Message { message: "the offer was withdrawn".into() }))
}
