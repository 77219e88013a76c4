//! The ReplicaSet controller: pods from the template, owned by the set,
//! created or deleted until as many are active as `spec.replicas` asks,
//! and the set's `status` counting them.

use super::pods::{controlled_by, desired_replicas, is_deleting, is_ready, pod_of, report};
use crate::sim::object_fields::{name_of, namespace_of};
use crate::sim::store_io::{delete, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

/// One pass over every ReplicaSet.
pub(super) fn step(inner: &Arc<Inner>) {
    let pods = objects(inner, "", "pods");
    for set in objects(inner, "apps", "replicasets") {
        if is_deleting(&set) {
            continue;
        }
        let owned: Vec<&Value> = pods.iter().filter(|p| controlled_by(p, &set) && !is_deleting(p)).collect();
        let desired = desired_replicas(&set).max(0) as usize;
        for _ in owned.len()..desired {
            create_pod(inner, &set);
        }
        if owned.len() > desired {
            // Not-ready pods go first, as the controller prefers.
            let mut extra: Vec<&&Value> = owned.iter().collect();
            extra.sort_by_key(|p| is_ready(p));
            for pod in extra.into_iter().take(owned.len() - desired) {
                delete(inner, "", "pods", namespace_of(pod), name_of(pod));
            }
        }
        let ready = owned.iter().filter(|p| is_ready(p)).count();
        let status = json!({
            "replicas": owned.len(),
            "fullyLabeledReplicas": owned.len(),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": set["metadata"]["generation"],
        });
        report(inner, "replicaset-controller", ("apps", "v1", "replicasets"), &set, status);
    }
}

fn create_pod(inner: &Arc<Inner>, set: &Value) {
    let pod = pod_of(set, "apps/v1", "ReplicaSet", crate::meta::generate_name(&format!("{}-", name_of(set))));
    write(inner, "replicaset-controller", ("", "v1", "pods"), namespace_of(set), None, pod, false);
}
