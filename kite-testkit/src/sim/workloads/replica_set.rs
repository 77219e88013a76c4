//! The ReplicaSet controller: pods from the template, owned by the set,
//! created or deleted until as many are active as `spec.replicas` asks,
//! and the set's `status` counting them.

use super::{controlled_by, desired_replicas, is_deleting, is_ready};
use crate::sim::{delete, name_of, namespace_of, objects, owner_reference, write};
use crate::state::Inner;
use rand::RngExt as _;
use serde_json::{Value, json};
use std::sync::Arc;

/// The letters Kubernetes makes name suffixes of (`k8s.io/apimachinery/pkg/util/rand`).
pub(super) const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Five random letters of [`SAFE`], as `generateName` adds them.
fn suffix() -> String {
    let mut rng = rand::rng();
    (0..5).map(|_| SAFE[rng.random_range(0..SAFE.len())] as char).collect()
}

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
        if set["status"] != status {
            write(
                inner,
                "replicaset-controller",
                ("apps", "v1", "replicasets"),
                namespace_of(&set),
                Some(name_of(&set)),
                json!({ "status": status }),
                true,
            );
        }
    }
}

fn create_pod(inner: &Arc<Inner>, set: &Value) {
    let template = &set["spec"]["template"];
    let mut metadata = template["metadata"].clone();
    if !metadata.is_object() {
        metadata = json!({});
    }
    metadata["name"] = json!(format!("{}-{}", name_of(set), suffix()));
    metadata["ownerReferences"] = json!([owner_reference(set, "apps/v1", "ReplicaSet")]);
    let pod = json!({ "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"] });
    write(inner, "replicaset-controller", ("", "v1", "pods"), namespace_of(set), None, pod, false);
}
