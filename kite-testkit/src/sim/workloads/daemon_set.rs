//! The DaemonSet controller (`pkg/controller/daemon`): one pod per node
//! (there is one node), replaced when the template changes.

use super::config::WorkloadConfig;
use super::deployment::template_hash;
use super::pods::{controlled_by, is_deleting, is_ready, pod_of, report};
use crate::sim::object_fields::{name_of, namespace_of};
use crate::sim::store_io::{delete, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const REVISION_LABEL: &str = "controller-revision-hash";

/// One pass over every DaemonSet.
pub(super) fn step(inner: &Arc<Inner>, config: &WorkloadConfig) {
    let pods = objects(inner, "", "pods");
    for set in objects(inner, "apps", "daemonsets") {
        if is_deleting(&set) {
            continue;
        }
        let revision = template_hash(&set["spec"]["template"]);
        let owned: Vec<&Value> = pods.iter().filter(|p| controlled_by(p, &set) && !is_deleting(p)).collect();
        let current: Vec<&&Value> =
            owned.iter().filter(|p| p["metadata"]["labels"][REVISION_LABEL] == revision.as_str()).collect();
        for stale in owned.iter().filter(|p| p["metadata"]["labels"][REVISION_LABEL] != revision.as_str()) {
            delete(inner, "", "pods", namespace_of(stale), name_of(stale));
        }
        if current.is_empty() {
            create_pod(inner, &set, &revision, config);
        }
        let ready = current.iter().filter(|p| is_ready(p)).count();
        let status = json!({
            "observedGeneration": set["metadata"]["generation"],
            "desiredNumberScheduled": 1,
            "currentNumberScheduled": owned.len().min(1),
            "updatedNumberScheduled": current.len(),
            "numberReady": ready,
            "numberAvailable": ready,
            "numberUnavailable": 1 - ready.min(1),
            "numberMisscheduled": 0,
        });
        report(inner, "daemonset-controller", ("apps", "v1", "daemonsets"), &set, status);
    }
}

fn create_pod(inner: &Arc<Inner>, set: &Value, revision: &str, config: &WorkloadConfig) {
    let mut pod = pod_of(set, "apps/v1", "DaemonSet", crate::meta::generate_name(&format!("{}-", name_of(set))));
    pod["metadata"]["labels"][REVISION_LABEL] = json!(revision);
    pod["spec"]["nodeName"] = json!(config.node_name);
    write(inner, "daemonset-controller", ("", "v1", "pods"), namespace_of(set), None, pod, false);
}
