//! What `kite install` and `kite upgrade` record in the `KitePlatform`'s
//! status: which Kite is running, from which image, with which stack, when
//! and by whom.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The operation that recorded an [`Installation`].
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallOperation {
    /// `kite install`.
    Install,
    /// `kite upgrade`.
    Upgrade,
}

/// What is installed, as the last install or upgrade that completed recorded it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Installation {
    /// The operation that completed.
    pub operation: InstallOperation,
    /// The version of the `kite` binary that ran it, which is the version of the manifests it applied.
    pub kite_version: String,
    /// The image the Deployments run, as given (`REF@sha256:…` or `REF:TAG`).
    pub image: String,
    /// The image's digest when the reference pins one (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    /// Who ran it: the user the API server authenticated.
    pub installed_by: String,
    /// When it completed.
    pub completed_at: Time,
    /// KubeVirt, CDI and Longhorn as observed when it completed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<StackComponent>,
}

/// A component of the stack Kite runs on.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum StackName {
    /// KubeVirt (`kubevirt`).
    KubeVirt,
    /// CDI, the Containerized Data Importer (`cdi`).
    Cdi,
    /// Longhorn (`longhorn`).
    Longhorn,
}

impl StackName {
    /// The three, in the order they are installed.
    pub const ALL: [StackName; 3] = [StackName::Longhorn, StackName::KubeVirt, StackName::Cdi];

    /// The name people know it by: `KubeVirt`, `CDI`, `Longhorn`.
    pub fn title(self) -> &'static str {
        match self {
            StackName::KubeVirt => "KubeVirt",
            StackName::Cdi => "CDI",
            StackName::Longhorn => "Longhorn",
        }
    }

    /// The name in records and labels: `kubevirt`, `cdi`, `longhorn`.
    pub fn id(self) -> &'static str {
        match self {
            StackName::KubeVirt => "kubevirt",
            StackName::Cdi => "cdi",
            StackName::Longhorn => "longhorn",
        }
    }
}

/// One component of the stack Kite runs on.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StackComponent {
    /// Which component.
    pub name: StackName,
    /// The version the component reports, when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The release files Kite applied, with their SHA-256; empty when Kite did not install it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<ReleaseFile>,
    /// Whether Kite installed it (`false`: it was there, and `--skip-stack` checked its APIs).
    pub installed_by_kite: bool,
}

/// A release file Kite applied.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseFile {
    /// Its name, as the upstream release names it (`kubevirt-operator.yaml`).
    pub file: String,
    /// The SHA-256 of its bytes, in hex.
    pub sha256: String,
    /// Whether the hash matched the one this version of Kite pins for that release
    /// (`false`: the operator vouched for it with `--allow-unpinned`).
    pub pinned: bool,
}
