//! Whose an object is, and how objects are named: Kite's own objects
//! (labelled by `kite manifests` or its controller, or of its API group),
//! and what Kite applied from a stack component's release.

use serde_json::Value;

/// The label that marks what `kite manifests` made.
const PART_OF: &str = "app.kubernetes.io/part-of";

/// The label on everything Kite applied from a release: the component's id.
pub const STACK_LABEL: &str = "hy3ons.github.io/stack";

/// Whose objects a command may change or delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Kite's own ([`is_kites`]).
    Kite,
    /// What Kite applied from a stack component's release ([`STACK_LABEL`]).
    Stack(kite_core::api::StackName),
}

impl Owner {
    /// Whether `live` is this owner's.
    pub fn owns(self, live: &Value) -> bool {
        match self {
            Owner::Kite => is_kites(live),
            Owner::Stack(name) => live["metadata"]["labels"][STACK_LABEL] == name.id(),
        }
    }

    /// Whose, for people: `Kite's`, `KubeVirt's (installed by kite install)`.
    pub fn possessive(self) -> String {
        match self {
            Owner::Kite => "Kite's".into(),
            Owner::Stack(name) => format!("{}'s as kite install applied it", name.title()),
        }
    }
}

/// Whether a live object is Kite's: labelled by `kite manifests` or by Kite's controller, or of Kite's own API group.
pub fn is_kites(live: &Value) -> bool {
    let group = live["spec"]["group"].as_str();
    let api_version = live["apiVersion"].as_str().unwrap_or_default();
    live["metadata"]["labels"][PART_OF] == "kite"
        || (live["kind"] == "CustomResourceDefinition" && group == Some(kite_core::api::GROUP))
        || api_version.starts_with(&format!("{}/", kite_core::api::GROUP))
        || kite_core::reconcile::apply::is_ours(live)
}

/// `Kind namespace/name` or `Kind name`.
pub fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("object");
    let name = object["metadata"]["name"].as_str().unwrap_or("?");
    format!("{kind} {}", kite_core::key::key(object["metadata"]["namespace"].as_str(), name))
}

/// Just what names an object (`apiVersion`, `kind`, `metadata.name` and `namespace`): for deleting it and waiting for it.
pub fn reference(object: &Value) -> Value {
    let mut metadata = serde_json::json!({ "name": object["metadata"]["name"] });
    if let Some(namespace) = object["metadata"]["namespace"].as_str() {
        metadata["namespace"] = namespace.into();
    }
    serde_json::json!({ "apiVersion": object["apiVersion"], "kind": object["kind"], "metadata": metadata })
}
