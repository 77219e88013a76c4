//! The OpenAPI documents `kubectl` reads: `/openapi/v3` says, per group
//! version, that PATCH takes `fieldValidation` (so `kubectl apply` lets the
//! server validate, as it does against a real one), and carries each
//! custom resource's schema for `kubectl explain`. `/openapi/v2` is an
//! empty document.

use crate::registry::{Registry, ResourceType};
use serde_json::{Map, Value, json};
use std::hash::{DefaultHasher, Hash, Hasher};

/// The media type of `/openapi/v2`; an empty body is an empty document.
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

fn group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for t in registry.all() {
        for v in &t.versions {
            let gv = (t.group.clone(), v.clone());
            if !out.contains(&gv) {
                out.push(gv);
            }
        }
    }
    out
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

fn hash_of(types: &[&ResourceType]) -> String {
    let mut hasher = DefaultHasher::new();
    for t in types {
        t.plural.hash(&mut hasher);
        t.crd_name.hash(&mut hasher);
        t.schema.as_ref().map(|s| s.raw().to_string()).hash(&mut hasher);
    }
    format!("{:016X}", hasher.finish())
}

/// The types served in one group version.
fn served_in<'a>(registry: &'a Registry, group: &str, version: &str) -> Vec<&'a ResourceType> {
    registry
        .all()
        .iter()
        .map(|t| t.as_ref())
        .filter(|t| t.group == group && t.versions.iter().any(|v| v == version))
        .collect()
}

/// `/openapi/v3`: the index of group-version documents.
pub fn v3_root(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, version) in group_versions(registry) {
        let types = served_in(registry, &group, &version);
        let path = gv_path(&group, &version);
        paths
            .insert(path.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash_of(&types))}));
    }
    json!({"paths": paths})
}

/// `/openapi/v3/<api/v1 | apis/group/version>`, or `None` when not served.
pub fn v3_group_version(registry: &Registry, path: &str) -> Option<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", version] => (String::new(), version.to_string()),
        ["apis", group, version] => (group.to_string(), version.to_string()),
        _ => return None,
    };
    let types = served_in(registry, &group, &version);
    if types.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for t in types {
        let gvk = json!({"group": t.group, "version": version, "kind": t.kind});
        let prefix =
            if t.group.is_empty() { format!("/api/{version}") } else { format!("/apis/{}/{version}", t.group) };
        let item = if t.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("{prefix}/{}/{{name}}", t.plural)
        };
        let query =
            |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": true});
        paths.insert(
            item,
            json!({"patch": {
                "operationId": format!("patch{}", t.kind),
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "patch",
                "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
                "responses": {"200": {"description": "OK"}}
            }}),
        );
        let schema_name =
            format!("{}.{version}.{}", if t.group.is_empty() { "io.k8s.api.core" } else { &t.group }, t.kind);
        let mut schema = t
            .schema
            .as_ref()
            .map(|s| s.raw().clone())
            .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(schema_name, schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (kite-testkit)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}
