//! `KiteVirtualMachineOffer`: a VM voucher an admin gave a user.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A voucher for one virtual machine of a fixed size, placed by an admin in a
/// user's namespace. Claiming it creates the machine.
// kube's repeated `printcolumn(type_ = ...)` arguments are not duplicates; clippy reads them as such.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "hy3ons.github.io",
    version = "v1",
    kind = "KiteVirtualMachineOffer",
    namespaced,
    shortname = "ktvmo",
    category = "kite",
    status = "KiteVirtualMachineOfferStatus",
    derive = "PartialEq",
    doc = "A voucher for one virtual machine of a fixed size, given by a Kite admin to a user.",
    printcolumn(name = "CPU", type_ = "integer", json_path = ".spec.cpu"),
    printcolumn(name = "MEM", type_ = "string", json_path = ".spec.memory"),
    printcolumn(name = "DISK", type_ = "string", json_path = ".spec.disk"),
    // The time itself: a `date` column prints an age, and a time still to come has none (`<invalid>`).
    printcolumn(name = "EXPIRES", type_ = "string", json_path = ".spec.expiresAt"),
    printcolumn(name = "PHASE", type_ = "string", json_path = ".status.phase")
)]
#[serde(rename_all = "camelCase")]
pub struct KiteVirtualMachineOfferSpec {
    /// Virtual CPUs of the machine it grants, at least 1.
    #[schemars(range(min = 1, max = 1024))]
    pub cpu: u32,
    /// Guest memory, a Kubernetes quantity such as `4Gi`.
    #[schemars(schema_with = "super::schema::byte_quantity")]
    pub memory: Quantity,
    /// Root disk size, a Kubernetes quantity such as `25Gi`.
    #[schemars(schema_with = "super::schema::byte_quantity")]
    pub disk: Quantity,
    /// The golden image of the machine.
    #[schemars(schema_with = "super::schema::image_name")]
    pub image: String,
    /// When the offer lapses (RFC 3339).
    pub expires_at: Time,
    /// Who made the offer (a `KiteUser` name).
    #[schemars(length(min = 1, max = 253))]
    pub created_by: String,
}

/// Whether an offer can still be claimed.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OfferPhase {
    /// It can be claimed. An offer with no status is available too.
    #[default]
    Available,
    /// It has been claimed; `claimedBy` says by whom.
    Claimed,
}

/// The observed state of a [`KiteVirtualMachineOffer`].
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KiteVirtualMachineOfferStatus {
    /// Available or Claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<OfferPhase>,
    /// The user who claimed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// A sentence for people about the offer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl KiteVirtualMachineOffer {
    /// The offer's phase; an offer with no status yet is [`OfferPhase::Available`].
    pub fn phase(&self) -> OfferPhase {
        self.status.as_ref().and_then(|s| s.phase).unwrap_or_default()
    }
}
