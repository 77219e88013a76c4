//! Discovery: `/version`, `/api`, `/apis` and the resource lists of each
//! group version, built from the registry, so a CRD created at run time is
//! discovered at once.

use crate::registry::{Registry, ResourceType};
use serde_json::{Value, json};

const VERBS: [&str; 8] = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1", "minor": "32", "gitVersion": "v1.32.0-kite-testkit", "gitCommit": "kite-testkit",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "none",
        "compiler": "none", "platform": "linux/amd64"
    })
}

/// `/api`.
pub fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
}

fn resource_entries(resource: &ResourceType) -> Vec<Value> {
    let mut main = json!({
        "name": resource.plural, "singularName": resource.singular, "namespaced": resource.namespaced,
        "kind": resource.kind, "verbs": VERBS,
    });
    if !resource.short_names.is_empty() {
        main["shortNames"] = json!(resource.short_names);
    }
    if !resource.categories.is_empty() {
        main["categories"] = json!(resource.categories);
    }
    let mut entries = vec![main];
    if resource.status_subresource {
        entries.push(json!({
            "name": format!("{}/status", resource.plural), "singularName": "", "namespaced": resource.namespaced,
            "kind": resource.kind, "verbs": ["get", "patch", "update"]
        }));
    }
    if resource.scale.is_some() {
        entries.push(json!({
            "name": format!("{}/scale", resource.plural), "singularName": "", "namespaced": resource.namespaced,
            "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]
        }));
    }
    entries
}

/// `/api/v1` or `/apis/<group>/<version>`, or `None` when nothing is served there.
pub fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let entries: Vec<Value> = registry
        .all()
        .iter()
        .filter(|t| t.group == group && t.versions.iter().any(|v| v == version))
        .flat_map(|t| resource_entries(t))
        .collect();
    if entries.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries}))
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"name": group, "versions": versions, "preferredVersion": versions.first().cloned().unwrap_or(Value::Null)})
}

/// The groups served, with their versions: the registry's, then those only
/// aggregated APIs (`aggregated`: group, version) claim.
fn all_groups(registry: &Registry, aggregated: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    let mut groups = registry.groups();
    for (group, version) in aggregated {
        match groups.iter_mut().find(|(g, _)| g == group) {
            Some((_, versions)) if !versions.contains(version) => versions.push(version.clone()),
            Some(_) => {}
            None => groups.push((group.clone(), vec![version.clone()])),
        }
    }
    groups
}

/// `/apis`, with the groups of aggregated APIs (group, version).
pub fn groups(registry: &Registry, aggregated: &[(String, String)]) -> Value {
    let groups: Vec<Value> = all_groups(registry, aggregated).iter().map(|(g, v)| group_entry(g, v)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`, or `None` when the group is not served.
pub fn group(registry: &Registry, aggregated: &[(String, String)], name: &str) -> Option<Value> {
    all_groups(registry, aggregated).iter().find(|(g, _)| g == name).map(|(g, v)| {
        let mut entry = group_entry(g, v);
        entry["kind"] = json!("APIGroup");
        entry["apiVersion"] = json!("v1");
        entry
    })
}
