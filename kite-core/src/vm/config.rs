//! The VM reconciler's settings ([`Config`]), names and field managers:
//! what every step of the reconciler reads, and which depends on none of them.

use super::gateway_access::GatewayAccount;
use super::keys::{self, KeyGenerator};
use super::written::WrittenStatuses;
use crate::Error;
use crate::api::KiteVirtualMachine;
use crate::required::Required;
use std::sync::Arc;

/// The reconciler's name in metrics and logs.
pub const NAME: &str = "vm";

/// The field manager of the children this reconciler applies.
pub const FIELD_MANAGER: &str = "kite-controller-vm";

/// The field manager of the machines' status.
pub const STATUS_MANAGER: &str = "kite-controller-vm-status";

/// The VM reconciler's configuration.
#[derive(Clone)]
pub struct Config {
    /// Makes the SSH key pairs; [`keys::Ed25519`] outside tests.
    pub keys: Arc<dyn KeyGenerator>,
    /// The SSH gateway's ServiceAccount, granted `get` on each machine's
    /// `<vm>-ssh-key` alone ([`gateway_access`](super::gateway_access)); no grant when `None`
    /// (a gateway that may read those Secrets some other way).
    pub gateway: Option<GatewayAccount>,
    /// The platform namespace, where the platform's certificate Secret is.
    pub platform_namespace: String,
    /// The statuses this reconciler last wrote (kept here; start with the default).
    pub written: WrittenStatuses,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            keys: Arc::new(keys::Ed25519),
            gateway: None,
            platform_namespace: "kite".into(),
            written: WrittenStatuses::default(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config").finish_non_exhaustive()
    }
}

/// The name and namespace of a machine.
pub(super) fn name_of(vm: &KiteVirtualMachine) -> Result<(String, String), Error> {
    Ok((vm.required_name()?.to_string(), vm.required_namespace()?.to_string()))
}
