//! What decoding a JSON object into its Go type says, with the type's
//! message as the schema (the `.proto` files and the Go structs are
//! generated from the same source): the fields it does not have, which a
//! decode drops and `fieldValidation=Strict` refuses, or the first value of
//! the wrong JSON type, with encoding/json's sentence.

use super::names;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;

/// Drops from `object` the fields its message does not have and returns
/// their paths (`spec.template.spec.containers[0].imagee`), or the type error.
pub(crate) fn prune(descriptor: &MessageDescriptor, object: &mut Value) -> Result<Vec<String>, String> {
    let mut unknown = Vec::new();
    walk(descriptor, object, "", &mut unknown)?;
    Ok(unknown)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

fn walk(
    descriptor: &MessageDescriptor,
    value: &mut Value,
    path: &str,
    unknown: &mut Vec<String>,
) -> Result<(), String> {
    match descriptor.full_name() {
        names::RAW_EXTENSION | names::FIELDS_V1 => return Ok(()),
        names::TIME | names::MICRO_TIME | names::DURATION => return expect(value, "string", path, descriptor),
        names::QUANTITY | names::QUANTITY_VALUE | names::INT_OR_STRING => {
            return if value.is_string() || value.is_number() || value.is_null() {
                Ok(())
            } else {
                Err(mismatch(value, path, descriptor))
            };
        }
        _ => {}
    }
    let Some(object) = value.as_object_mut() else {
        return if value.is_null() { Ok(()) } else { Err(mismatch(value, path, descriptor)) };
    };
    let keys: Vec<String> = object.keys().cloned().collect();
    for key in keys {
        if path.is_empty() && (key == "apiVersion" || key == "kind") {
            continue;
        }
        let field_path = join(path, &key);
        let Some(field) = names::field_for(descriptor, &key).or_else(|| inline_field(descriptor, &key)) else {
            object.remove(&key);
            unknown.push(field_path);
            continue;
        };
        if let Some(child) = object.get_mut(&key) {
            field_value(&field, child, &field_path, unknown)?;
        }
    }
    Ok(())
}

/// The field named `key` in the messages `descriptor` embeds inline, at any depth.
fn inline_field(descriptor: &MessageDescriptor, key: &str) -> Option<FieldDescriptor> {
    let inline = names::inline_for(descriptor, key)?;
    let Kind::Message(inner) = inline.kind() else { return None };
    names::field_for(&inner, key).or_else(|| inline_field(&inner, key))
}

fn field_value(
    field: &FieldDescriptor,
    value: &mut Value,
    path: &str,
    unknown: &mut Vec<String>,
) -> Result<(), String> {
    if value.is_null() {
        return Ok(());
    }
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else { return Ok(()) };
        let value_field = entry.map_entry_value_field();
        let Some(map) = value.as_object_mut() else { return Err(type_error(value, path, field)) };
        for (key, item) in map.iter_mut() {
            single(&value_field, item, &join(path, key), unknown)?;
        }
        return Ok(());
    }
    if field.is_list() {
        let Some(items) = value.as_array_mut() else { return Err(type_error(value, path, field)) };
        for (i, item) in items.iter_mut().enumerate() {
            single(field, item, &format!("{path}[{i}]"), unknown)?;
        }
        return Ok(());
    }
    single(field, value, path, unknown)
}

fn single(field: &FieldDescriptor, value: &mut Value, path: &str, unknown: &mut Vec<String>) -> Result<(), String> {
    let fits = match field.kind() {
        Kind::Message(message) => return walk(&message, value, path, unknown),
        Kind::String | Kind::Bytes => value.is_string(),
        Kind::Bool => value.is_boolean(),
        Kind::Double | Kind::Float => value.is_number(),
        _ => value.is_i64() || value.is_u64(),
    };
    if fits || value.is_null() { Ok(()) } else { Err(type_error(value, path, field)) }
}

/// encoding/json's name of a JSON value's type.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The Go type of a message: `v1.PodSpec`, `resource.Quantity`.
fn go_message(message: &MessageDescriptor) -> String {
    let package = message.package_name().rsplit('.').next().unwrap_or_default();
    format!("{package}.{}", message.name())
}

fn go_single(kind: &Kind) -> String {
    match kind {
        Kind::Message(message) => go_message(message),
        Kind::String => "string".into(),
        Kind::Bytes => "[]uint8".into(),
        Kind::Bool => "bool".into(),
        Kind::Double => "float64".into(),
        Kind::Float => "float32".into(),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => "int32".into(),
        Kind::Uint32 | Kind::Fixed32 => "uint32".into(),
        Kind::Uint64 | Kind::Fixed64 => "uint64".into(),
        _ => "int64".into(),
    }
}

fn go_type(field: &FieldDescriptor) -> String {
    if field.is_map()
        && let Kind::Message(entry) = field.kind()
    {
        return format!("map[string]{}", go_single(&entry.map_entry_value_field().kind()));
    }
    let single = go_single(&field.kind());
    if field.is_list() { format!("[]{single}") } else { single }
}

/// `json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`.
fn type_error(value: &Value, path: &str, field: &FieldDescriptor) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field {}.{path} of type {}",
        json_type(value),
        field.parent_message().name(),
        go_type(field)
    )
}

fn mismatch(value: &Value, path: &str, descriptor: &MessageDescriptor) -> String {
    if path.is_empty() {
        return format!("json: cannot unmarshal {} into Go value of type {}", json_type(value), go_message(descriptor));
    }
    format!(
        "json: cannot unmarshal {} into Go struct field {path} of type {}",
        json_type(value),
        go_message(descriptor)
    )
}

fn expect(value: &Value, json: &str, path: &str, descriptor: &MessageDescriptor) -> Result<(), String> {
    if value.is_null() || json_type(value) == json { Ok(()) } else { Err(mismatch(value, path, descriptor)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> MessageDescriptor {
        super::super::message("apps/v1", "Deployment").unwrap()
    }

    #[test]
    fn unknown_fields_are_named_by_path_and_dropped() {
        let mut object = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "d", "colour": "x" },
            "spec": { "replicas": 1, "template": { "spec": { "containers": [{ "name": "a", "imagee": "nginx" }] } } } });
        let unknown = prune(&deployment(), &mut object).unwrap();
        assert_eq!(unknown, ["metadata.colour", "spec.template.spec.containers[0].imagee"]);
        assert!(object["spec"]["template"]["spec"]["containers"][0].get("imagee").is_none());
        assert_eq!(object["apiVersion"], "apps/v1");
    }

    #[test]
    fn a_value_of_the_wrong_type_gets_encoding_json_s_sentence() {
        let mut object = json!({ "spec": { "replicas": "three" } });
        assert_eq!(
            prune(&deployment(), &mut object),
            Err("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32".into())
        );
        let mut object = json!({ "spec": { "template": { "spec": { "containers": {} } } } });
        assert_eq!(
            prune(&deployment(), &mut object),
            Err("json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container".into())
        );
    }

    /// Fields Go embeds inline (`LocalObjectReference`, `VolumeSource`,
    /// `ProbeHandler`, `IngressRuleValue`) are known where the JSON has them.
    #[test]
    fn a_rich_pod_and_an_ingress_have_no_unknown_fields() {
        let mut pod = json!({ "metadata": { "name": "p" }, "spec": {
            "containers": [{ "name": "a", "image": "nginx",
                "env": [{ "name": "A", "valueFrom": { "configMapKeyRef": { "name": "c", "key": "k" } } },
                        { "name": "B", "valueFrom": { "secretKeyRef": { "name": "s", "key": "k", "optional": true } } }],
                "envFrom": [{ "configMapRef": { "name": "c" } }, { "secretRef": { "name": "s" }, "prefix": "S_" }],
                "livenessProbe": { "exec": { "command": ["true"] }, "failureThreshold": 3 },
                "readinessProbe": { "tcpSocket": { "port": 80 } },
                "lifecycle": { "preStop": { "exec": { "command": ["sleep", "1"] } } },
                "securityContext": { "runAsNonRoot": true, "capabilities": { "drop": ["ALL"] } } }],
            "volumes": [{ "name": "c", "configMap": { "name": "c", "items": [{ "key": "k", "path": "p" }] } },
                        { "name": "s", "secret": { "secretName": "s" } },
                        { "name": "x", "projected": { "sources": [{ "configMap": { "name": "c" } }, { "secret": { "name": "s" } }] } },
                        { "name": "d", "persistentVolumeClaim": { "claimName": "d" } },
                        { "name": "e", "emptyDir": {} }],
            "imagePullSecrets": [{ "name": "registry" }],
            "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                { "matchExpressions": [{ "key": "k", "operator": "In", "values": ["v"] }] }] } } } } });
        assert_eq!(prune(&super::super::message("v1", "Pod").unwrap(), &mut pod), Ok(vec![]));
        let mut ingress = json!({ "spec": { "rules": [{ "host": "kite.example.org", "http": { "paths": [
            { "path": "/", "pathType": "Prefix", "backend": { "service": { "name": "kite", "port": { "number": 80 } } } }] } }] } });
        assert_eq!(prune(&super::super::message("networking.k8s.io/v1", "Ingress").unwrap(), &mut ingress), Ok(vec![]));
    }

    #[test]
    fn special_types_take_their_json_forms() {
        let mut object = json!({ "metadata": { "creationTimestamp": "2026-12-03T00:00:00Z" },
            "spec": { "strategy": { "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 1 } },
                "template": { "spec": { "containers": [{ "name": "a", "resources": { "limits": { "cpu": "1", "memory": 5 } } }] } } } });
        assert_eq!(prune(&deployment(), &mut object), Ok(vec![]));
        let webhooks =
            super::super::message("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration").unwrap();
        let mut object = json!({ "webhooks": [{ "name": "validator.longhorn.io", "sideEffects": "None" }] });
        assert_eq!(
            prune(&webhooks, &mut object),
            Ok(vec![]),
            "a field named after its Go name is found by its JSON name"
        );
    }
}
