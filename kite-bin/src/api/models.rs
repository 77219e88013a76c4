//! The JSON the API answers with. Field names follow the existing
//! platform's API (`access_level`, `sshId`, `dataVolumeProgress`...) so its
//! clients keep working.

use kite_core::api::{
    GatewayPhase, KitePlatform, KitePlatformSpec, KiteUser, KiteVirtualMachine, KiteVirtualMachineOffer, OfferPhase,
    PowerState, VirtualMachinePhase,
};
use serde::Serialize;
use utoipa::ToSchema;

/// A user, as anyone allowed to see them may: never the password hash.
#[derive(Serialize, ToSchema, Debug, Clone)]
pub struct PublicUser {
    /// The stable id (`ku-<uuid>`).
    pub name: String,
    /// The chosen name.
    pub username: String,
    /// The sign-in address.
    pub email: String,
    /// Where the user's machines live.
    pub namespace: String,
    /// Kept for the existing platform's clients; always `""`.
    pub profile_image: String,
    /// `0` read-only, `1` user, `2` manager, `3` admin.
    #[schema(minimum = 0, maximum = 3)]
    pub access_level: u8,
    /// Whether the user's namespace is in place.
    pub ready: bool,
}

impl From<&KiteUser> for PublicUser {
    fn from(user: &KiteUser) -> Self {
        Self {
            name: user.metadata.name.clone().unwrap_or_default(),
            username: user.spec.username.clone(),
            email: user.spec.email.clone(),
            namespace: user.spec.namespace.clone(),
            profile_image: String::new(),
            access_level: user.spec.access_level.as_u8(),
            ready: user.status.as_ref().and_then(|s| s.phase) == Some(kite_core::api::UserPhase::Ready),
        }
    }
}

/// `{"user": ...}`.
#[derive(Serialize, ToSchema)]
pub struct UserEnvelope {
    /// The user.
    pub user: PublicUser,
}

/// `{"users": [...]}`.
#[derive(Serialize, ToSchema)]
pub struct UsersEnvelope {
    /// The users.
    pub users: Vec<PublicUser>,
}

/// How to reach a machine over SSH, from the gateway's observed state.
#[derive(Serialize, ToSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// Whether the command below works now.
    pub available: bool,
    /// The host users connect to (the base domain).
    pub host: Option<String>,
    /// The port users connect to.
    pub port: Option<u16>,
    /// The exact command: `ssh [-p PORT] <sshId>@<host>`.
    pub command: Option<String>,
    /// An `~/.ssh/config` block.
    pub ssh_config: Option<String>,
    /// Why it is not available, in a sentence; or a note when it is.
    pub explanation: String,
}

/// A virtual machine, as its owner sees it.
#[derive(Serialize, ToSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct VmView {
    /// `<namespace>/<name>`.
    pub id: String,
    /// The machine's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The namespace of its owner (the same as `namespace`).
    pub owner: String,
    /// `<domainPrefix>.<baseDomain>`, when both are set.
    pub domain: Option<String>,
    /// The machine's web address, once its domain is served (its Ingress has an address).
    pub url: Option<String>,
    /// What the controller observed; `Creating` until it has looked.
    pub phase: String,
    /// Whether the machine should run.
    #[schema(value_type = String, example = "On")]
    pub power_state: PowerState,
    /// Whether it was observed running.
    #[schema(value_type = Option<String>)]
    pub current_power_state: Option<PowerState>,
    /// Virtual CPUs.
    pub cpu: u32,
    /// Memory, such as `4Gi`.
    pub memory: String,
    /// The golden image.
    pub image: String,
    /// Disk size, such as `25Gi`.
    pub disk: String,
    /// The DNS label in front of the base domain.
    pub domain_prefix: Option<String>,
    /// The SSH login name.
    pub ssh_id: String,
    /// Whether deletion was asked for.
    pub delete: bool,
    /// The disk import's phase.
    pub data_volume_phase: Option<String>,
    /// The disk import's progress, such as `45.20%`.
    pub data_volume_progress: Option<String>,
    /// The disk import's latest message.
    pub data_volume_message: Option<String>,
    /// A sentence about the machine's state.
    pub message: Option<String>,
    /// When it was created (RFC 3339).
    pub created_at: Option<String>,
}

fn phase_text(phase: Option<VirtualMachinePhase>) -> String {
    match phase {
        None => "Creating".into(),
        Some(phase) => serde_json::to_value(phase)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "Unknown".into()),
    }
}

impl From<&KiteVirtualMachine> for VmView {
    fn from(vm: &KiteVirtualMachine) -> Self {
        let namespace = vm.metadata.namespace.clone().unwrap_or_default();
        let name = vm.metadata.name.clone().unwrap_or_default();
        let status = vm.status.clone().unwrap_or_default();
        let message = status
            .conditions
            .iter()
            .find(|c| c.type_ == kite_core::api::condition_types::VIRTUAL_MACHINE_READY)
            .and_then(|c| c.message.clone())
            .filter(|m| !m.is_empty());
        Self {
            id: format!("{namespace}/{name}"),
            owner: namespace.clone(),
            namespace,
            name,
            domain: status.domain,
            url: status.url,
            phase: if vm.spec.delete && status.phase.is_none() { "Deleting".into() } else { phase_text(status.phase) },
            power_state: vm.spec.power_state,
            current_power_state: status.current_power_state,
            cpu: vm.spec.cpu,
            memory: vm.spec.memory.0.clone(),
            image: vm.spec.image.clone(),
            disk: vm.spec.disk.0.clone(),
            domain_prefix: vm.spec.domain_prefix.clone(),
            ssh_id: vm.spec.ssh_id.clone(),
            delete: vm.spec.delete,
            data_volume_phase: status.data_volume_phase,
            data_volume_progress: status.data_volume_progress,
            data_volume_message: status.data_volume_message,
            message,
            created_at: vm.metadata.creation_timestamp.as_ref().map(|t| t.0.to_string()),
        }
    }
}

/// One machine and how to reach it.
#[derive(Serialize, ToSchema)]
pub struct VmEnvelope {
    /// The machine.
    pub vm: VmView,
    /// How to reach it over SSH.
    pub connection: Connection,
}

/// `{"vms": [...]}`.
#[derive(Serialize, ToSchema)]
pub struct VmsEnvelope {
    /// The machines.
    pub vms: Vec<VmView>,
}

/// An answer with a sentence and the machine it is about.
#[derive(Serialize, ToSchema)]
pub struct VmMessage {
    /// What happened.
    pub message: String,
    /// The machine.
    pub vm: VmView,
}

/// A sentence.
#[derive(Serialize, ToSchema)]
pub struct Message {
    /// What happened.
    pub message: String,
}

/// An offer: a machine of a fixed size an admin granted.
#[derive(Serialize, ToSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct OfferView {
    /// The offer's uid.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The namespace of the user it was given to.
    pub namespace: String,
    /// Virtual CPUs.
    pub cpu: u32,
    /// Memory.
    pub memory: String,
    /// Disk size.
    pub disk: String,
    /// Golden image.
    pub image: String,
    /// When it lapses (RFC 3339).
    pub expires_at: String,
    /// Who made it.
    pub created_by: String,
    /// `Available` or `Claimed`.
    pub phase: String,
    /// Who claimed it.
    pub claimed_by: Option<String>,
    /// A sentence about it.
    pub message: Option<String>,
}

impl From<&KiteVirtualMachineOffer> for OfferView {
    fn from(offer: &KiteVirtualMachineOffer) -> Self {
        let status = offer.status.clone().unwrap_or_default();
        Self {
            id: offer.metadata.uid.clone().unwrap_or_default(),
            name: offer.metadata.name.clone().unwrap_or_default(),
            namespace: offer.metadata.namespace.clone().unwrap_or_default(),
            cpu: offer.spec.cpu,
            memory: offer.spec.memory.0.clone(),
            disk: offer.spec.disk.0.clone(),
            image: offer.spec.image.clone(),
            expires_at: offer.spec.expires_at.0.to_string(),
            created_by: offer.spec.created_by.clone(),
            phase: match offer.phase() {
                OfferPhase::Available => "Available".into(),
                OfferPhase::Claimed => "Claimed".into(),
            },
            claimed_by: status.claimed_by,
            message: status.message,
        }
    }
}

/// `{"offers": [...]}`.
#[derive(Serialize, ToSchema)]
pub struct OffersEnvelope {
    /// The offers.
    pub offers: Vec<OfferView>,
}

/// `{"offer": ...}`.
#[derive(Serialize, ToSchema)]
pub struct OfferEnvelope {
    /// The offer.
    pub offer: OfferView,
}

/// A golden image and whether machines can be made from it.
#[derive(Serialize, ToSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ImageView {
    /// Its name (what `image` takes).
    pub name: String,
    /// Whether its import finished.
    pub ready: bool,
    /// The import's progress.
    pub progress: Option<String>,
    /// Its size: the smallest disk a machine of it can have.
    pub size: String,
}

/// The SSH gateway, as users need it.
#[derive(Serialize, ToSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct GatewayView {
    /// Whether the operator chose to expose it.
    pub external_enabled: bool,
    /// The port of its Service.
    pub external_port: Option<u16>,
    /// The port users connect to.
    pub public_port: Option<u16>,
    /// `Disabled`, `Reconciling`, `Ready`, `Blocked` or `Failed`, as observed.
    pub phase: String,
    /// Why, in CamelCase.
    pub reason: Option<String>,
    /// A sentence about its state.
    pub message: Option<String>,
    /// The port the external Service was observed on.
    pub observed_external_port: Option<u16>,
    /// When the phase last changed (RFC 3339).
    pub last_transition_time: Option<String>,
}

impl GatewayView {
    /// The gateway's desired and observed state from the platform object.
    pub fn of(spec: &KitePlatformSpec, platform: Option<&KitePlatform>) -> Self {
        let status = platform.and_then(|p| p.status.as_ref()).and_then(|s| s.ssh_gateway.clone());
        let phase = status.as_ref().map_or(
            if spec.ssh_gateway.external_enabled { GatewayPhase::Reconciling } else { GatewayPhase::Disabled },
            |s| s.phase,
        );
        Self {
            external_enabled: spec.ssh_gateway.external_enabled,
            external_port: spec.ssh_gateway.external_port,
            public_port: spec.ssh_gateway.public_port.or(spec.ssh_gateway.external_port),
            phase: format!("{phase:?}"),
            reason: status.as_ref().and_then(|s| s.reason.clone()),
            message: status.as_ref().and_then(|s| s.message.clone()),
            observed_external_port: status.as_ref().and_then(|s| s.observed_external_port),
            last_transition_time: status.and_then(|s| s.last_transition_time).map(|t| t.0.to_string()),
        }
    }
}

/// What anyone may read of the platform's settings.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicConfig {
    /// The domain machines are reached under.
    pub base_domain: Option<String>,
    /// The SSH gateway.
    pub ssh_gateway: GatewayView,
    /// The golden images.
    pub images: Vec<ImageView>,
    /// The smallest disk a machine may have.
    pub min_disk: String,
    /// What a level-1 user's machines are.
    pub user_level_machine: FixedSize,
    /// How many active machines a level-1 user may have.
    pub user_level_max_machines: u32,
    /// Names `domainPrefix` may not take.
    pub reserved_domain_prefixes: Vec<String>,
}

/// A fixed machine size.
#[derive(Serialize, ToSchema)]
pub struct FixedSize {
    /// Virtual CPUs.
    pub cpu: u32,
    /// Memory.
    pub memory: String,
    /// Disk.
    pub disk: String,
}

/// `{"config": ...}`.
#[derive(Serialize, ToSchema)]
pub struct ConfigEnvelope {
    /// The settings.
    pub config: PublicConfig,
}
