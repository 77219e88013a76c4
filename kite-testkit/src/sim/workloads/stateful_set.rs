//! The StatefulSet controller (`pkg/controller/statefulset`), with its
//! default `OrderedReady` policy: pods `<name>-0`, `<name>-1`, ... created
//! one at a time, each once the one before is ready, with a PVC per
//! `volumeClaimTemplates` entry (`<claim>-<name>-<ordinal>`, kept when the
//! pod goes, as upstream does); scaled down from the highest ordinal; a new
//! template rolls out from the highest ordinal down, one pod at a time.

use super::deployment::template_hash;
use super::pods::{controlled_by, desired_replicas, is_deleting, is_ready, pod_of, report};
use crate::sim::object_fields::{name_of, namespace_of};
use crate::sim::store_io::{delete, find, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const REVISION_LABEL: &str = "controller-revision-hash";

fn ordinal(set: &str, pod: &Value) -> Option<i64> {
    name_of(pod).strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

/// One pass over every StatefulSet.
pub(super) fn step(inner: &Arc<Inner>) {
    let pods = objects(inner, "", "pods");
    for set in objects(inner, "apps", "statefulsets") {
        if is_deleting(&set) {
            continue;
        }
        let name = name_of(&set);
        let revision = format!("{name}-{}", template_hash(&set["spec"]["template"]));
        let desired = desired_replicas(&set);
        let mut owned: Vec<&Value> = pods.iter().filter(|p| controlled_by(p, &set) && !is_deleting(p)).collect();
        owned.sort_by_key(|p| ordinal(name, p));
        let all_ready = owned.iter().all(|p| is_ready(p));
        let present: Vec<i64> = owned.iter().filter_map(|p| ordinal(name, p)).collect();
        if let Some(missing) = (0..desired).find(|i| !present.contains(i)) {
            if all_ready {
                create_pod(inner, &set, missing, &revision);
            }
        } else if let Some(extra) = owned.iter().rev().find(|p| ordinal(name, p).is_some_and(|o| o >= desired)) {
            delete(inner, "", "pods", namespace_of(extra), name_of(extra));
        } else if all_ready
            && let Some(stale) =
                owned.iter().rev().find(|p| p["metadata"]["labels"][REVISION_LABEL] != revision.as_str())
        {
            delete(inner, "", "pods", namespace_of(stale), name_of(stale));
        }
        let updated = owned.iter().filter(|p| p["metadata"]["labels"][REVISION_LABEL] == revision.as_str()).count();
        let ready = owned.iter().filter(|p| is_ready(p)).count();
        let complete = updated == owned.len() && owned.len() as i64 == desired;
        let current = if complete {
            revision.clone()
        } else {
            set["status"]["currentRevision"].as_str().map_or_else(|| revision.clone(), str::to_string)
        };
        let status = json!({
            "observedGeneration": set["metadata"]["generation"],
            "replicas": owned.len(),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": owned.iter().filter(|p| p["metadata"]["labels"][REVISION_LABEL] == current.as_str()).count(),
            "updatedReplicas": updated,
            "currentRevision": current,
            "updateRevision": revision,
            "collisionCount": 0,
        });
        report(inner, "statefulset-controller", ("apps", "v1", "statefulsets"), &set, status);
    }
}

fn create_pod(inner: &Arc<Inner>, set: &Value, ordinal: i64, revision: &str) {
    let (namespace, name) = (namespace_of(set), name_of(set));
    let pod_name = format!("{name}-{ordinal}");
    let template = &set["spec"]["template"];
    let mut pod = pod_of(set, "apps/v1", "StatefulSet", pod_name.clone());
    let labels = &mut pod["metadata"]["labels"];
    labels[REVISION_LABEL] = json!(revision);
    labels["statefulset.kubernetes.io/pod-name"] = json!(pod_name);
    labels["apps.kubernetes.io/pod-index"] = json!(ordinal.to_string());
    let spec = &mut pod["spec"];
    spec["hostname"] = json!(pod_name);
    if let Some(service) = set["spec"]["serviceName"].as_str().filter(|s| !s.is_empty()) {
        spec["subdomain"] = json!(service);
    }
    for claim in set["spec"]["volumeClaimTemplates"].as_array().into_iter().flatten() {
        let claim_name = name_of(claim);
        let pvc_name = format!("{claim_name}-{pod_name}");
        if find(inner, "", "persistentvolumeclaims", namespace, &pvc_name).is_none() {
            let pvc = json!({ "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": { "name": pvc_name, "labels": template["metadata"]["labels"] }, "spec": claim["spec"] });
            write(inner, "statefulset-controller", ("", "v1", "persistentvolumeclaims"), namespace, None, pvc, false);
        }
        let volume = json!({ "name": claim_name, "persistentVolumeClaim": { "claimName": pvc_name } });
        match spec["volumes"].as_array_mut() {
            Some(volumes) => volumes.push(volume),
            None => spec["volumes"] = json!([volume]),
        }
    }
    write(inner, "statefulset-controller", ("", "v1", "pods"), namespace, None, pod, false);
}
