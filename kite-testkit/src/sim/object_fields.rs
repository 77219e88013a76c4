//! The parts of an object a simulated controller reads and writes: its name
//! and namespace, a controller owner reference to it, and a condition in the
//! upstream shape.

use serde_json::{Value, json};

/// A condition in the upstream shape, keeping `lastTransitionTime` while the status stays.
pub(crate) fn condition(
    previous: &Value,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    extra: &[(&str, Value)],
) -> Value {
    let status_text = if status { "True" } else { "False" };
    let old = previous.as_array().and_then(|c| c.iter().find(|c| c["type"] == type_));
    let since = match old {
        Some(old) if old["status"] == status_text => old["lastTransitionTime"].clone(),
        _ => json!(crate::meta::now()),
    };
    let mut condition = json!({"type": type_, "status": status_text, "reason": reason, "message": message, "lastTransitionTime": since});
    for (key, value) in extra {
        condition[*key] = value.clone();
    }
    condition
}

pub(crate) fn namespace_of(object: &Value) -> &str {
    object["metadata"]["namespace"].as_str().unwrap_or("")
}

pub(crate) fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

pub(crate) fn owner_reference(object: &Value, api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": object["metadata"]["name"], "uid": object["metadata"]["uid"],
           "controller": true, "blockOwnerDeletion": true})
}
