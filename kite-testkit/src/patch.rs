//! The patch formats of PATCH requests other than server-side apply: JSON
//! merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

use crate::list_kind::ListKind;
use crate::registry::ResourceType;
use crate::status::ApiError;
use serde_json::{Map, Value};

/// Applies a JSON merge patch.
pub fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Applies a JSON patch, all or nothing; a failed `test` or a missing path
/// is a `422`-style error.
///
/// As the real API server (evanphx/json-patch) does, a `test` for `null`
/// passes on a path that does not exist: kube's finalizer helper relies on
/// it (`test /metadata/finalizers == null`, then `add`).
pub fn json(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let patch: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
    let mut patched = target.clone();
    for operation in patch.0 {
        if let json_patch::PatchOperation::Test(test) = &operation
            && test.value.is_null()
            && patched.pointer(test.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch(&mut patched, &[operation]).map_err(|e| {
            ApiError::new(
                http::StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                format!("the JSON patch could not be applied: {e}"),
            )
        })?;
    }
    *target = patched;
    Ok(())
}

/// Applies a strategic merge patch: a merge patch in which lists of objects
/// with a merge key merge item by item, and `$patch` directives are honoured.
pub fn strategic(target: &mut Value, patch: &Value, resource: &ResourceType) -> Result<(), ApiError> {
    let mut path = Vec::new();
    strategic_at(target, patch, resource, &mut path)
}

fn strategic_at(
    target: &mut Value,
    patch: &Value,
    resource: &ResourceType,
    path: &mut Vec<String>,
) -> Result<(), ApiError> {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    match patch_map.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut replacement = patch_map.clone();
            replacement.remove("$patch");
            *target = Value::Object(replacement);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some(other) => return Err(ApiError::bad_request(format!("unknown patch directive $patch: {other}"))),
        None => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else { return Ok(()) };
    for (key, value) in patch_map {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Value::Array(drop)) = (target_map.get_mut(field), value) {
                items.retain(|item| !drop.contains(item));
            }
            continue;
        }
        if key.starts_with("$setElementOrder/") || key == "$retainKeys" {
            continue;
        }
        if value.is_null() {
            target_map.remove(key);
            continue;
        }
        path.push(key.clone());
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        match value {
            Value::Object(_) => {
                let slot = target_map.entry(key.clone()).or_insert(Value::Null);
                strategic_at(slot, value, resource, path)?;
                if slot.is_null() {
                    target_map.remove(key);
                }
            }
            Value::Array(items) => {
                let kind = resource.list_kind(&refs);
                let slot = target_map.entry(key.clone()).or_insert(Value::Array(vec![]));
                merge_list(slot, items, &kind, resource, path)?;
            }
            _ => {
                target_map.insert(key.clone(), value.clone());
            }
        }
        path.pop();
    }
    Ok(())
}

fn item_matches(item: &Value, patch_item: &Value, keys: &[String]) -> bool {
    !keys.is_empty() && keys.iter().all(|k| item.get(k).is_some() && item.get(k) == patch_item.get(k))
}

fn merge_list(
    slot: &mut Value,
    items: &[Value],
    kind: &ListKind,
    resource: &ResourceType,
    path: &mut Vec<String>,
) -> Result<(), ApiError> {
    match kind {
        ListKind::Atomic => *slot = Value::Array(items.to_vec()),
        ListKind::Set => {
            let Value::Array(existing) = slot else { return Ok(()) };
            for item in items {
                if !existing.contains(item) {
                    existing.push(item.clone());
                }
            }
        }
        ListKind::Map(keys) => {
            if !slot.is_array() {
                *slot = Value::Array(vec![]);
            }
            let Value::Array(existing) = slot else { return Ok(()) };
            for patch_item in items {
                let position = existing.iter().position(|e| item_matches(e, patch_item, keys));
                let delete = patch_item.get("$patch").and_then(Value::as_str) == Some("delete");
                match (position, delete) {
                    (Some(i), true) => {
                        existing.remove(i);
                    }
                    (None, true) => {}
                    (Some(i), false) => strategic_at(&mut existing[i], patch_item, resource, path)?,
                    (None, false) => existing.push(patch_item.clone()),
                }
            }
        }
    }
    Ok(())
}
