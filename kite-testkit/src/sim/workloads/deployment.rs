//! The Deployment controller: one ReplicaSet per pod template, named
//! `<deployment>-<pod-template-hash>`, scaled to `spec.replicas` while the
//! older ones go to 0 (all at once: the steps of a rolling update are not
//! modelled), and the Deployment's `status` with the conditions and reasons
//! of `pkg/controller/deployment/util`.

use super::pods::{controlled_by, desired_replicas, is_deleting, report};
use crate::meta::SAFE_ALPHABET as SAFE;
use crate::sim::object_fields::{condition, name_of, namespace_of, owner_reference};
use crate::sim::store_io::{objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const REVISION: &str = "deployment.kubernetes.io/revision";

/// The `pod-template-hash` of a template: a 32-bit FNV-1a of it, written
/// as `rand.SafeEncodeString` writes the number.
pub(super) fn template_hash(template: &Value) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in template.to_string().bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_string().bytes().map(|b| SAFE[usize::from(b) % SAFE.len()] as char).collect()
}

/// `maxUnavailable` of a rolling update, as a number of pods (25% by default, rounded down).
fn max_unavailable(deployment: &Value, desired: i64) -> i64 {
    if deployment["spec"]["strategy"]["type"] == "Recreate" {
        return 0;
    }
    match &deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(percent) => {
            let share: i64 = percent.trim_end_matches('%').parse().unwrap_or(25);
            desired * share / 100
        }
        _ => desired * 25 / 100,
    }
}

fn revision(set: &Value) -> i64 {
    set["metadata"]["annotations"][REVISION].as_str().and_then(|r| r.parse().ok()).unwrap_or(0)
}

/// One pass over every Deployment.
pub(super) fn step(inner: &Arc<Inner>) {
    let sets = objects(inner, "apps", "replicasets");
    for deployment in objects(inner, "apps", "deployments") {
        if !is_deleting(&deployment) {
            reconcile(inner, &sets, &deployment);
        }
    }
}

/// Brings one Deployment's ReplicaSets to its template and replicas, and
/// writes its status and revision.
fn reconcile(inner: &Arc<Inner>, sets: &[Value], deployment: &Value) {
    let (namespace, name) = (namespace_of(deployment), name_of(deployment));
    let hash = template_hash(&deployment["spec"]["template"]);
    let new_name = format!("{name}-{hash}");
    let desired = desired_replicas(deployment);
    let owned: Vec<&Value> = sets.iter().filter(|s| controlled_by(s, deployment)).collect();
    let new_set = owned.iter().find(|s| name_of(s) == new_name).copied();
    let next_revision = owned.iter().map(|s| revision(s)).max().unwrap_or(0) + 1;
    match new_set {
        None => {
            create_set(inner, deployment, &new_name, &hash, desired, next_revision);
        }
        Some(set) if desired_replicas(set) != desired => {
            scale(inner, namespace, name_of(set), desired);
        }
        Some(_) => {}
    }
    for old in owned.iter().filter(|s| name_of(s) != new_name && desired_replicas(s) != 0) {
        scale(inner, namespace, name_of(old), 0);
    }
    let status = status_of(deployment, &owned, new_set, &new_name);
    report(inner, "deployment-controller", ("apps", "v1", "deployments"), deployment, status);
    let shown = new_set.map_or(next_revision, revision).to_string();
    if deployment["metadata"]["annotations"][REVISION].as_str() != Some(shown.as_str()) {
        let patch = json!({ "metadata": { "annotations": { REVISION: shown } } });
        write(inner, "deployment-controller", ("apps", "v1", "deployments"), namespace, Some(name), patch, false);
    }
}

/// A Deployment's `status`: the replicas its ReplicaSets count, and the
/// `Available` and `Progressing` conditions.
fn status_of(deployment: &Value, owned: &[&Value], new_set: Option<&Value>, new_name: &str) -> Value {
    let desired = desired_replicas(deployment);
    let count = |set: &Value, field: &str| set["status"][field].as_i64().unwrap_or(0);
    let sum = |field: &str| owned.iter().map(|s| count(s, field)).sum::<i64>();
    let updated = new_set.map_or(0, |s| count(s, "replicas"));
    let available = sum("availableReplicas");
    let specified: i64 = owned.iter().map(|s| desired_replicas(s)).sum();
    let previous = &deployment["status"]["conditions"];
    let now = json!(crate::meta::now());
    let minimum = available >= desired - max_unavailable(deployment, desired);
    let complete = new_set.is_some() && updated == desired && sum("replicas") == desired && available >= desired;
    let available_condition = available_condition(previous, minimum);
    let progressing = progressing_condition(previous, new_set.is_some(), complete, new_name);
    json!({
        "observedGeneration": deployment["metadata"]["generation"],
        "replicas": sum("replicas"),
        "updatedReplicas": updated,
        "readyReplicas": sum("readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": (specified - available).max(0),
        "conditions": [
            with_update_time(previous, &now, available_condition),
            with_update_time(previous, &now, progressing),
        ],
    })
}

/// `Available`: whether at least the replicas `maxUnavailable` allows are available.
fn available_condition(previous: &Value, minimum: bool) -> Value {
    if minimum {
        condition(previous, "Available", true, "MinimumReplicasAvailable", "Deployment has minimum availability.", &[])
    } else {
        condition(
            previous,
            "Available",
            false,
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            &[],
        )
    }
}

/// `Progressing`: the new ReplicaSet created, progressing, or available.
fn progressing_condition(previous: &Value, has_new_set: bool, complete: bool, new_name: &str) -> Value {
    let (reason, message) = match (has_new_set, complete) {
        (false, _) => ("NewReplicaSetCreated", format!("Created new replica set \"{new_name}\"")),
        (true, true) => ("NewReplicaSetAvailable", format!("ReplicaSet \"{new_name}\" has successfully progressed.")),
        (true, false) => ("ReplicaSetUpdated", format!("ReplicaSet \"{new_name}\" is progressing.")),
    };
    condition(previous, "Progressing", true, reason, &message, &[])
}

/// `c` with its `lastUpdateTime`: kept from the previous condition of its
/// type while its reason and status stay, `now` otherwise.
fn with_update_time(previous: &Value, now: &Value, mut c: Value) -> Value {
    let same = previous
        .as_array()
        .and_then(|p| p.iter().find(|o| o["type"] == c["type"]))
        .filter(|o| o["reason"] == c["reason"] && o["status"] == c["status"]);
    c["lastUpdateTime"] = same.map_or(now.clone(), |o| o["lastUpdateTime"].clone());
    c
}

fn create_set(inner: &Arc<Inner>, deployment: &Value, name: &str, hash: &str, replicas: i64, revision: i64) {
    let mut template = deployment["spec"]["template"].clone();
    template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
    let mut selector = deployment["spec"]["selector"].clone();
    selector["matchLabels"]["pod-template-hash"] = json!(hash);
    let set = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "labels": template["metadata"]["labels"],
            "annotations": { REVISION: revision.to_string() },
            "ownerReferences": [owner_reference(deployment, "apps/v1", "Deployment")],
        },
        "spec": { "replicas": replicas, "selector": selector, "template": template },
    });
    write(inner, "deployment-controller", ("apps", "v1", "replicasets"), namespace_of(deployment), None, set, false);
}

fn scale(inner: &Arc<Inner>, namespace: &str, name: &str, replicas: i64) {
    let patch = json!({ "spec": { "replicas": replicas } });
    write(inner, "deployment-controller", ("apps", "v1", "replicasets"), namespace, Some(name), patch, false);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_hashes_are_stable_safe_text_and_differ_by_template() {
        let a = template_hash(&json!({ "spec": { "containers": [{ "name": "web", "image": "nginx:1" }] } }));
        let b = template_hash(&json!({ "spec": { "containers": [{ "name": "web", "image": "nginx:2" }] } }));
        assert_eq!(a, template_hash(&json!({ "spec": { "containers": [{ "name": "web", "image": "nginx:1" }] } })));
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| SAFE.contains(&c)) && !a.is_empty(), "{a}");
    }
}
