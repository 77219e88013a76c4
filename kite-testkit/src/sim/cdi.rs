//! CDI's part: DataVolumes get a Bound PVC and go through the import or
//! clone phases to `Succeeded`, with progress.

use super::config::SimulationConfig;
use super::object_fields::{condition, name_of, namespace_of, owner_reference};
use super::rules::{FAIL_ANNOTATION, Rules};
use super::store_io::{find, objects_where, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const DV: (&str, &str, &str) = ("cdi.kubevirt.io", "v1beta1", "datavolumes");
const PVC: (&str, &str, &str) = ("", "v1", "persistentvolumeclaims");
/// The PVC annotation CDI sets once a volume is populated.
const POPULATED: &str = "cdi.kubevirt.io/storage.pod.phase";

pub(super) fn step(inner: &Arc<Inner>, config: &SimulationConfig, rules: &Rules) {
    // A DataVolume being deleted, or done, has nothing more to go through.
    let unfinished = |_: &crate::store::Store, dv: &Value| {
        dv["metadata"]["deletionTimestamp"].is_null() && !matches!(phase_of(dv), "Succeeded" | "Failed")
    };
    for dv in objects_where(inner, DV.0, DV.2, unfinished) {
        advance(inner, config, rules, &dv);
    }
}

fn phase_of(dv: &Value) -> &str {
    dv["status"]["phase"].as_str().unwrap_or("")
}

fn failure(rules: &Rules, dv: &Value) -> Option<String> {
    if let Some(message) = dv["metadata"]["annotations"][FAIL_ANNOTATION].as_str() {
        return Some(message.to_string());
    }
    rules
        .failing_volumes
        .iter()
        .find(|(ns, name, _)| ns == namespace_of(dv) && name == name_of(dv))
        .map(|(_, _, message)| message.clone())
}

fn ensure_pvc(inner: &Arc<Inner>, dv: &Value) {
    let (namespace, name) = (namespace_of(dv), name_of(dv));
    if find(inner, PVC.0, PVC.2, namespace, name).is_some() {
        return;
    }
    let storage = if dv["spec"]["storage"].is_object() { &dv["spec"]["storage"] } else { &dv["spec"]["pvc"] };
    let mut spec = json!({
        "accessModes": storage.get("accessModes").cloned().unwrap_or(json!(["ReadWriteOnce"])),
        "resources": storage.get("resources").cloned().unwrap_or(json!({})),
        "volumeMode": storage.get("volumeMode").cloned().unwrap_or(json!("Filesystem")),
    });
    if let Some(class) = storage.get("storageClassName") {
        spec["storageClassName"] = class.clone();
    }
    let pvc = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "containerized-data-importer"},
                     "ownerReferences": [owner_reference(dv, "cdi.kubevirt.io/v1beta1", "DataVolume")]},
        "spec": spec,
    });
    write(inner, "cdi-controller", PVC, namespace, None, pvc, false);
    let bound = json!({"status": {"phase": "Bound", "accessModes": spec["accessModes"], "capacity": {"storage": spec["resources"]["requests"]["storage"]}}});
    write(inner, "cdi-controller", PVC, namespace, Some(name), bound, true);
}

/// The `Bound`, `Ready` and `Running` conditions of a DataVolume as CDI
/// writes them, each keeping its transition time while its status stays.
struct Conditions<'a> {
    previous: &'a Value,
    heartbeat: Value,
}

impl Conditions<'_> {
    fn of(&self, bound: bool, ready: bool, running: bool, reason: &str, message: &str) -> Value {
        let (previous, heartbeat) = (self.previous, &self.heartbeat);
        json!([
            condition(
                previous,
                "Bound",
                bound,
                if bound { "Bound" } else { "Pending" },
                if bound { "PVC is bound" } else { "PVC is pending" },
                &[("lastHeartbeatTime", heartbeat.clone())]
            ),
            condition(previous, "Ready", ready, reason, message, &[("lastHeartbeatTime", heartbeat.clone())]),
            condition(previous, "Running", running, reason, message, &[("lastHeartbeatTime", heartbeat.clone())]),
        ])
    }
}

/// The PVC a DataVolume clones (`namespace`, `name`), if it clones one.
fn clone_source(dv: &Value, namespace: &str) -> Option<(String, String)> {
    dv["spec"]["source"]["pvc"].as_object().map(|pvc| {
        (
            pvc.get("namespace").and_then(Value::as_str).unwrap_or(namespace).to_string(),
            pvc.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
        )
    })
}

/// Why a clone cannot start yet: its source PVC is missing or not populated.
fn unpopulated_source(inner: &Arc<Inner>, (source_ns, source_name): &(String, String)) -> Option<String> {
    let populated = find(inner, PVC.0, PVC.2, source_ns, source_name).is_some_and(|pvc| {
        pvc["metadata"]["annotations"][POPULATED] == "Succeeded" || pvc["metadata"]["ownerReferences"].is_null()
    });
    (!populated).then(|| format!("source PVC {source_ns}/{source_name} does not exist or is not populated yet"))
}

/// The progress after one more step of `steps`, in percent (at most 100).
fn next_progress(status: &Value, steps: u32) -> f64 {
    let current: f64 = status["progress"].as_str().and_then(|p| p.trim_end_matches('%').parse().ok()).unwrap_or(0.0);
    (current + 100.0 / steps.max(1) as f64).min(100.0)
}

/// Annotates the DataVolume's PVC as populated, once.
fn mark_populated(inner: &Arc<Inner>, namespace: &str, name: &str) {
    if let Some(pvc) = find(inner, PVC.0, PVC.2, namespace, name)
        && pvc["metadata"]["annotations"][POPULATED].is_null()
    {
        let populated = json!({"metadata": {"annotations": {POPULATED: "Succeeded"}}});
        write(inner, "cdi-controller", PVC, namespace, Some(name), populated, false);
    }
}

/// Moves a DataVolume one phase (or one progress step) on, or fails it.
fn advance(inner: &Arc<Inner>, config: &SimulationConfig, rules: &Rules, dv: &Value) {
    let status = &dv["status"];
    let phase = phase_of(dv);
    if matches!(phase, "Succeeded" | "Failed") {
        return;
    }
    let (namespace, name) = (namespace_of(dv).to_string(), name_of(dv).to_string());
    let clone_source = clone_source(dv, &namespace);
    let conditions = Conditions { previous: &status["conditions"], heartbeat: json!(crate::meta::now()) };
    if let Some(message) = failure(rules, dv) {
        let body = json!({"status": {"phase": "Failed", "progress": status["progress"].as_str().unwrap_or("N/A"),
                                     "restartCount": 0, "conditions": conditions.of(true, false, false, "Error", &message)}});
        write(inner, "cdi-controller", DV, &namespace, Some(&name), body, true);
        return;
    }
    let (scheduled, in_progress, steps) = match clone_source {
        Some(_) => ("CloneScheduled", "CloneInProgress", config.clone_steps),
        None => ("ImportScheduled", "ImportInProgress", config.import_steps),
    };
    let next = match phase {
        "" => {
            ensure_pvc(inner, dv);
            json!({"phase": "Pending", "claimName": name, "progress": "N/A", "conditions": conditions.of(true, false, false, "Pending", "")})
        }
        "Pending" => {
            if let Some(message) = clone_source.as_ref().and_then(|source| unpopulated_source(inner, source)) {
                let body = json!({"status": {"conditions": conditions.of(true, false, false, "CloneWithoutSource", &message)}});
                write(inner, "cdi-controller", DV, &namespace, Some(&name), body, true);
                return;
            }
            json!({"phase": scheduled, "progress": "N/A", "conditions": conditions.of(true, false, false, scheduled, "")})
        }
        p if p == scheduled => {
            json!({"phase": in_progress, "progress": "0.00%", "conditions": conditions.of(true, false, true, "Pod is running", "")})
        }
        p if p == in_progress => {
            let next = next_progress(status, steps);
            if next >= 100.0 {
                mark_populated(inner, &namespace, &name);
                let done = if clone_source.is_some() { "Clone Complete" } else { "Import Complete" };
                json!({"phase": "Succeeded", "progress": "100.0%", "conditions": conditions.of(true, true, false, "Completed", done)})
            } else {
                json!({"phase": in_progress, "progress": format!("{next:.2}%"), "conditions": conditions.of(true, false, true, "Pod is running", "")})
            }
        }
        _ => return,
    };
    write(inner, "cdi-controller", DV, &namespace, Some(&name), json!({"status": next}), true);
}
