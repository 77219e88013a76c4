//! `KiteUser`: a person who may sign in to Kite.

use super::access_level::AccessLevel;
use super::condition::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// A person who may sign in, and the namespace their machines live in.
///
/// Cluster-scoped. The object's name is a stable id (`ku-<uuid>`), never the
/// username, so a username can change without moving anything.
// kube's repeated `printcolumn(type_ = ...)` arguments are not duplicates; clippy reads them as such.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "hy3ons.github.io",
    version = "v1",
    kind = "KiteUser",
    shortname = "ku",
    category = "kite",
    status = "KiteUserStatus",
    derive = "PartialEq",
    doc = "A person who may sign in to Kite, and the namespace their virtual machines live in.",
    printcolumn(name = "User", type_ = "string", json_path = ".spec.username"),
    printcolumn(name = "Namespace", type_ = "string", json_path = ".spec.namespace"),
    printcolumn(name = "Level", type_ = "integer", json_path = ".spec.access_level"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"NamespaceReady\")].status"
    ),
    printcolumn(name = "Message", type_ = "string", json_path = ".status.message", priority = 1)
)]
pub struct KiteUserSpec {
    /// The name the user chose; shown in the UI.
    #[schemars(length(min = 1, max = 63))]
    pub username: String,
    /// The address the user signs in with.
    #[schemars(length(min = 3, max = 254), regex(pattern = r"^[^@\s]+@[^@\s]+$"))]
    pub email: String,
    /// A password hash (argon2id PHC string, or bcrypt from the existing platform); never plain text.
    #[schemars(length(min = 1, max = 512))]
    pub password: String,
    /// The namespace the user's machines live in. Set once; it cannot change afterwards.
    #[schemars(length(min = 1, max = 63), regex(pattern = super::schema::DNS_LABEL_PATTERN))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("namespace cannot be changed once set"))]
    pub namespace: String,
    /// A picture for the user; kept for compatibility, the platform writes `""`.
    #[serde(default)]
    #[schemars(length(max = 2048))]
    pub profile_image: String,
    /// What the user may do: `0` read-only, `1` user, `2` manager, `3` admin.
    #[serde(default)]
    pub access_level: AccessLevel,
    /// OpenSSH public key lines (`ssh-ed25519 AAAA... comment`) for key login through the gateway.
    #[serde(rename = "sshAuthorizedKeys", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 32),
        inner(
            length(max = 16384),
            regex(
                pattern = r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$"
            )
        )
    )]
    pub ssh_authorized_keys: Vec<String>,
    /// Sessions carry the generation they were signed in under; "sign out
    /// everywhere" and a password change raise it, and every session of an
    /// older generation is refused from then on. It only grows.
    #[serde(rename = "sessionGeneration", default)]
    #[x_kube(validation = Rule::new("self >= oldSelf").message("sessionGeneration only grows: lowering it would bring signed-out sessions back"))]
    pub session_generation: u32,
}

/// What the tenant reconciler observed of a user.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum UserPhase {
    /// Not reconciled yet.
    Pending,
    /// The namespace and its policies are in place.
    Ready,
    /// Reconciling failed; `message` says why.
    Failed,
}

/// The observed state of a [`KiteUser`].
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct KiteUserStatus {
    /// The summary of the conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<UserPhase>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The namespace the reconciler last put in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_namespace: Option<String>,
    /// A sentence for people about the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Observations, one per type (`NamespaceReady`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}
