//! The validations the API server enforces are in the generated schemas:
//! required fields, enums, patterns, ranges, list-map keys, and the CEL
//! rules; and every schema is structural, as Kubernetes requires.

mod common;

use common::{cel_rules, openapi_schema, property};
use kite_core::api::*;
use kite_core::ssh_id::SSH_ID_PATTERN;
use kube::CustomResourceExt;
use serde_json::{Value, json};

fn required(node: &Value) -> Vec<&str> {
    node["required"].as_array().map(|r| r.iter().map(|v| v.as_str().unwrap()).collect()).unwrap_or_default()
}

#[test]
fn kite_user_schema_carries_its_rules() {
    let schema = openapi_schema::<KiteUser>();
    assert_eq!(required(property(&schema, "spec")), ["email", "namespace", "password", "username"]);
    assert_eq!(property(&schema, "spec.access_level")["enum"], json!([0, 1, 2, 3]));
    assert_eq!(property(&schema, "spec.access_level")["default"], json!(0));
    assert_eq!(cel_rules(property(&schema, "spec.namespace")), ["self == oldSelf"]);
    assert_eq!(property(&schema, "spec.namespace")["pattern"], DNS_LABEL_PATTERN);
    assert!(property(&schema, "spec.sshAuthorizedKeys[]")["pattern"].as_str().unwrap().starts_with("^(ssh-ed25519|"));
    assert_eq!(property(&schema, "status.phase")["enum"], json!(["Pending", "Ready", "Failed"]));

    let crd = KiteUser::crd();
    assert_eq!(crd.spec.scope, "Cluster");
    assert_eq!(crd.spec.names.short_names, Some(vec!["ku".to_string()]));
}

#[test]
fn kite_virtual_machine_schema_carries_its_rules() {
    let schema = openapi_schema::<KiteVirtualMachine>();
    assert_eq!(required(property(&schema, "spec")), ["cpu", "disk", "image", "memory", "sshId"]);
    assert_eq!(property(&schema, "spec.cpu")["minimum"].as_f64(), Some(1.0));
    assert_eq!(property(&schema, "spec.sshId")["pattern"], SSH_ID_PATTERN);
    assert_eq!(property(&schema, "spec.powerState")["enum"], json!(["On", "Off"]));
    assert_eq!(property(&schema, "spec.powerState")["default"], json!("Off"));
    for quantity in ["spec.memory", "spec.disk"] {
        assert_eq!(property(&schema, quantity)["pattern"], QUANTITY_PATTERN, "{quantity}");
        assert_eq!(property(&schema, quantity)["type"], "string", "{quantity}");
    }
    assert_eq!(property(&schema, "spec.domainPrefix")["pattern"], DNS_LABEL_PATTERN);
    assert_eq!(cel_rules(property(&schema, "spec.sshId")), ["self == oldSelf", kite_core::ssh_id::RESERVED_RULE]);
    assert_eq!(cel_rules(property(&schema, "spec.image")), ["self == oldSelf"]);
    assert!(
        cel_rules(property(&schema, "spec.disk")).contains(&"quantity(self).compareTo(quantity(oldSelf)) >= 0".into())
    );
    assert_eq!(cel_rules(property(&schema, "spec.delete")), ["self || !oldSelf"]);
    assert!(property(&schema, "status.phase")["enum"].as_array().unwrap().contains(&json!("Running")));

    let crd = KiteVirtualMachine::crd();
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.names.short_names, Some(vec!["ktvm".to_string()]));
    let columns: Vec<String> =
        crd.spec.versions[0].additional_printer_columns.iter().flatten().map(|c| c.name.clone()).collect();
    assert_eq!(columns, ["Status", "CPU", "MEM", "IMAGE", "SSH ID", "Age"]);
}

#[test]
fn kite_virtual_machine_offer_requires_all_six_fields() {
    let schema = openapi_schema::<KiteVirtualMachineOffer>();
    assert_eq!(required(property(&schema, "spec")), ["cpu", "createdBy", "disk", "expiresAt", "image", "memory"]);
    assert_eq!(property(&schema, "spec.expiresAt")["format"], "date-time");
    assert_eq!(property(&schema, "status.phase")["enum"], json!(["Available", "Claimed"]));
    assert_eq!(KiteVirtualMachineOffer::crd().spec.names.short_names, Some(vec!["ktvmo".to_string()]));
}

#[test]
fn kite_platform_schema_carries_its_rules() {
    let schema = openapi_schema::<KitePlatform>();
    assert_eq!(cel_rules(&schema), ["self.metadata.name == 'kite'"]);
    assert_eq!(property(&schema, "spec.accessTokenTtlMinutes")["minimum"].as_f64(), Some(1.0));
    for port in ["spec.sshGateway.externalPort", "spec.sshGateway.publicPort", "status.sshGateway.observedExternalPort"]
    {
        assert_eq!(property(&schema, port)["minimum"].as_f64(), Some(1.0), "{port}");
        assert_eq!(property(&schema, port)["maximum"].as_f64(), Some(65535.0), "{port}");
    }
    assert_eq!(cel_rules(property(&schema, "spec.sshGateway.hostFallback")), ["!self.enabled || has(self.address)"]);
    assert_eq!(property(&schema, "spec.goldenImages")["x-kubernetes-list-type"], "map");
    assert_eq!(property(&schema, "spec.goldenImages")["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(required(property(&schema, "spec.goldenImages[]")), ["name", "size", "source"]);
    assert_eq!(
        property(&schema, "status.sshGateway.phase")["enum"],
        json!(["Disabled", "Reconciling", "Ready", "Blocked", "Failed"])
    );
    assert_eq!(KitePlatform::crd().spec.scope, "Cluster");
}

#[test]
fn conditions_are_list_maps_keyed_by_type() {
    for schema in
        [openapi_schema::<KiteUser>(), openapi_schema::<KiteVirtualMachine>(), openapi_schema::<KitePlatform>()]
    {
        let conditions = property(&schema, "status.conditions");
        assert_eq!(conditions["x-kubernetes-list-type"], "map");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
        assert_eq!(required(&conditions["items"]), ["status", "type"]);
        assert_eq!(property(&schema, "status.conditions[].status")["enum"], json!(["True", "False", "Unknown"]));
    }
}

/// Collects the ways `node` (at `path`) breaks the rules of a structural schema:
/// every node has a type unless it is int-or-string or preserves unknown fields;
/// no `$ref`, `definitions`, `oneOf`/`anyOf`/`allOf`/`not` carrying types;
/// `properties` and `additionalProperties` never together.
fn structural_problems(node: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(object) = node.as_object() else {
        problems.push(format!("{path}: a schema node must be an object"));
        return;
    };
    for forbidden in ["$ref", "definitions", "$defs", "$schema"] {
        if object.contains_key(forbidden) {
            problems.push(format!("{path}: {forbidden} is not allowed in a structural schema"));
        }
    }
    let int_or_string = object.get("x-kubernetes-int-or-string") == Some(&json!(true));
    let preserve = object.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    match object.get("type") {
        Some(Value::String(t))
            if ["object", "array", "string", "integer", "number", "boolean"].contains(&t.as_str()) => {}
        Some(other) => problems.push(format!("{path}: type must be one string, found {other}")),
        None if int_or_string || preserve => {}
        None => problems.push(format!("{path}: no type")),
    }
    if object.contains_key("properties") && object.contains_key("additionalProperties") {
        problems.push(format!("{path}: properties and additionalProperties are exclusive"));
    }
    for junction in ["oneOf", "anyOf", "allOf", "not"] {
        if let Some(branches) = object.get(junction) {
            for branch in branches.as_array().into_iter().flatten().chain(branches.as_object().map(|_| branches)) {
                for key in ["type", "default", "description", "nullable"] {
                    if branch.get(key).is_some() && !int_or_string {
                        problems.push(format!("{path}: {junction} may not set {key}"));
                    }
                }
            }
        }
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, child) in properties {
            structural_problems(child, &format!("{path}.{name}"), problems);
        }
    }
    if let Some(items) = object.get("items") {
        structural_problems(items, &format!("{path}[]"), problems);
    }
    if let Some(additional @ Value::Object(_)) = object.get("additionalProperties") {
        structural_problems(additional, &format!("{path}{{}}"), problems);
    }
}

#[test]
fn every_crd_schema_is_structural() {
    for crd in crds() {
        let name = crd.metadata.name.clone().unwrap();
        assert_eq!(crd.spec.versions.len(), 1, "{name}");
        let version = &crd.spec.versions[0];
        assert!(version.served && version.storage, "{name}: v1 must be served and stored");
        assert!(version.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some(), "{name}: status subresource");
        let schema =
            serde_json::to_value(version.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap()).unwrap();
        let mut problems = vec![];
        structural_problems(&schema, &name, &mut problems);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}

#[test]
fn the_structural_check_catches_what_it_looks_for() {
    // The check above must be able to fail: feed it the mistakes it hunts.
    let bad = json!({
        "type": "object",
        "properties": {
            "untyped": {"description": "no type"},
            "referenced": {"$ref": "#/definitions/x", "type": "object"},
            "junction": {"type": "string", "anyOf": [{"type": "string"}]}
        }
    });
    let mut problems = vec![];
    structural_problems(&bad, "bad", &mut problems);
    assert_eq!(problems.len(), 3, "{problems:?}");
}
