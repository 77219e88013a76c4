//! The Kite custom resources (group `hy3ons.github.io`, version `v1`).
//!
//! Field names match the objects the existing Kite platform writes, so that
//! they keep working: fields are only ever added, never renamed.

mod access_level;
mod condition;
mod installation;
mod machine_domains;
mod offer;
mod platform;
mod recording;
mod schema;
mod signup;
mod user;
mod virtual_machine;

pub use access_level::AccessLevel;
pub use condition::{Condition, ConditionStatus, condition_types, set_condition};
pub use installation::{InstallOperation, Installation, ReleaseFile, StackComponent, StackName};
pub use machine_domains::{MachineDomainsSpec, MachineTls, PlatformIngressSpec};
pub use offer::{KiteVirtualMachineOffer, KiteVirtualMachineOfferSpec, KiteVirtualMachineOfferStatus, OfferPhase};
pub use platform::{
    ContainerLimits, DataLocality, GatewayPhase, GoldenImage, GoldenImageSource, GoldenImageStatus, HostFallbackSpec,
    HttpSource, KitePlatform, KitePlatformSpec, KitePlatformStatus, PLATFORM_NAME, SshGatewaySpec, SshGatewayStatus,
    StorageSpec, TenantNetworkSpec, TenantQuota,
};
pub use recording::{RecordMode, S3StoreSpec, SessionRecordingSpec, s3_credentials};
pub use schema::{DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, QUANTITY_PATTERN};
pub use signup::{SignupMode, SignupSpec};
pub use user::{KiteUser, KiteUserSpec, KiteUserStatus, UserPhase};
pub use virtual_machine::{
    KiteVirtualMachine, KiteVirtualMachineSpec, KiteVirtualMachineStatus, PowerState, VirtualMachinePhase,
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The API group of every Kite resource.
pub const GROUP: &str = "hy3ons.github.io";

/// The API version of every Kite resource.
pub const VERSION: &str = "v1";

/// The `apiVersion` string of every Kite resource (`hy3ons.github.io/v1`).
pub const API_VERSION: &str = "hy3ons.github.io/v1";

/// The four Kite CustomResourceDefinitions, in a stable order.
///
/// ```
/// let names: Vec<String> = kite_core::api::crds()
///     .into_iter()
///     .filter_map(|crd| crd.metadata.name)
///     .collect();
/// assert_eq!(names, [
///     "kiteusers.hy3ons.github.io",
///     "kitevirtualmachines.hy3ons.github.io",
///     "kitevirtualmachineoffers.hy3ons.github.io",
///     "kiteplatforms.hy3ons.github.io",
/// ]);
/// ```
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![KiteUser::crd(), KiteVirtualMachine::crd(), KiteVirtualMachineOffer::crd(), KitePlatform::crd()]
}
