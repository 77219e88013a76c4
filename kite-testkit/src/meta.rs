//! What the server itself fills in on objects: identity, timestamps,
//! generation, and the defaults of the built-in kinds it needs; and the
//! name an object carries ([`name_of`]).

use crate::registry::ResourceType;
use crate::status::{ApiError, Cause};
use base64::Engine;
use serde_json::{Map, Value, json};

/// The object's `metadata.name`; empty when it has none.
pub(crate) fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

/// Now, as Kubernetes writes timestamps (`2026-07-01T10:00:00Z`).
pub fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Whether `part` is lower-case letters, digits and `-`, starting and ending with a letter or digit.
fn is_label_shaped(part: &str) -> bool {
    !part.is_empty()
        && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !part.starts_with('-')
        && !part.ends_with('-')
}

/// Whether `name` is a DNS-1123 label (at most 63 characters).
pub fn is_dns_label(name: &str) -> bool {
    name.len() <= 63 && is_label_shaped(name)
}

/// Whether `name` is a DNS-1123 subdomain: at most 253 characters in all.
/// As in Kubernetes' `IsDNS1123Subdomain`, a part between dots is not held
/// to a label's 63 characters: only the whole name's length is checked.
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_label_shaped)
}

/// Refuses a name the kind does not allow, as the API server does.
pub fn check_name(resource: &ResourceType, name: &str) -> Result<(), ApiError> {
    if resource.group == "rbac.authorization.k8s.io" {
        // RBAC objects are named as path segments (`system:discovery`): `ValidatePathSegmentName`.
        if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('%') {
            let rule = if name == "." || name == ".." {
                format!("may not be '{name}'")
            } else {
                "may not contain '/' or '%'".to_string()
            };
            return Err(ApiError::invalid(
                &resource.kind,
                &resource.group,
                name,
                vec![Cause::invalid("metadata.name", format!("Invalid value: \"{name}\": {rule}"))],
            ));
        }
        return Ok(());
    }
    let label_only = resource.group.is_empty() && matches!(resource.kind.as_str(), "Namespace" | "Service");
    let ok = if label_only {
        is_dns_label(name) && !(resource.kind == "Service" && name.starts_with(|c: char| c.is_ascii_digit()))
    } else {
        is_dns_subdomain(name)
    };
    if ok {
        return Ok(());
    }
    let rule = if label_only {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
    } else {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    };
    Err(ApiError::invalid(
        &resource.kind,
        &resource.group,
        name,
        vec![Cause::invalid("metadata.name", format!("Invalid value: \"{name}\": {rule}"))],
    ))
}

/// The letters Kubernetes makes name suffixes and hashes of (`k8s.io/apimachinery/pkg/util/rand`).
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A name from `generateName`: the prefix and five random characters.
pub fn generate_name(prefix: &str) -> String {
    let alphabet = SAFE_ALPHABET;
    let random = uuid::Uuid::new_v4();
    let suffix: String =
        random.as_bytes()[..5].iter().map(|b| alphabet[*b as usize % alphabet.len()] as char).collect();
    format!("{prefix}{suffix}")
}

/// The part of an object that `metadata.generation` counts: all but metadata and status.
pub fn spec_part(object: &Value) -> Map<String, Value> {
    object
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The defaults and conversions the API server applies to built-in kinds on every write.
pub fn builtin_defaults(resource: &ResourceType, object: &mut Value, creating: bool) {
    if matches!(resource.group.as_str(), "" | "apps" | "batch") {
        crate::quantities::canonicalize(&resource.kind, object);
    }
    if matches!(resource.group.as_str(), "apps" | "batch") {
        crate::workload_defaults::apply(&resource.kind, object);
        return;
    }
    if !resource.group.is_empty() {
        return;
    }
    match resource.kind.as_str() {
        "Namespace" => {
            if creating {
                object["spec"] = json!({"finalizers": ["kubernetes"]});
                object["status"] = json!({"phase": "Active"});
            }
            let name = object["metadata"]["name"].clone();
            object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        }
        "Secret" => {
            if object.get("type").is_none_or(Value::is_null) {
                object["type"] = json!("Opaque");
            }
            if let Some(Value::Object(string_data)) = object.as_object_mut().and_then(|m| m.remove("stringData")) {
                for (key, value) in string_data {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_str().unwrap_or_default());
                    object["data"][key] = Value::String(encoded);
                }
            }
        }
        "Service" => {
            if object["spec"].get("type").is_none_or(Value::is_null) {
                object["spec"]["type"] = json!("ClusterIP");
            }
            if creating && object["spec"]["clusterIP"].is_null() && object["spec"]["type"] != "ExternalName" {
                let id = uuid::Uuid::new_v4();
                let bytes = id.as_bytes();
                let ip = format!("10.96.{}.{}", bytes[0], bytes[1].max(1));
                object["spec"]["clusterIP"] = json!(ip);
                object["spec"]["clusterIPs"] = json!([ip]);
            }
            if let Some(Value::Array(ports)) = object["spec"].get_mut("ports") {
                for port in ports {
                    if port.get("protocol").is_none_or(Value::is_null) {
                        port["protocol"] = json!("TCP");
                    }
                    if port.get("targetPort").is_none_or(Value::is_null) {
                        port["targetPort"] = port["port"].clone();
                    }
                }
            }
            if creating && object["status"].is_null() {
                object["status"] = json!({"loadBalancer": {}});
            }
        }
        "PersistentVolumeClaim" if creating => object["status"] = json!({"phase": "Pending"}),
        _ => {}
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn a_subdomain_may_have_a_part_longer_than_a_label_as_in_kubernetes() {
        let long = format!("kite-reserved-{}", "a".repeat(60));
        assert!(is_dns_subdomain(&long));
        assert!(!is_dns_label(&long));
        assert!(!is_dns_subdomain(&"a".repeat(254)));
        assert!(!is_dns_subdomain("a..b"));
    }
}
