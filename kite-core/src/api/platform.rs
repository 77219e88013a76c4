//! `KitePlatform`: the platform's configuration, as desired state.

use super::access_level::AccessLevel;
use super::condition::Condition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The one name a `KitePlatform` may have: the platform is a singleton.
pub const PLATFORM_NAME: &str = "kite";

/// The runtime configuration of a Kite installation.
///
/// Cluster-scoped and a singleton named [`PLATFORM_NAME`]; the schema refuses
/// any other name. It replaces the free-form strings of the existing
/// platform's `kite-runtime-config` ConfigMap with validated fields.
// kube's repeated `printcolumn(type_ = ...)` arguments are not duplicates; clippy reads them as such.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "hy3ons.github.io",
    version = "v1",
    kind = "KitePlatform",
    shortname = "kp",
    category = "kite",
    status = "KitePlatformStatus",
    derive = "PartialEq",
    doc = "The configuration of a Kite installation, as desired state. A singleton named `kite`.",
    validation = Rule::new("self.metadata.name == 'kite'").message("the KitePlatform is a singleton and must be named kite"),
    printcolumn(name = "Domain", type_ = "string", json_path = ".spec.baseDomain"),
    printcolumn(name = "Gateway", type_ = "string", json_path = ".status.sshGateway.phase"),
    printcolumn(name = "Port", type_ = "integer", json_path = ".status.sshGateway.observedExternalPort"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct KitePlatformSpec {
    /// The domain machines are reached under (`<domainPrefix>.<baseDomain>`), and the SSH host users are shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_dns_subdomain")]
    pub base_domain: Option<String>,
    /// How long a sign-in lasts, in minutes.
    #[serde(default = "default_access_token_ttl_minutes")]
    #[schemars(range(min = 1, max = 525600))]
    pub access_token_ttl_minutes: u32,
    /// How long a machine's serial console in the web UI stays open without
    /// input, in seconds (5 s to a day; 15 minutes when absent); it is then
    /// closed (the machine keeps running).
    #[serde(default = "default_console_idle_seconds")]
    #[schemars(range(min = 5, max = 86400))]
    pub console_idle_seconds: u32,
    /// The StorageClass of machine disks and golden images.
    #[serde(default = "default_vm_storage_class_name")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = super::schema::DNS_SUBDOMAIN_PATTERN)
    )]
    pub vm_storage_class_name: String,
    /// The namespace golden images are imported into and cloned from.
    #[serde(default = "default_golden_image_namespace")]
    #[schemars(length(min = 1, max = 63), regex(pattern = super::schema::DNS_LABEL_PATTERN))]
    pub golden_image_namespace: String,
    /// Whether and how the SSH gateway is exposed outside the cluster.
    #[serde(default)]
    pub ssh_gateway: SshGatewaySpec,
    /// The images users may pick; each is imported into `goldenImageNamespace`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub golden_images: Vec<GoldenImage>,
    /// How Kite's StorageClass is made, when Kite manages it.
    #[serde(default)]
    pub storage: StorageSpec,
    /// The network rules of every tenant namespace.
    #[serde(default)]
    pub tenant_network: TenantNetworkSpec,
    /// A ResourceQuota (and optionally a LimitRange) for the namespaces of
    /// users of each access level; a level without an entry gets none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 4))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["accessLevel".into()]))]
    pub tenant_quotas: Vec<TenantQuota>,
    /// Who may sign up on the web page, and how fast.
    #[serde(default)]
    pub signup: super::signup::SignupSpec,
    /// What the SSH gateway records of sessions, for how long, and where.
    #[serde(default)]
    pub session_recording: super::recording::SessionRecordingSpec,
    /// How each machine's web server is reached at `<domainPrefix>.<baseDomain>`.
    #[serde(default)]
    pub machine_domains: super::machine_domains::MachineDomainsSpec,
    /// The Ingress of the web UI and the API, which the controller owns.
    #[serde(default)]
    pub platform_ingress: super::machine_domains::PlatformIngressSpec,
}

fn default_access_token_ttl_minutes() -> u32 {
    60
}

fn default_console_idle_seconds() -> u32 {
    900
}

fn default_vm_storage_class_name() -> String {
    "kite-vm-storage".to_string()
}

fn default_golden_image_namespace() -> String {
    "kite".to_string()
}

impl Default for KitePlatformSpec {
    fn default() -> Self {
        Self {
            base_domain: None,
            access_token_ttl_minutes: default_access_token_ttl_minutes(),
            console_idle_seconds: default_console_idle_seconds(),
            vm_storage_class_name: default_vm_storage_class_name(),
            golden_image_namespace: default_golden_image_namespace(),
            ssh_gateway: SshGatewaySpec::default(),
            golden_images: Vec::new(),
            storage: StorageSpec::default(),
            tenant_network: TenantNetworkSpec::default(),
            tenant_quotas: Vec::new(),
            signup: super::signup::SignupSpec::default(),
            session_recording: super::recording::SessionRecordingSpec::default(),
            machine_domains: super::machine_domains::MachineDomainsSpec::default(),
            platform_ingress: super::machine_domains::PlatformIngressSpec::default(),
        }
    }
}

/// How the SSH gateway is exposed. Kite never touches the host's own sshd or
/// port 22: exposing the gateway is the operator's choice, made here.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SshGatewaySpec {
    /// Whether the gateway gets a `LoadBalancer` Service (`kite-gateway-external`).
    #[serde(default)]
    pub external_enabled: bool,
    /// The port of that Service. Enabled without a port, the gateway reports `Blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_port")]
    pub external_port: Option<u16>,
    /// The port users type, when a router in front forwards another one; defaults to `externalPort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_port")]
    pub public_port: Option<u16>,
    /// Where logins that match no machine go, if anywhere.
    #[serde(default)]
    pub host_fallback: HostFallbackSpec,
}

impl SshGatewaySpec {
    /// The port users should type: `publicPort`, else `externalPort`.
    ///
    /// ```
    /// use kite_core::api::SshGatewaySpec;
    /// let spec = SshGatewaySpec { external_enabled: true, external_port: Some(2222), ..Default::default() };
    /// assert_eq!(spec.effective_public_port(), Some(2222));
    /// ```
    pub fn effective_public_port(&self) -> Option<u16> {
        self.public_port.or(self.external_port)
    }
}

/// A fallback for logins that match no machine, such as the host's own sshd
/// moved to another port. Off unless enabled here.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!self.enabled || has(self.address)").message("hostFallback.address is required when hostFallback is enabled"))]
pub struct HostFallbackSpec {
    /// Whether unmatched logins are passed on to `address`.
    #[serde(default)]
    pub enabled: bool,
    /// `host:port` of the fallback SSH server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = 261), regex(pattern = r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$"))]
    pub address: Option<String>,
}

/// An image users may pick for their machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GoldenImage {
    /// The image's name, which `KiteVirtualMachine.spec.image` refers to (for example `ubuntu-22.04`).
    #[schemars(schema_with = "super::schema::image_name")]
    pub name: String,
    /// Where the image comes from.
    pub source: GoldenImageSource,
    /// The size of the imported disk; machines' disks must be at least this large.
    #[schemars(schema_with = "super::schema::byte_quantity")]
    pub size: Quantity,
}

/// Where a golden image comes from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GoldenImageSource {
    /// A disk image downloaded over HTTP(S), such as an Ubuntu cloud image.
    pub http: HttpSource,
}

/// A disk image at an HTTP(S) address.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HttpSource {
    /// The image's address.
    #[schemars(length(min = 8, max = 2048), regex(pattern = "^https?://[^\\s]+$"))]
    pub url: String,
}

/// How the StorageClass `vmStorageClassName` is made: Longhorn, by default
/// with one replica for single-node clusters.
///
/// StorageClass parameters cannot change after creation. When the live
/// class differs from this, the platform reports `StorageClassDrifted` and
/// names the fields; it recreates the class only when `recreateOnDrift` is
/// set (existing volumes are not touched by that).
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.dataLocality != 'strict-local' || self.numberOfReplicas == 1").message("dataLocality strict-local needs numberOfReplicas 1"))]
pub struct StorageSpec {
    /// Whether Kite creates and watches the class. Off when the operator brings their own.
    #[serde(default = "default_true")]
    pub manage_storage_class: bool,
    /// Longhorn's `numberOfReplicas`: 1 on a single node, where more cannot be placed.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 1, max = 20))]
    pub number_of_replicas: u8,
    /// Longhorn's `diskSelector`: the disk tags volumes may be placed on (comma-separated).
    #[serde(default = "default_disk_selector")]
    #[schemars(length(max = 253), regex(pattern = r"^[a-z0-9._-]*(,[a-z0-9._-]+)*$"))]
    pub disk_selector: String,
    /// Longhorn's `nodeSelector`: the node tags volumes may be placed on (comma-separated); none when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253), regex(pattern = r"^[a-z0-9._-]*(,[a-z0-9._-]+)*$"))]
    pub node_selector: String,
    /// Longhorn's `dataLocality`.
    #[serde(default)]
    pub data_locality: DataLocality,
    /// Whether a drifted class may be deleted and created again as desired.
    #[serde(default)]
    pub recreate_on_drift: bool,
    /// The namespace Longhorn runs in, whose `nodes.longhorn.io` say whether a disk is ready.
    #[serde(default = "default_longhorn_namespace")]
    #[schemars(length(min = 1, max = 63), regex(pattern = super::schema::DNS_LABEL_PATTERN))]
    pub longhorn_namespace: String,
}

fn default_replicas() -> u8 {
    1
}

fn default_disk_selector() -> String {
    "kite".to_string()
}

fn default_longhorn_namespace() -> String {
    "longhorn-system".to_string()
}

impl Default for StorageSpec {
    fn default() -> Self {
        Self {
            manage_storage_class: true,
            number_of_replicas: default_replicas(),
            disk_selector: default_disk_selector(),
            node_selector: String::new(),
            data_locality: DataLocality::default(),
            recreate_on_drift: false,
            longhorn_namespace: default_longhorn_namespace(),
        }
    }
}

/// Longhorn's `dataLocality`: whether a replica is kept on the node that uses the volume.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DataLocality {
    /// No preference.
    #[serde(rename = "disabled")]
    Disabled,
    /// Keep a replica local when possible.
    #[default]
    #[serde(rename = "best-effort")]
    BestEffort,
    /// Only a local replica (needs one replica).
    #[serde(rename = "strict-local")]
    StrictLocal,
}

impl DataLocality {
    /// The parameter's value, as Longhorn spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DataLocality::Disabled => "disabled",
            DataLocality::BestEffort => "best-effort",
            DataLocality::StrictLocal => "strict-local",
        }
    }
}

/// The network rules of tenant namespaces.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TenantNetworkSpec {
    /// The namespace CDI runs in; its upload proxy may reach upload servers in tenant namespaces.
    #[serde(default = "default_cdi_namespace")]
    #[schemars(length(min = 1, max = 63), regex(pattern = super::schema::DNS_LABEL_PATTERN))]
    pub cdi_namespace: String,
    /// The namespace of the cluster DNS (pods labelled `k8s-app: kube-dns`).
    #[serde(default = "default_dns_namespace")]
    #[schemars(length(min = 1, max = 63), regex(pattern = super::schema::DNS_LABEL_PATTERN))]
    pub dns_namespace: String,
    /// The cluster's pod and Service ranges, which machines may not reach
    /// (K3s: `10.42.0.0/16` and `10.43.0.0/16`). Private ranges and the
    /// metadata address are refused in any case.
    #[serde(default = "default_cluster_cidrs")]
    #[schemars(length(max = 16), inner(length(max = 49), regex(pattern = r"^[0-9a-fA-F:.]+/[0-9]{1,3}$")))]
    pub cluster_cidrs: Vec<String>,
    /// Further ranges machines may not reach: for example a public address
    /// of the API server behind a load balancer, or the operator's other hosts.
    #[serde(default)]
    #[schemars(length(max = 32), inner(length(max = 49), regex(pattern = r"^[0-9a-fA-F:.]+/[0-9]{1,3}$")))]
    pub blocked_cidrs: Vec<String>,
    /// Whether the nodes' own addresses (`InternalIP` and `ExternalIP`) and
    /// the API server's (the `kubernetes` Service's endpoints) are blocked
    /// too. The controller reads them from the cluster and follows their
    /// changes: on a node with a public address a machine would otherwise
    /// reach the API server (`:6443`), the kubelet (`:10250`) and NodePorts.
    #[serde(default = "default_true")]
    pub block_host_addresses: bool,
}

fn default_true() -> bool {
    true
}

fn default_cdi_namespace() -> String {
    "cdi".to_string()
}

fn default_dns_namespace() -> String {
    "kube-system".to_string()
}

fn default_cluster_cidrs() -> Vec<String> {
    vec!["10.42.0.0/16".into(), "10.43.0.0/16".into()]
}

impl Default for TenantNetworkSpec {
    fn default() -> Self {
        Self {
            cdi_namespace: default_cdi_namespace(),
            dns_namespace: default_dns_namespace(),
            cluster_cidrs: default_cluster_cidrs(),
            blocked_cidrs: Vec::new(),
            block_host_addresses: true,
        }
    }
}

/// The quota of the namespaces of users of one access level.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TenantQuota {
    /// The access level this quota is for.
    pub access_level: AccessLevel,
    /// The ResourceQuota's `spec.hard`, for example `requests.cpu: "4"`,
    /// `requests.memory: 8Gi`, `count/virtualmachines.kubevirt.io: "2"`.
    #[schemars(length(min = 1, max = 32))]
    pub hard: BTreeMap<String, Quantity>,
    /// Container defaults and maxima, as a LimitRange; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_limits: Option<ContainerLimits>,
}

/// A LimitRange's rule for containers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerLimits {
    /// Limits of containers that set none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub default: BTreeMap<String, Quantity>,
    /// Requests of containers that set none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub default_request: BTreeMap<String, Quantity>,
    /// The most a container may ask for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max: BTreeMap<String, Quantity>,
}

/// What was observed of one golden image's import.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GoldenImageStatus {
    /// The image's name.
    pub name: String,
    /// Whether machines can be cloned from it.
    pub ready: bool,
    /// The import's phase as CDI reports it (for example `ImportInProgress`, `Succeeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The import's progress as CDI reports it (for example `45.20%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// A sentence about the import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The observed state of the [`KitePlatform`].
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KitePlatformStatus {
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Observations, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// What was observed of the gateway's exposure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_gateway: Option<SshGatewayStatus>,
    /// The web UI's address, once the platform's Ingress has an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_url: Option<String>,
    /// What was observed of each golden image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub golden_images: Vec<GoldenImageStatus>,
    /// What is installed, recorded by `kite install` and `kite upgrade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation: Option<super::installation::Installation>,
}

/// The state of the gateway's exposure.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GatewayPhase {
    /// Not exposed, as configured.
    Disabled,
    /// The Service is applied; its load balancer has no address yet.
    Reconciling,
    /// The load balancer reports an address: users can connect.
    Ready,
    /// The configuration cannot be carried out (for example enabled without a port); `reason` says why.
    Blocked,
    /// Applying failed; `message` says why.
    Failed,
}

/// What was observed of the gateway's exposure.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SshGatewayStatus {
    /// The state of the exposure.
    pub phase: GatewayPhase,
    /// A machine-readable CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A sentence for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The port the external Service was observed listening on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_port")]
    pub observed_external_port: Option<u16>,
    /// The name of the external Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_service_name: Option<String>,
    /// When `phase` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}
