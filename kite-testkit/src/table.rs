//! Server-side printing: the `Table` kubectl asks for, with a CRD's printer
//! columns, and the small JSONPath subset those columns use.

use crate::registry::ResourceType;
use serde_json::{Value, json};

fn columns(resource: &ResourceType) -> Vec<Value> {
    let mut columns = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    if resource.printer_columns.is_empty() {
        if resource.group.is_empty() && resource.kind == "Namespace" {
            columns.push(json!({"name": "Status", "type": "string", "format": "", "description": "The namespace's phase.", "priority": 0}));
        }
        columns.push(json!({"name": "Age", "type": "date", "format": "", "description": "When the object was created.", "priority": 0}));
    } else {
        for column in &resource.printer_columns {
            columns.push(json!({
                "name": column["name"], "type": column["type"], "format": column.get("format").cloned().unwrap_or(json!("")),
                "description": column.get("description").cloned().unwrap_or(json!("")),
                "priority": column.get("priority").cloned().unwrap_or(json!(0)),
            }));
        }
    }
    columns
}

fn age(timestamp: &str) -> String {
    let Ok(then) = timestamp.parse::<jiff::Timestamp>() else { return "<unknown>".into() };
    let seconds = jiff::Timestamp::now().as_second() - then.as_second();
    match seconds {
        s if s < 0 => "<invalid>".to_string(),
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

fn cells(resource: &ResourceType, object: &Value) -> Vec<Value> {
    let mut cells = vec![object["metadata"]["name"].clone()];
    if resource.printer_columns.is_empty() {
        if resource.group.is_empty() && resource.kind == "Namespace" {
            cells.push(object["status"]["phase"].clone());
        }
        cells.push(json!(age(object["metadata"]["creationTimestamp"].as_str().unwrap_or(""))));
        return cells;
    }
    for column in &resource.printer_columns {
        let path = column["jsonPath"].as_str().unwrap_or("");
        let value = json_path(object, path);
        let cell = match (column["type"].as_str(), value) {
            (_, None) => Value::Null,
            (Some("date"), Some(Value::String(t))) => json!(age(&t)),
            (_, Some(v)) => v,
        };
        cells.push(cell);
    }
    cells
}

fn row(resource: &ResourceType, object: &Value) -> Value {
    json!({
        "cells": cells(resource, object),
        "object": {
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"]
        }
    })
}

/// A Table of `objects`.
pub fn table(resource: &ResourceType, objects: &[Value], metadata: Value) -> Value {
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
        "columnDefinitions": columns(resource),
        "rows": objects.iter().map(|o| row(resource, o)).collect::<Vec<_>>(),
    })
}

/// Evaluates `.a.b`, `.a[0].b` and `.a[?(@.type=="Ready")].status` on `object`.
pub fn json_path(object: &Value, path: &str) -> Option<Value> {
    let mut node = object.clone();
    let mut rest = path.trim().trim_start_matches('{').trim_end_matches('}').trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            node = node.get(&after[..end])?.clone();
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inside = &after[..end];
            rest = &after[end + 1..];
            if let Some(filter) = inside.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (field, expected) = filter.split_once("==")?;
                let expected = expected.trim().trim_matches('"').trim_matches('\'');
                node = node
                    .as_array()?
                    .iter()
                    .find(|item| item.get(field.trim()).and_then(Value::as_str) == Some(expected))?
                    .clone();
            } else {
                let index: usize = inside.parse().ok()?;
                node = node.get(index)?.clone();
            }
        } else {
            return None;
        }
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::json_path;
    use serde_json::json;

    #[test]
    fn json_path_reads_fields_indexes_and_filters() {
        let object = json!({"spec": {"cpu": 2}, "status": {"conditions": [
            {"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}
        ]}});
        assert_eq!(json_path(&object, ".spec.cpu"), Some(json!(2)));
        assert_eq!(json_path(&object, ".status.conditions[0].type"), Some(json!("Other")));
        assert_eq!(json_path(&object, ".status.conditions[?(@.type==\"Ready\")].status"), Some(json!("True")));
        assert_eq!(json_path(&object, ".spec.memory"), None);
    }
}
