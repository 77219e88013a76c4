//! Validation of objects against an OpenAPI v3 schema, as the API server
//! does for custom resources: defaults, pruning of unknown fields, the
//! structural checks (types, enums, patterns, ranges, required fields) and
//! the CEL rules (`x-kubernetes-validations`).

use crate::list_kind::ListKind;
use crate::status::Cause;
use kube::core::cel::{CompiledSchema, Validator, apply_defaults, compile_schema};
use serde_json::{Map, Value};

/// A compiled schema for one resource type.
pub struct ObjectSchema {
    raw: Value,
    validator: jsonschema::Validator,
    cel: CompiledSchema,
    has_cel: bool,
}

impl std::fmt::Debug for ObjectSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectSchema").field("has_cel", &self.has_cel).finish_non_exhaustive()
    }
}

impl ObjectSchema {
    /// Compiles an `openAPIV3Schema` (or a strict JSON schema derived from one).
    pub fn new(schema: &Value) -> Result<Self, String> {
        let mut for_validator = schema.clone();
        if let Some(object) = for_validator.as_object_mut() {
            // ObjectMeta is checked by the server itself, not by the CRD schema.
            if let Some(Value::Object(properties)) = object.get_mut("properties") {
                properties.insert("metadata".into(), serde_json::json!({"type": "object"}));
            }
            object.remove("$schema");
        }
        to_json_schema(&mut for_validator);
        let validator = jsonschema::options()
            .should_validate_formats(false)
            .build(&for_validator)
            .map_err(|e| format!("the schema does not compile: {e}"))?;
        let has_cel = schema.to_string().contains("x-kubernetes-validations");
        Ok(Self { raw: schema.clone(), validator, cel: compile_schema(schema), has_cel })
    }

    /// The schema as given.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Fills in the schema's defaults, as the API server does before validating.
    pub fn apply_defaults(&self, object: &mut Value) {
        *object = apply_defaults(&self.raw, object);
    }

    /// Removes fields the schema does not know and returns their paths.
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        let mut removed = Vec::new();
        if let Value::Object(map) = object {
            for (name, child) in map.iter_mut() {
                if matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(schema) = self.raw.get("properties").and_then(|p| p.get(name)) {
                    prune_node(schema, child, name, &mut removed);
                }
            }
            let known: Vec<String> = self
                .raw
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            // As the API server does, a root that preserves unknown fields keeps them.
            let preserve = self.raw.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            map.retain(|name, _| {
                let keep =
                    preserve || matches!(name.as_str(), "apiVersion" | "kind" | "metadata") || known.contains(name);
                if !keep {
                    removed.push(name.clone());
                }
                keep
            });
        }
        removed
    }

    /// Checks `object` (with `old` on update, for transition rules) and
    /// returns every failure with its field path.
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes: Vec<Cause> = self
            .validator
            .iter_errors(object)
            .map(|e| {
                let field = pointer_to_field(&e.instance_path().to_string());
                let message = format!("Invalid value: {}: {e}", truncate(&e.instance().to_string()));
                Cause::invalid(field, message)
            })
            .collect();
        if causes.is_empty()
            && self.has_cel
            && let Err(errors) = Validator::new().validate_compiled(&self.cel, object, old)
        {
            causes.extend(errors.into_vec().into_iter().map(|e| {
                let field = e.field_path.clone();
                Cause::invalid(field, format!("Invalid value: {}", e.message))
            }));
        }
        causes
    }

    /// How the list at `path` merges, when the schema says.
    pub fn list_kind(&self, path: &[&str]) -> Option<ListKind> {
        let mut node = &self.raw;
        for step in path {
            node = match node.get("type").and_then(Value::as_str) {
                Some("array") => node.get("items")?.get("properties")?.get(*step)?,
                _ => node
                    .get("properties")
                    .and_then(|p| p.get(*step))
                    .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))?,
            };
        }
        match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("map") => Some(ListKind::Map(
                node.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| keys.iter().filter_map(|k| k.as_str().map(String::from)).collect())
                    .unwrap_or_default(),
            )),
            Some("set") => Some(ListKind::Set),
            Some("atomic") => Some(ListKind::Atomic),
            _ => None,
        }
    }
}

fn truncate(text: &str) -> String {
    if text.chars().count() > 120 {
        format!("{}...", text.chars().take(117).collect::<String>())
    } else {
        text.to_string()
    }
}

/// `/spec/cpu` → `spec.cpu`; `/spec/items/0/name` → `spec.items[0].name`.
pub fn pointer_to_field(pointer: &str) -> String {
    let mut field = String::new();
    for step in pointer.split('/').filter(|s| !s.is_empty()) {
        if step.chars().all(|c| c.is_ascii_digit()) {
            field.push_str(&format!("[{step}]"));
        } else {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(&step.replace("~1", "/").replace("~0", "~"));
        }
    }
    field
}

/// Rewrites Kubernetes' OpenAPI v3 dialect into JSON Schema: `nullable`
/// becomes a `null` type, and int-or-string accepts both.
fn to_json_schema(node: &mut Value) {
    let Value::Object(object) = node else { return };
    if object.remove("nullable") == Some(Value::Bool(true))
        && let Some(Value::String(t)) = object.get("type").cloned()
    {
        object.insert("type".into(), serde_json::json!([t, "null"]));
    }
    if object.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) && !object.contains_key("anyOf") {
        object.insert("type".into(), serde_json::json!(["integer", "string"]));
    }
    for (key, child) in object.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" => {
                if let Value::Object(children) = child {
                    children.values_mut().for_each(to_json_schema);
                }
            }
            "items" | "additionalProperties" | "not" => to_json_schema(child),
            "anyOf" | "allOf" | "oneOf" => {
                if let Value::Array(branches) = child {
                    branches.iter_mut().for_each(to_json_schema);
                }
            }
            _ => {}
        }
    }
}

fn prune_node(schema: &Value, value: &mut Value, path: &str, removed: &mut Vec<String>) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && schema.get("properties").is_none()
    {
        return;
    }
    match value {
        Value::Object(map) => prune_object(schema, map, path, removed),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_node(item_schema, item, &format!("{path}[{i}]"), removed);
                }
            }
        }
        _ => {}
    }
}

fn prune_object(schema: &Value, map: &mut Map<String, Value>, path: &str, removed: &mut Vec<String>) {
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        for (name, child) in map.iter_mut() {
            prune_node(additional, child, &format!("{path}.{name}"), removed);
        }
        return;
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(true)) {
        return;
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let preserve = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let embedded = schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
    map.retain(|name, _| {
        let keep = preserve
            || properties.is_some_and(|p| p.contains_key(name))
            || (embedded && matches!(name.as_str(), "apiVersion" | "kind" | "metadata"));
        if !keep {
            removed.push(format!("{path}.{name}"));
        }
        keep
    });
    if let Some(properties) = properties {
        for (name, child) in map.iter_mut() {
            if let Some(child_schema) = properties.get(name) {
                prune_node(child_schema, child, &format!("{path}.{name}"), removed);
            }
        }
    }
}
