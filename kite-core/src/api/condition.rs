//! Status conditions, in the standard Kubernetes shape.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition types Kite's reconcilers report.
pub mod condition_types {
    /// On a `KiteUser`: its namespace and network policies are in place.
    pub const NAMESPACE_READY: &str = "NamespaceReady";
    /// On a `KiteVirtualMachine`: the machine runs as asked.
    pub const VIRTUAL_MACHINE_READY: &str = "VirtualMachineReady";
    /// On the `KitePlatform`: the StorageClass exists as desired.
    pub const STORAGE_CLASS_READY: &str = "StorageClassReady";
    /// On the `KitePlatform`: the live StorageClass differs from the desired one in fields that cannot change in place.
    pub const STORAGE_CLASS_DRIFTED: &str = "StorageClassDrifted";
    /// On the `KitePlatform`: a Ready, schedulable Longhorn disk carries the platform's disk tag.
    pub const LONGHORN_READY: &str = "LonghornReady";
    /// On the `KitePlatform`: every golden image is imported and can be cloned.
    pub const GOLDEN_IMAGES_READY: &str = "GoldenImagesReady";
}

/// Whether a condition holds.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// The controller cannot tell yet.
    Unknown,
}

/// One observation about an object, as `metav1.Condition` has it.
///
/// Only `type` and `status` are required, as in the objects the existing
/// platform wrote; Kite's reconcilers always fill in the rest.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// What the condition is about, for example `NamespaceReady`.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 316))]
    pub type_: String,
    /// Whether it holds.
    pub status: ConditionStatus,
    /// A machine-readable CamelCase reason for the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    /// A sentence for people about the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32768))]
    pub message: Option<String>,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub observed_generation: Option<i64>,
    /// When `status` last changed; it does not move while the status stays the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// Puts `new` into `conditions`, replacing the condition of the same type.
///
/// `lastTransitionTime` is kept from the old condition when the status did
/// not change, so that writing the same observation twice is not a
/// transition. Returns whether anything changed at all, so a caller can skip
/// a write that would change nothing.
///
/// ```
/// use kite_core::api::{Condition, ConditionStatus, set_condition};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
///
/// let ready = |at: &str| Condition {
///     type_: "NamespaceReady".into(),
///     status: ConditionStatus::True,
///     reason: Some("Reconciled".into()),
///     message: None,
///     observed_generation: Some(1),
///     last_transition_time: Some(Time(at.parse().unwrap())),
/// };
/// let mut conditions = vec![];
/// assert!(set_condition(&mut conditions, ready("2026-01-01T00:00:00Z")));
/// // The same status again, later: nothing changes, the first time stays.
/// assert!(!set_condition(&mut conditions, ready("2026-01-02T00:00:00Z")));
/// assert_eq!(conditions[0].last_transition_time, Some(Time("2026-01-01T00:00:00Z".parse().unwrap())));
/// ```
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(old) => {
            if old.status == new.status {
                new.last_transition_time = old.last_transition_time.clone().or(new.last_transition_time);
            }
            if *old == new {
                return false;
            }
            *old = new;
            true
        }
        None => {
            conditions.push(new);
            true
        }
    }
}
