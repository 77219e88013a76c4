//! What the workload controllers share about pods and their owners: a pod
//! of an owner's template, who controls an object, how many replicas it
//! wants, whether a pod is ready or on its way out, and writing an owner's status.

use crate::sim::object_fields::{name_of, namespace_of, owner_reference};
use crate::sim::store_io::write;
use crate::state::Inner;
use serde_json::Value;
use std::sync::Arc;

/// A pod of `owner`'s template, named `name` and controlled by `owner`
/// (`api_version` `kind`), for the caller to finish and create.
pub(super) fn pod_of(owner: &Value, api_version: &str, kind: &str, name: String) -> Value {
    let template = &owner["spec"]["template"];
    let mut metadata = template["metadata"].clone();
    if !metadata.is_object() {
        metadata = serde_json::json!({});
    }
    metadata["name"] = serde_json::json!(name);
    metadata["ownerReferences"] = serde_json::json!([owner_reference(owner, api_version, kind)]);
    serde_json::json!({ "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"] })
}

/// Writes `status` into `object` (of `api`) as `manager`, when it changed.
pub(super) fn report(inner: &Arc<Inner>, manager: &str, api: (&str, &str, &str), object: &Value, status: Value) {
    if object["status"] != status {
        let (namespace, name) = (namespace_of(object), name_of(object));
        write(inner, manager, api, namespace, Some(name), serde_json::json!({ "status": status }), true);
    }
}

/// Whether `object` is controlled by `owner` (a controller owner reference to its uid).
pub(super) fn controlled_by(object: &Value, owner: &Value) -> bool {
    object["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == owner["metadata"]["uid"] && r["controller"] == true))
}

/// `spec.replicas`, 1 when unset (the API server's default).
pub(super) fn desired_replicas(object: &Value) -> i64 {
    object["spec"]["replicas"].as_i64().unwrap_or(1)
}

/// Whether a pod is `Ready`.
pub(super) fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Whether a pod is on its way out.
pub(super) fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}
