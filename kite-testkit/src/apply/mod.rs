//! Server-side apply and field ownership (`metadata.managedFields`).
//!
//! Each manager owns the fields it applied or last changed. An apply sets
//! the fields it names, removes the fields the same manager applied before
//! and no longer names (unless another manager owns them too), and is a
//! `409 Conflict` when it would change a field another manager owns, unless
//! it is forced, which moves the ownership. Updates (PUT and the other
//! patches) take ownership of the fields they change.

mod fieldset;

pub use fieldset::FieldSet;
use fieldset::{fields_of, remove_at, value_at};

use crate::list_kind::ListKind;
use crate::registry::ResourceType;
use crate::status::ApiError;
use serde_json::{Map, Value, json};

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    subresource: Option<String>,
    api_version: String,
    time: String,
    fields: FieldSet,
}

impl Entry {
    fn same_scope(&self, subresource: Option<&str>) -> bool {
        self.subresource.as_deref() == subresource
    }
}

fn read_entries(object: &Value) -> Vec<Entry> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| Entry {
                    manager: e["manager"].as_str().unwrap_or("").to_string(),
                    operation: e["operation"].as_str().unwrap_or("Update").to_string(),
                    subresource: e["subresource"].as_str().map(String::from),
                    api_version: e["apiVersion"].as_str().unwrap_or("").to_string(),
                    time: e["time"].as_str().unwrap_or("").to_string(),
                    fields: FieldSet::from_fields_v1(&e["fieldsV1"]),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn write_entries(object: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager, "operation": e.operation, "apiVersion": e.api_version,
                "time": e.time, "fieldsType": "FieldsV1", "fieldsV1": e.fields.to_fields_v1()
            });
            if let Some(sub) = &e.subresource {
                v["subresource"] = Value::String(sub.clone());
            }
            v
        })
        .collect();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            metadata.remove("managedFields");
        } else {
            metadata.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Who is writing, and how.
#[derive(Clone, Debug)]
pub struct Writer<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// `status` for writes to the status subresource.
    pub subresource: Option<&'a str>,
    /// The apiVersion the request used.
    pub api_version: &'a str,
    /// The time to record.
    pub now: &'a str,
}

/// Applies `applied` over `live` (absent on create) as `writer`, with
/// `force` to take fields other managers own. Returns the new object, its
/// `managedFields` updated.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    resource: &ResourceType,
    writer: &Writer<'_>,
    force: bool,
) -> Result<Value, ApiError> {
    let status_only = writer.subresource == Some("status");
    let new_set = fields_of(applied, resource, status_only);
    let empty = json!({});
    let live_object = live.unwrap_or(&empty);
    let mut entries = read_entries(live_object);

    // Conflicts: a field another manager owns, set here to another value.
    let mut conflicts: Vec<(String, Vec<String>)> = Vec::new();
    for path in new_set.paths().into_iter().filter(|p| p.last().is_some_and(|l| !l.starts_with("k:"))) {
        for entry in entries.iter().filter(|e| e.same_scope(writer.subresource) && e.manager != writer.manager) {
            if entry.fields.contains(&path) && value_at(applied, &path) != value_at(live_object, &path) {
                conflicts.push((entry.manager.clone(), path.clone()));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(resource, applied, &conflicts));
    }

    let mut result = match live {
        Some(live) => live.clone(),
        None => json!({"apiVersion": applied["apiVersion"], "kind": applied["kind"], "metadata": applied["metadata"]}),
    };
    merge_applied(&mut result, applied, resource, status_only);

    // Fields this manager applied before and no longer names, owned by nobody else, go.
    let previous = entries
        .iter()
        .find(|e| e.manager == writer.manager && e.operation == "Apply" && e.same_scope(writer.subresource))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    for path in previous.paths() {
        if new_set.contains(&path) {
            continue;
        }
        let owned_elsewhere = entries.iter().any(|e| {
            !(e.manager == writer.manager && e.operation == "Apply")
                && e.same_scope(writer.subresource)
                && e.fields.contains(&path)
        });
        if !owned_elsewhere {
            remove_at(&mut result, &path);
        }
    }

    for (manager, path) in &conflicts {
        for entry in entries.iter_mut().filter(|e| &e.manager == manager && e.same_scope(writer.subresource)) {
            entry.fields.remove(path);
        }
    }
    entries.retain(|e| !(e.manager == writer.manager && e.operation == "Apply" && e.same_scope(writer.subresource)));
    entries.push(Entry {
        manager: writer.manager.to_string(),
        operation: "Apply".into(),
        subresource: writer.subresource.map(String::from),
        api_version: writer.api_version.to_string(),
        time: writer.now.to_string(),
        fields: new_set,
    });
    write_entries(&mut result, &entries);
    Ok(result)
}

/// Records an update (PUT or a non-apply PATCH) from `old` to `new` by
/// `writer`: it owns what it changed, and nobody owns what it removed.
pub fn record_update(old: Option<&Value>, new: &mut Value, resource: &ResourceType, writer: &Writer<'_>) {
    let status_only = writer.subresource == Some("status");
    let empty = json!({});
    let old = old.unwrap_or(&empty);
    let mut entries = read_entries(old);
    let new_fields = fields_of(new, resource, status_only);
    let old_fields = fields_of(old, resource, status_only);
    let mut changed = FieldSet::default();
    for path in new_fields.paths() {
        if value_at(old, &path) != value_at(new, &path) || !old_fields.contains(&path) {
            changed.insert(&path, path.last().is_some_and(|l| l.starts_with("k:")));
        }
    }
    let removed: Vec<Vec<String>> = old_fields.paths().into_iter().filter(|p| !new_fields.contains(p)).collect();
    if changed.is_empty() && removed.is_empty() {
        write_entries(new, &entries);
        return;
    }
    for entry in entries.iter_mut().filter(|e| e.same_scope(writer.subresource)) {
        for path in &removed {
            entry.fields.remove(path);
        }
        if !(entry.manager == writer.manager && entry.operation == "Update") {
            for path in changed.paths() {
                entry.fields.remove(&path);
            }
        }
    }
    match entries
        .iter_mut()
        .find(|e| e.manager == writer.manager && e.operation == "Update" && e.same_scope(writer.subresource))
    {
        Some(entry) => {
            entry.fields.union(&changed);
            entry.time = writer.now.to_string();
        }
        None => entries.push(Entry {
            manager: writer.manager.to_string(),
            operation: "Update".into(),
            subresource: writer.subresource.map(String::from),
            api_version: writer.api_version.to_string(),
            time: writer.now.to_string(),
            fields: changed,
        }),
    }
    write_entries(new, &entries);
}

fn conflict_error(resource: &ResourceType, applied: &Value, conflicts: &[(String, Vec<String>)]) -> ApiError {
    let describe = |path: &[String]| -> String {
        path.iter()
            .map(|step| match step.strip_prefix("f:") {
                Some(field) => format!(".{field}"),
                None => format!("[{}]", step.trim_start_matches("k:").trim_start_matches("v:")),
            })
            .collect()
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(manager, path)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{manager}\""), "field": describe(path)})
        })
        .collect();
    let listed: Vec<String> =
        conflicts.iter().map(|(manager, path)| format!("conflict with \"{manager}\": {}", describe(path))).collect();
    let name = applied["metadata"]["name"].as_str().unwrap_or("");
    ApiError::new(
        http::StatusCode::CONFLICT,
        "Conflict",
        format!(
            "Apply failed with {} conflict{}: {}",
            conflicts.len(),
            if conflicts.len() == 1 { "" } else { "s" },
            listed.join(", ")
        ),
    )
    .with_details(json!({"name": name, "group": resource.group, "kind": resource.plural, "causes": causes}))
}

fn merge_applied(target: &mut Value, applied: &Value, resource: &ResourceType, status_only: bool) {
    let (Some(target_map), Some(applied_map)) = (target.as_object_mut(), applied.as_object()) else { return };
    for (key, value) in applied_map {
        let take = match key.as_str() {
            "apiVersion" | "kind" => false,
            "status" => status_only || !resource.status_subresource,
            "metadata" => !status_only,
            _ => !status_only || !resource.status_subresource,
        };
        if !take {
            continue;
        }
        if key == "metadata" {
            let slot = target_map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
            for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
                if let Some(v) = value.get(field) {
                    let mut path = vec!["metadata".to_string(), field.to_string()];
                    let child = slot.as_object_mut().map(|m| m.entry(field).or_insert(Value::Null));
                    if let Some(child) = child {
                        merge_value(child, v, resource, &mut path);
                    }
                }
            }
            continue;
        }
        let mut path = vec![key.clone()];
        let slot = target_map.entry(key.clone()).or_insert(Value::Null);
        merge_value(slot, value, resource, &mut path);
    }
}

fn merge_value(target: &mut Value, applied: &Value, resource: &ResourceType, path: &mut Vec<String>) {
    match applied {
        Value::Object(applied_map) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let Some(target_map) = target.as_object_mut() else { return };
            for (key, value) in applied_map {
                path.push(key.clone());
                merge_value(target_map.entry(key.clone()).or_insert(Value::Null), value, resource, path);
                path.pop();
            }
        }
        Value::Array(items) => {
            let refs: Vec<&str> = path.iter().map(String::as_str).collect();
            match resource.list_kind(&refs) {
                ListKind::Atomic => *target = applied.clone(),
                ListKind::Set => {
                    if !target.is_array() {
                        *target = Value::Array(vec![]);
                    }
                    if let Some(existing) = target.as_array_mut() {
                        for item in items {
                            if !existing.contains(item) {
                                existing.push(item.clone());
                            }
                        }
                    }
                }
                ListKind::Map(keys) => {
                    if !target.is_array() {
                        *target = Value::Array(vec![]);
                    }
                    if let Some(existing) = target.as_array_mut() {
                        for item in items {
                            let found = existing
                                .iter_mut()
                                .find(|e| keys.iter().all(|k| e.get(k).is_some() && e.get(k) == item.get(k)));
                            match found {
                                Some(e) => merge_value(e, item, resource, path),
                                None => existing.push(item.clone()),
                            }
                        }
                    }
                }
            }
        }
        _ => *target = applied.clone(),
    }
}
