//! What a client sends to create or change a machine.

use kite_core::api::PowerState;
use serde::Deserialize;
use utoipa::ToSchema;

/// A size: a quantity such as `"25Gi"`, or a number of gibibytes.
#[derive(Deserialize, ToSchema, Clone, Debug)]
#[serde(untagged)]
pub enum SizeInput {
    /// Gibibytes.
    Gibibytes(u64),
    /// A quantity such as `25Gi`.
    Quantity(String),
}

impl SizeInput {
    /// The size as a quantity's text (`25` for 25 gibibytes).
    pub fn text(&self) -> String {
        match self {
            SizeInput::Gibibytes(n) => n.to_string(),
            SizeInput::Quantity(q) => q.clone(),
        }
    }
}

/// What creating a machine takes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateVm {
    /// The machine's name; one is made up when absent.
    pub name: Option<String>,
    /// Virtual CPUs (fixed for level-1 users).
    pub cpu: Option<u32>,
    /// Memory (fixed for level-1 users).
    pub memory: Option<SizeInput>,
    /// The golden image; the platform's first when absent.
    pub image: Option<String>,
    /// Disk size, at least 20Gi (fixed for level-1 users).
    pub disk: Option<SizeInput>,
    /// A DNS label for `<domainPrefix>.<baseDomain>`; unique.
    pub domain_prefix: Option<String>,
    /// The SSH login name (`ssh <sshId>@<host>`); unique.
    pub ssh_id: String,
    /// The password the SSH gateway accepts for this machine; stored only as a hash.
    pub ssh_password: String,
    /// Whether it should run; `On` when absent.
    #[schema(value_type = Option<String>, example = "On")]
    pub power_state: Option<PowerState>,
}

/// What may change on a machine.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchVm {
    /// Virtual CPUs.
    pub cpu: Option<u32>,
    /// Memory.
    pub memory: Option<SizeInput>,
    /// Disk size; it can grow, never shrink.
    pub disk: Option<SizeInput>,
    /// A new `domainPrefix`; `""` removes it.
    pub domain_prefix: Option<String>,
    /// A new SSH password.
    pub ssh_password: Option<String>,
    /// `On` or `Off`.
    #[schema(value_type = Option<String>)]
    pub power_state: Option<PowerState>,
    /// Cannot change; present only to say so.
    pub image: Option<String>,
    /// Cannot change; present only to say so.
    pub ssh_id: Option<String>,
}
