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

/// One component of the stack Kite runs on.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StackComponent {
    /// `kubevirt`, `cdi` or `longhorn`.
    pub name: String,
    /// The version the component reports, when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The SHA-256 of the release manifest Kite applied; absent when Kite did not install it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_sha256: Option<String>,
    /// Whether Kite installed it (`false`: it was there, and `--skip-stack` checked its APIs).
    pub installed_by_kite: bool,
}
