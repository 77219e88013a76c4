//! `KiteVirtualMachine`: a virtual machine a user asked for.

use super::condition::Condition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A virtual machine a user asked for, reached with `ssh <sshId>@<host>`.
///
/// The controller turns it into a DataVolume cloned from a golden image, a
/// KubeVirt VirtualMachine, the Secrets they need and a Service for SSH.
// kube's repeated `printcolumn(type_ = ...)` arguments are not duplicates; clippy reads them as such.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "hy3ons.github.io",
    version = "v1",
    kind = "KiteVirtualMachine",
    namespaced,
    shortname = "ktvm",
    category = "kite",
    status = "KiteVirtualMachineStatus",
    derive = "PartialEq",
    doc = "A virtual machine a Kite user asked for, reached over SSH through the Kite gateway.",
    printcolumn(name = "Status", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "CPU", type_ = "integer", json_path = ".spec.cpu"),
    printcolumn(name = "MEM", type_ = "string", json_path = ".spec.memory"),
    printcolumn(name = "IMAGE", type_ = "string", json_path = ".spec.image"),
    printcolumn(name = "SSH ID", type_ = "string", json_path = ".spec.sshId"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct KiteVirtualMachineSpec {
    /// Virtual CPUs, at least 1.
    #[schemars(range(min = 1, max = 1024))]
    pub cpu: u32,
    /// Guest memory, a Kubernetes quantity such as `4Gi`.
    #[schemars(schema_with = "super::schema::byte_quantity")]
    pub memory: Quantity,
    /// Root disk size, a Kubernetes quantity such as `25Gi`; it may grow but never shrink.
    #[schemars(schema_with = "super::schema::byte_quantity")]
    #[x_kube(validation = Rule::new("quantity(self).compareTo(quantity(oldSelf)) >= 0").message("disk can grow but cannot shrink"))]
    pub disk: Quantity,
    /// The golden image the disk is cloned from, one of `KitePlatform.spec.goldenImages`. Cannot change.
    #[schemars(schema_with = "super::schema::image_name")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("image cannot be changed; create a new virtual machine instead"))]
    pub image: String,
    /// Whether the machine should run.
    #[serde(default)]
    pub power_state: PowerState,
    /// The DNS label in front of `KitePlatform.spec.baseDomain` for this machine, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_dns_label")]
    pub domain_prefix: Option<String>,
    /// The SSH login name that routes to this machine (`ssh <sshId>@<host>`). Cannot change.
    #[schemars(length(min = 1, max = 32), regex(pattern = crate::ssh_id::SSH_ID_PATTERN))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("sshId cannot be changed; create a new virtual machine instead"))]
    #[x_kube(validation = Rule::new(crate::ssh_id::RESERVED_RULE).message(crate::ssh_id::RESERVED_MESSAGE))]
    pub ssh_id: String,
    /// The hash (argon2id, or bcrypt from the existing platform) of the password the gateway accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub ssh_password_hash: Option<String>,
    /// The same password as SHA-512-crypt (`$6$…`), which the guest's
    /// console login checks (its `crypt(3)` cannot check argon2id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 20, max = 256), regex(pattern = r"^\$6\$"))]
    pub console_password_hash: Option<String>,
    /// Delete intent: once `true`, the controller removes the machine and then this object.
    #[serde(default)]
    #[x_kube(validation = Rule::new("self || !oldSelf").message("a delete request cannot be withdrawn"))]
    pub delete: bool,
}

/// Whether a machine should run (`spec.powerState`) or runs (`status.currentPowerState`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PowerState {
    /// Running.
    On,
    /// Stopped. The default: a machine runs only when asked to.
    #[default]
    Off,
}

/// Where a machine is in its life, as the controller observed it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VirtualMachinePhase {
    /// Accepted, nothing created yet.
    Pending,
    /// The disk is being cloned or the machine being created.
    Provisioning,
    /// The machine is booting.
    Starting,
    /// The machine runs.
    Running,
    /// The machine is shutting down.
    Stopping,
    /// The machine is stopped, as asked.
    Stopped,
    /// Written by the existing platform for a machine with no running strategy; kept so its objects still read.
    Ready,
    /// The machine and its children are being removed.
    Deleting,
    /// Something failed; `conditions` and the DataVolume fields say what.
    Failed,
    /// A phase this version of Kite does not know.
    #[serde(other)]
    Unknown,
}

/// The observed state of a [`KiteVirtualMachine`].
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct KiteVirtualMachineStatus {
    /// The summary of what was observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<VirtualMachinePhase>,
    /// Whether the machine was observed running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_power_state: Option<PowerState>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `<domainPrefix>.<baseDomain>`, when both are set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The machine's web address (`http://` or `https://` and the domain),
    /// once its Ingress has an address: only then does it answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The node the machine runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The Secret with the gateway's login key and the VM's host key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key_secret_name: Option<String>,
    /// The Secret with the cloud-init user data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_init_secret_name: Option<String>,
    /// The ClusterIP Service the gateway connects to on port 22.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// The DataVolume of the root disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_volume_name: Option<String>,
    /// The DataVolume's phase as CDI reports it (for example `CloneInProgress`, `Succeeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_volume_phase: Option<String>,
    /// The DataVolume's progress as CDI reports it (for example `45.20%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_volume_progress: Option<String>,
    /// The DataVolume's latest message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_volume_message: Option<String>,
    /// Observations, one per type (`VirtualMachineReady`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}
