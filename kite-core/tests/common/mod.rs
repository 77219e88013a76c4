//! Helpers shared by kite-core's integration tests: reaching into a CRD's
//! schema, and validating objects as the API server would.
#![allow(dead_code)]

use kube::CustomResourceExt;
use serde_json::Value;

/// The `openAPIV3Schema` of a Kite CRD, as JSON.
pub fn openapi_schema<K: CustomResourceExt>() -> Value {
    let crd = K::crd();
    let schema = crd.spec.versions[0].schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap();
    serde_json::to_value(schema).unwrap()
}

/// The schema node at a dotted path of properties; `[]` steps into list items.
///
/// `property(&schema, "spec.goldenImages[].name")`
pub fn property<'a>(schema: &'a Value, path: &str) -> &'a Value {
    let mut node = schema;
    for step in path.split('.') {
        let (name, into_items) = match step.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (step, false),
        };
        node = node
            .get("properties")
            .and_then(|p| p.get(name))
            .unwrap_or_else(|| panic!("schema has no property {name:?} on the way to {path:?}"));
        if into_items {
            node = node.get("items").unwrap_or_else(|| panic!("{name:?} is not a list, on the way to {path:?}"));
        }
    }
    node
}

/// The CEL rules (`x-kubernetes-validations[].rule`) on a schema node.
pub fn cel_rules(node: &Value) -> Vec<String> {
    node.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(|r| r["rule"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Runs the CEL rules of `schema` on `object` (with `old` for transition
/// rules), as the API server does on create (`old = None`) and update.
/// Returns the messages of the rules that failed.
pub fn cel_failures(schema: &Value, object: &Value, old: Option<&Value>) -> Vec<String> {
    match kube::core::cel::Validator::new().validate(schema, object, old) {
        Ok(()) => vec![],
        Err(errors) => errors.into_vec().into_iter().map(|e| e.message).collect(),
    }
}

/// Validates `object` against the OpenAPI schema's structural rules (types,
/// enums, patterns, ranges, required fields), as the API server does before
/// it runs the CEL rules. Returns one line per failure, naming the path.
pub fn schema_failures(schema: &Value, object: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).unwrap();
    validator.iter_errors(object).map(|e| format!("{}: {}", e.instance_path(), e)).collect()
}
