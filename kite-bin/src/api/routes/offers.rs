//! `vm-offers`: machines an admin granted, and claiming one.

use super::vms::{Planned, create_machine, envelope, identity};
use crate::api::auth::Caller;
use crate::api::cache::key;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::models::{OfferView, OffersEnvelope, VmEnvelope};
use crate::api::state::{AppState, by};
use crate::api::vm_rules;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use kite_core::api::{KiteVirtualMachineOffer, KiteVirtualMachineSpec, OfferPhase, PLATFORM_NAME, PowerState};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde::Deserialize;
use utoipa::ToSchema;

/// Whether an offer can be claimed now.
pub fn is_open(offer: &KiteVirtualMachineOffer) -> bool {
    offer.phase() == OfferPhase::Available && offer.spec.expires_at.0 > jiff::Timestamp::now()
}

/// Your offers that can still be claimed.
#[utoipa::path(get, path = "/vm-offers", tag = "offers",
    responses((status = 200, body = OffersEnvelope), (status = 401, body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Json<OffersEnvelope> {
    let offers = state.offers.find(by::NAMESPACE, caller.namespace());
    let mut offers: Vec<OfferView> =
        offers.iter().filter(|o| is_open(o)).map(|o| OfferView::from(o.as_ref())).collect();
    offers.sort_by(|a, b| a.name.cmp(&b.name));
    Json(OffersEnvelope { offers })
}

/// What claiming an offer takes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimOffer {
    /// The new machine's name; one is made up when absent.
    pub vm_name: Option<String>,
    /// A DNS label for `<domainPrefix>.<baseDomain>`; unique.
    pub domain_prefix: Option<String>,
    /// The SSH login name; unique.
    pub ssh_id: String,
    /// The machine's SSH password (the existing platform called it `initialLoginPassword`).
    #[serde(alias = "initialLoginPassword")]
    pub ssh_password: String,
    /// Whether it should run; `On` when absent.
    #[schema(value_type = Option<String>)]
    pub power_state: Option<PowerState>,
}

async fn set_phase(
    state: &AppState,
    offer: &KiteVirtualMachineOffer,
    status: serde_json::Value,
    version: Option<&str>,
) -> Result<KiteVirtualMachineOffer, kube::Error> {
    let namespace = offer.metadata.namespace.clone().unwrap_or_default();
    let name = offer.metadata.name.clone().unwrap_or_default();
    let mut patch = serde_json::json!({ "status": status });
    if let Some(version) = version {
        patch["metadata"] = serde_json::json!({ "resourceVersion": version });
    }
    Api::<KiteVirtualMachineOffer>::namespaced(state.client.clone(), &namespace)
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

/// Claims an offer: creates its machine. Of two claims of one offer, one
/// gets a 409; when the machine cannot be made, the offer stays available.
#[utoipa::path(post, path = "/vm-offers/{name}/claim", tag = "offers", request_body = ClaimOffer, params(("name" = String, Path)),
    responses(
        (status = 201, body = VmEnvelope),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Claimed already, expired, or a name is taken", body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
pub async fn claim(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Body(request): Body<ClaimOffer>,
) -> ApiResult<(StatusCode, Json<VmEnvelope>)> {
    let offer = state
        .offers
        .get(&key(Some(caller.namespace()), &name))
        .ok_or_else(|| ApiError::not_found(format!("you have no offer named '{name}'")))?;
    if offer.phase() == OfferPhase::Claimed {
        return Err(ApiError::conflict("this offer has been claimed already"));
    }
    if !is_open(&offer) {
        return Err(ApiError::conflict("this offer has expired"));
    }
    let (vm_name, domain_prefix) =
        identity(request.vm_name.as_deref(), &request.ssh_id, request.domain_prefix.as_deref(), &request.ssh_password)?;
    let platform = state.platform.get(PLATFORM_NAME);
    let (image, image_size) =
        vm_rules::ready_image(Some(&offer.spec.image), &state.platform_spec(), platform.as_deref())?;
    let disk = if kite_core::quantity::bytes(&offer.spec.disk) < kite_core::quantity::bytes(&image_size) {
        image_size
    } else {
        offer.spec.disk.clone()
    };
    let planned = Planned {
        name: vm_name,
        spec: KiteVirtualMachineSpec {
            cpu: offer.spec.cpu,
            memory: offer.spec.memory.clone(),
            disk,
            image,
            power_state: request.power_state.unwrap_or(PowerState::On),
            domain_prefix,
            ssh_id: request.ssh_id.clone(),
            ssh_password_hash: None,
            delete: false,
        },
    };
    let claimed = serde_json::json!({ "phase": "Claimed", "claimedBy": caller.name(), "message": "claimed; the machine is being created" });
    match set_phase(&state, &offer, claimed, offer.metadata.resource_version.as_deref()).await {
        Ok(updated) => state.offers.upsert(updated),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            return Err(ApiError::conflict("this offer was claimed by another request"));
        }
        Err(error) => return Err(ApiError::from_kube("claiming an offer", error)),
    }
    let vm = match create_machine(&state, &caller, planned, request.ssh_password.clone(), None).await {
        Ok(vm) => vm,
        Err(error) => {
            let available = serde_json::json!({ "phase": "Available", "claimedBy": null, "message": null });
            match set_phase(&state, &offer, available, None).await {
                Ok(updated) => state.offers.upsert(updated),
                Err(revert) => {
                    tracing::error!(error = %revert, offer = %name, "could not make a failed claim's offer available again")
                }
            }
            return Err(error);
        }
    };
    let offers = Api::<KiteVirtualMachineOffer>::namespaced(state.client.clone(), caller.namespace());
    if let Err(error) = offers.delete(&name, &DeleteParams::default()).await {
        tracing::warn!(%error, offer = %name, "the offer's machine exists, but the claimed offer could not be deleted");
    }
    Ok((StatusCode::CREATED, Json(envelope(&state, &vm))))
}
