//! Protobuf bodies for built-in kinds, as the API server reads and writes
//! them: `application/vnd.kubernetes.protobuf`, an object in the `k8s\0`
//! envelope (a `runtime.Unknown` carrying `apiVersion`, `kind` and the
//! object's bytes). Typed clients (`kubectl create namespace`, client-go's
//! clientsets) send built-in objects this way.
//!
//! The messages come from Kubernetes' own `.proto` files (`protos/`,
//! compiled by `build.rs`), read as dynamic messages; [`to_json`] and
//! [`from_json`] map them to the JSON the rest of the server stores, with
//! the API's special types (`Time`, `Quantity`, `IntOrString`,
//! `RawExtension`, ...) written as their JSON forms. Custom resources have no
//! protobuf form, as on a real server.

mod decoding;
mod envelope;
mod from_json;
mod names;
mod to_json;

use prost_reflect::{DescriptorPool, MessageDescriptor};
use serde_json::Value;
use std::sync::OnceLock;

pub(crate) use decoding::prune;
pub(crate) use envelope::{decode, encode};

/// The protobuf media type.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Why a protobuf body could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProtobufError {
    /// The bytes are not an enveloped object.
    #[error("{0}")]
    Malformed(String),
    /// The kind has no protobuf form.
    #[error("no protobuf message for {api_version} {kind}")]
    Unknown {
        /// `group/version`.
        api_version: String,
        /// The kind.
        kind: String,
    },
}

/// The descriptors of every message in `protos/`, decoded once.
fn pool() -> Result<&'static DescriptorPool, ProtobufError> {
    static POOL: OnceLock<Result<DescriptorPool, String>> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes-protos.bin"))[..])
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| ProtobufError::Malformed(format!("the compiled Kubernetes protos cannot be read: {e}")))
}

/// The message `full_name` (such as `apimachinery.pkg.runtime.Unknown`).
fn named(full_name: &str) -> Result<MessageDescriptor, ProtobufError> {
    pool()?
        .get_message_by_name(full_name)
        .ok_or_else(|| ProtobufError::Malformed(format!("{full_name} is not among the compiled protos")))
}

/// The proto package of an API group's version, as go-to-protobuf names it
/// (with k8s-pb's shortened package names).
fn package(group: &str, version: &str) -> Option<String> {
    let short = match group {
        "" => "core",
        "apps" | "autoscaling" | "batch" | "policy" => group,
        "meta.k8s.io" => return Some(format!("apimachinery.pkg.apis.meta.{version}")),
        _ => {
            let (name, rest) = group.split_once('.')?;
            if !matches!(rest, "k8s.io" | "authorization.k8s.io") {
                return None;
            }
            name
        }
    };
    Some(format!("api.{short}.{version}"))
}

/// The message of `kind` in `api_version`; `Status` is meta's in every group.
pub(crate) fn message(api_version: &str, kind: &str) -> Result<MessageDescriptor, ProtobufError> {
    let unknown = || ProtobufError::Unknown { api_version: api_version.to_string(), kind: kind.to_string() };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let full_name = match kind {
        "Status" | "WatchEvent" => format!("apimachinery.pkg.apis.meta.v1.{kind}"),
        _ => format!("{}.{kind}", package(group, version).ok_or_else(unknown)?),
    };
    pool()?.get_message_by_name(&full_name).ok_or_else(unknown)
}

/// Whether built-in `kind` of `api_version` has a protobuf form.
pub(crate) fn has_message(api_version: &str, kind: &str) -> bool {
    message(api_version, kind).is_ok()
}

/// Whether an `Accept` header prefers protobuf to JSON.
pub(crate) fn preferred(accept: &str) -> bool {
    let mut best: Option<(f32, bool)> = None;
    for part in accept.split(',') {
        let mut pieces = part.split(';').map(str::trim);
        let media = pieces.next().unwrap_or("");
        let quality = pieces.find_map(|p| p.strip_prefix("q=")).and_then(|q| q.parse().ok()).unwrap_or(1.0);
        let protobuf = match media {
            MEDIA_TYPE => true,
            "application/json" | "application/*" | "*/*" => false,
            _ => continue,
        };
        if best.is_none_or(|(q, _)| quality > q) {
            best = Some((quality, protobuf));
        }
    }
    best.is_some_and(|(_, protobuf)| protobuf)
}

/// A JSON object as its protobuf message's bytes (no envelope).
fn object_bytes(object: &Value) -> Result<(String, String, Vec<u8>), ProtobufError> {
    let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let descriptor = message(&api_version, &kind)?;
    let message = from_json::message(&descriptor, object).map_err(ProtobufError::Malformed)?;
    Ok((api_version, kind, prost::Message::encode_to_vec(&message)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn packages_follow_the_groups() {
        assert_eq!(package("", "v1").as_deref(), Some("api.core.v1"));
        assert_eq!(package("rbac.authorization.k8s.io", "v1").as_deref(), Some("api.rbac.v1"));
        assert_eq!(package("networking.k8s.io", "v1").as_deref(), Some("api.networking.v1"));
        assert_eq!(package("kubevirt.io", "v1"), None);
        assert!(has_message("v1", "Namespace") && has_message("apps/v1", "Deployment"));
        assert!(has_message("v1", "ConfigMapList"));
        assert!(!has_message("hy3ons.github.io/v1", "KiteUser"), "custom resources have no protobuf form");
    }

    #[test]
    fn accept_headers_choose_by_order_and_quality() {
        assert!(preferred("application/vnd.kubernetes.protobuf,application/json"));
        assert!(!preferred("application/json,application/vnd.kubernetes.protobuf"));
        assert!(!preferred("application/vnd.kubernetes.protobuf;q=0.5,application/json"));
        assert!(!preferred("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"));
        assert!(!preferred(""));
    }

    /// Every special type, there and back.
    #[test]
    fn objects_survive_protobuf_and_back() {
        let deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web", "namespace": "team", "labels": { "app": "web" },
                "creationTimestamp": "2026-12-03T18:00:00Z",
                "managedFields": [{ "manager": "kubectl", "operation": "Update", "time": "2026-12-03T18:00:01Z",
                    "fieldsType": "FieldsV1", "fieldsV1": { "f:spec": { "f:replicas": {} } } }]
            },
            "spec": {
                "replicas": 0,
                "selector": { "matchLabels": { "app": "web" } },
                "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 1 } },
                "template": {
                    "metadata": { "labels": { "app": "web" } },
                    "spec": { "containers": [{ "name": "web", "image": "nginx",
                        "resources": { "limits": { "memory": "128Mi", "cpu": "500m" } },
                        "securityContext": { "allowPrivilegeEscalation": false },
                        "ports": [{ "containerPort": 80, "protocol": "TCP" }] }] }
                }
            }
        });
        let bytes = encode(&deployment).unwrap();
        assert!(bytes.starts_with(b"k8s\0"));
        assert_eq!(decode(&bytes).unwrap(), deployment);
        let pod = json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p" },
            "spec": { "containers": [{ "name": "a", "image": "nginx",
                        "readinessProbe": { "httpGet": { "path": "/healthz", "port": "http" }, "periodSeconds": 5 } }],
                      "volumes": [{ "name": "config", "configMap": { "name": "settings" } }] } });
        assert_eq!(decode(&encode(&pod).unwrap()).unwrap(), pod, "fields embedded inline stay inline");
        let mut checked = pod.clone();
        assert_eq!(prune(&message("v1", "Pod").unwrap(), &mut checked), Ok(vec![]));
        let secret = json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "s" },
            "type": "Opaque", "data": { "key": "c2VjcmV0" } });
        assert_eq!(decode(&encode(&secret).unwrap()).unwrap(), secret);
    }
}
