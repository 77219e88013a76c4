//! The offer service: when an offer can be claimed, and claiming it (its
//! machine is created through [`machines`]).

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::machines::plan::{Planned, Size};
use crate::api::machines::{self, rules};
use crate::api::state::AppState;
use kite_core::api::{
    KitePlatform, KitePlatformSpec, KiteVirtualMachine, KiteVirtualMachineOffer, OfferPhase, PLATFORM_NAME, PowerState,
};
use kite_core::key::key;
use kite_core::required::Required;
use serde::Deserialize;
use std::sync::Arc;
use utoipa::ToSchema;

/// Whether an offer can be claimed now.
pub fn is_open(offer: &KiteVirtualMachineOffer) -> bool {
    offer.phase() == OfferPhase::Available && offer.spec.expires_at.0 > jiff::Timestamp::now()
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

/// The caller's offer `name`, from the cache.
pub fn own(state: &AppState, caller: &Caller, name: &str) -> ApiResult<Arc<KiteVirtualMachineOffer>> {
    state
        .offers
        .get(&key(Some(caller.namespace()), name))
        .ok_or_else(|| ApiError::not_found(format!("you have no offer named '{name}'")))
}

/// The machine claiming `offer` with `request` makes: the offer's size (the
/// disk at least the image's), the request's names. Pure.
pub fn plan(
    offer: &KiteVirtualMachineOffer,
    request: &ClaimOffer,
    spec: &KitePlatformSpec,
    platform: Option<&KitePlatform>,
) -> ApiResult<Planned> {
    if offer.phase() == OfferPhase::Claimed {
        return Err(ApiError::conflict("this offer has been claimed already"));
    }
    if !is_open(offer) {
        return Err(ApiError::conflict("this offer has expired"));
    }
    let identity = machines::plan::identity(
        request.vm_name.as_deref(),
        &request.ssh_id,
        request.domain_prefix.as_deref(),
        &request.ssh_password,
    )?;
    let (image, image_size) = rules::ready_image(Some(&offer.spec.image), spec, platform)?;
    let disk = if kite_core::quantity::bytes(&offer.spec.disk) < kite_core::quantity::bytes(&image_size) {
        image_size
    } else {
        offer.spec.disk.clone()
    };
    let size = Size { cpu: offer.spec.cpu, memory: offer.spec.memory.clone(), disk };
    Ok(Planned::new(identity, &request.ssh_id, image, size, request.power_state))
}

async fn set_phase(
    state: &AppState,
    offer: &KiteVirtualMachineOffer,
    status: serde_json::Value,
    version: Option<&str>,
) -> ApiResult<Result<KiteVirtualMachineOffer, kube::Error>> {
    let (namespace, name) = (offer.required_namespace()?, offer.required_name()?);
    let mut patch = serde_json::json!({ "status": status });
    if let Some(version) = version {
        patch["metadata"] = serde_json::json!({ "resourceVersion": version });
    }
    Ok(state.offers_write(namespace).merge_patch_status(name, &patch).await)
}

/// Claims `offer`: marks it claimed (of two claims, one gets a 409),
/// creates its machine, then deletes the offer. When the machine cannot be
/// made, the offer is made available again.
pub async fn claim(
    state: &AppState,
    caller: &Caller,
    offer: &KiteVirtualMachineOffer,
    request: ClaimOffer,
) -> ApiResult<KiteVirtualMachine> {
    let platform = state.platform.get(PLATFORM_NAME);
    let planned = plan(offer, &request, &state.platform_spec(), platform.as_deref())?;
    let name = offer.required_name()?;
    let claimed = serde_json::json!({ "phase": "Claimed", "claimedBy": caller.name(), "message": "claimed; the machine is being created" });
    match set_phase(state, offer, claimed, offer.metadata.resource_version.as_deref()).await? {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {
            return Err(ApiError::conflict("this offer was claimed by another request"));
        }
        Err(error) => return Err(ApiError::from_kube("claiming an offer", error)),
    }
    let vm = match machines::create(state, caller, planned, request.ssh_password, None).await {
        Ok(vm) => vm,
        Err(error) => {
            let available = serde_json::json!({ "phase": "Available", "claimedBy": null, "message": null });
            match set_phase(state, offer, available, None).await? {
                Ok(_) => {}
                Err(revert) => {
                    tracing::error!(error = %revert, offer = %name, "could not make a failed claim's offer available again")
                }
            }
            return Err(error);
        }
    };
    if let Err(error) = state.offers_write(caller.namespace()).delete(name).await {
        tracing::warn!(%error, offer = %name, "the offer's machine exists, but the claimed offer could not be deleted");
    }
    Ok(vm)
}
