//! The `scale` subresource: an `autoscaling/v1` `Scale` read from, and
//! written to, the fields its type names ([`ScalePaths`]), as the API
//! server's scale storage does (`kubectl scale`, HorizontalPodAutoscalers).
//! A write changes only the desired replicas of the object.

use crate::patch;
use crate::read;
use crate::registry::{ResourceType, ScalePaths};
use crate::selector::selector_text;
use crate::state::Inner;
use crate::status::{ApiError, Cause};
use crate::write::{self, PatchKind};
use crate::write_context::WriteCtx;
use serde_json::{Value, json};
use std::sync::Arc;

/// How a write changes the `Scale`.
pub enum ScaleChange<'a> {
    /// `PUT`: this `Scale`.
    Replace(Value),
    /// `PATCH`: this patch of the current `Scale`.
    Patch(PatchKind, &'a Value),
}

/// The `Scale` of an object.
pub fn get(inner: &Inner, resource: &ResourceType, namespace: Option<&str>, name: &str) -> Result<Value, ApiError> {
    let paths = paths(resource, name)?;
    Ok(to_scale(&read::get(inner, resource, namespace, name)?, paths))
}

/// Writes a `Scale`'s `spec.replicas` into its object; the new `Scale`.
pub fn write(
    inner: &Arc<Inner>,
    resource: &Arc<ResourceType>,
    namespace: Option<&str>,
    name: &str,
    change: ScaleChange<'_>,
    ctx: &WriteCtx,
) -> Result<Value, ApiError> {
    let paths = paths(resource, name)?;
    let object = read::get(inner, resource, namespace, name)?;
    let current = to_scale(&object, paths);
    let desired = match change {
        ScaleChange::Replace(body) => body,
        ScaleChange::Patch(PatchKind::Merge | PatchKind::Strategic, body) => {
            let mut scale = current.clone();
            patch::merge(&mut scale, body);
            scale
        }
        ScaleChange::Patch(PatchKind::Json, body) => {
            let mut scale = current.clone();
            patch::json(&mut scale, body)?;
            scale
        }
        ScaleChange::Patch(PatchKind::Apply, _) => {
            return Err(ApiError::unsupported_media_type("application/apply-patch+yaml"));
        }
    };
    let invalid = |message: String| {
        ApiError::invalid("Scale", "autoscaling", name, vec![Cause::invalid("spec.replicas", message)])
    };
    let replicas = match &desired["spec"]["replicas"] {
        Value::Null => 0,
        Value::Number(n) => {
            n.as_i64().filter(|r| i32::try_from(*r).is_ok()).ok_or_else(|| invalid(format!("Invalid value: {n}")))?
        }
        other => return Err(invalid(format!("Invalid value: {other}: must be an integer"))),
    };
    if replicas < 0 {
        return Err(invalid(format!("Invalid value: {replicas}: must be greater than or equal to 0")));
    }
    let version = desired["metadata"]["resourceVersion"].as_str().filter(|v| !v.is_empty());
    if version.is_some_and(|v| Some(v) != object["metadata"]["resourceVersion"].as_str()) {
        return Err(ApiError::conflict(&resource.qualified_plural(), name));
    }
    let mut updated = object;
    set(&mut updated, &paths.spec_replicas, json!(replicas));
    let mut ctx = WriteCtx { subresource: None, ..ctx.clone() };
    let stored = write::update(inner, resource, namespace, name, updated, &mut ctx)?;
    Ok(to_scale(&stored, paths))
}

fn paths<'a>(resource: &'a ResourceType, name: &str) -> Result<&'a ScalePaths, ApiError> {
    resource.scale.as_ref().ok_or_else(|| ApiError::not_found(&resource.qualified_plural(), name))
}

/// The `Scale` of `object`.
fn to_scale(object: &Value, paths: &ScalePaths) -> Value {
    let metadata = &object["metadata"];
    let mut scale_metadata = json!({});
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if !metadata[field].is_null() {
            scale_metadata[field] = metadata[field].clone();
        }
    }
    let replicas = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let selector = match &paths.label_selector {
        Some(pointer) => object.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string(),
        None => selector_text(&object["spec"]["selector"]),
    };
    let mut status = json!({ "replicas": replicas(&paths.status_replicas) });
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": scale_metadata,
        "spec": { "replicas": replicas(&paths.spec_replicas) },
        "status": status,
    })
}

/// Sets the field at `pointer`, making the objects on the way.
fn set(object: &mut Value, pointer: &str, value: Value) {
    let mut at = object;
    let mut parts = pointer.trim_start_matches('/').split('/').peekable();
    while let Some(part) = parts.next() {
        if !at.is_object() {
            *at = json!({});
        }
        let Some(fields) = at.as_object_mut() else { return };
        if parts.peek().is_none() {
            fields.insert(part.to_string(), value);
            return;
        }
        at = fields.entry(part.to_string()).or_insert_with(|| json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_shows_the_desired_and_observed_replicas() {
        let deployment = json!({ "metadata": { "name": "d", "namespace": "x", "resourceVersion": "7", "labels": { "a": "b" } },
            "spec": { "replicas": 3, "selector": { "matchLabels": { "app": "d" } } }, "status": { "replicas": 2 } });
        let scale = to_scale(&deployment, &ScalePaths::workload());
        assert_eq!(scale["spec"]["replicas"], 3);
        assert_eq!(scale["status"], json!({ "replicas": 2, "selector": "app=d" }));
        assert_eq!(scale["metadata"], json!({ "name": "d", "namespace": "x", "resourceVersion": "7" }));
    }
}
