//! The scheduler and the kubelet of the one node: a pod is bound to the
//! node and `Pending`, then runs (`Running`, `Ready`, a pod IP), unless its
//! image cannot be pulled (`ImagePullBackOff`) or it is asked to crash
//! (`CrashLoopBackOff`). Nothing is started: pods only look run.

use super::config::{CRASH_ANNOTATION, WorkloadConfig};
use super::pods::is_deleting;
use crate::sim::object_fields::{condition, name_of, namespace_of};
use crate::sim::store_io::{find, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

/// The node's address.
const HOST_IP: &str = "10.0.0.10";

/// Creates the node, `Ready`, when it is not there.
pub(super) fn ensure_node(inner: &Arc<Inner>, config: &WorkloadConfig) {
    if find(inner, "", "nodes", "", &config.node_name).is_some() {
        return;
    }
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": config.node_name, "labels": {
            "kubernetes.io/hostname": config.node_name, "kubernetes.io/os": "linux", "node-role.kubernetes.io/control-plane": "true" } },
        "spec": {},
    });
    write(inner, "kubelet", ("", "v1", "nodes"), "", None, node, false);
    let now = json!(crate::meta::now());
    let status = json!({ "status": {
        "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
            "lastHeartbeatTime": now, "lastTransitionTime": now }],
        "addresses": [{ "type": "InternalIP", "address": HOST_IP }, { "type": "Hostname", "address": config.node_name }],
        "capacity": { "cpu": "2", "memory": "24Gi", "pods": "110" },
        "allocatable": { "cpu": "2", "memory": "24Gi", "pods": "110" },
        "nodeInfo": { "kubeletVersion": "v1.33.0", "containerRuntimeVersion": "containerd://2.0.0", "operatingSystem": "linux",
            "architecture": "amd64", "osImage": "kite-testkit", "kernelVersion": "6.1.0", "kubeProxyVersion": "",
            "machineID": "", "systemUUID": "", "bootID": "" },
    }});
    write(inner, "kubelet", ("", "v1", "nodes"), "", Some(&config.node_name), status, true);
}

/// Whether a pod belongs to a Job, and so finishes instead of running on.
fn runs_to_completion(pod: &Value) -> bool {
    pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|r| r.iter().any(|r| r["kind"] == "Job" && r["controller"] == true))
}

/// A pod IP from the pod's uid, in the node's pod range `10.42.0.0/24`.
fn pod_ip(pod: &Value) -> String {
    let uid = pod["metadata"]["uid"].as_str().unwrap_or_default();
    let n = uid.bytes().fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b))) % 250 + 2;
    format!("10.42.0.{n}")
}

/// One pass over every pod.
pub(super) fn step(inner: &Arc<Inner>, config: &WorkloadConfig) {
    for pod in objects(inner, "", "pods") {
        if is_deleting(&pod) {
            continue;
        }
        let (namespace, name) = (namespace_of(&pod), name_of(&pod));
        if pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
            let binding = json!({ "spec": { "nodeName": config.node_name } });
            write(inner, "default-scheduler", ("", "v1", "pods"), namespace, Some(name), binding, false);
            let previous = &pod["status"]["conditions"];
            let status = json!({ "status": { "phase": "Pending", "qosClass": "BestEffort",
                "conditions": [condition(previous, "PodScheduled", true, "", "", &[])] } });
            write(inner, "default-scheduler", ("", "v1", "pods"), namespace, Some(name), status, true);
            continue;
        }
        let terminal = matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
        if terminal {
            continue;
        }
        let status = if runs_to_completion(&pod) && pod["status"]["phase"] == "Running" {
            finish(&pod)
        } else {
            run(&pod, config)
        };
        if pod["status"] != status {
            write(inner, "kubelet", ("", "v1", "pods"), namespace, Some(name), json!({ "status": status }), true);
        }
    }
}

/// A Job's pod after it ran: `Succeeded`, its containers `Completed`
/// (exit 0), or `Failed` (exit 1) when it is asked to crash.
fn finish(pod: &Value) -> Value {
    let failed = pod["metadata"]["annotations"][CRASH_ANNOTATION] == "true";
    let (phase, reason, code) = if failed { ("Failed", "Error", 1) } else { ("Succeeded", "Completed", 0) };
    let mut status = pod["status"].clone();
    let started = status["startTime"].clone();
    let now = json!(crate::meta::now());
    status["phase"] = json!(phase);
    for container in status["containerStatuses"].as_array_mut().into_iter().flatten() {
        container["ready"] = json!(false);
        container["started"] = json!(false);
        container["state"] =
            json!({ "terminated": { "exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now } });
    }
    let previous = pod["status"]["conditions"].clone();
    status["conditions"] = json!([
        condition(&previous, "PodReadyToStartContainers", false, "", "", &[]),
        condition(&previous, "Initialized", true, "", "", &[]),
        condition(&previous, "Ready", false, "PodCompleted", "", &[]),
        condition(&previous, "ContainersReady", false, "PodCompleted", "", &[]),
        condition(&previous, "PodScheduled", true, "", "", &[]),
    ]);
    status
}

/// The status the kubelet reports for a scheduled pod.
fn run(pod: &Value, config: &WorkloadConfig) -> Value {
    let previous = &pod["status"]["conditions"];
    let containers: Vec<&Value> = pod["spec"]["containers"].as_array().into_iter().flatten().collect();
    let crashing = pod["metadata"]["annotations"][CRASH_ANNOTATION] == "true";
    let started = pod["status"]["startTime"].as_str().map_or_else(crate::meta::now, str::to_string);
    let mut statuses = Vec::new();
    let mut unready = Vec::new();
    let mut pulled = true;
    for container in &containers {
        let (name, image) =
            (container["name"].as_str().unwrap_or_default(), container["image"].as_str().unwrap_or_default());
        let mut status = json!({ "name": name, "image": image, "imageID": "", "restartCount": 0, "ready": true, "started": true,
            "state": { "running": { "startedAt": started } } });
        if config.missing_images.iter().any(|m| m == image) {
            pulled = false;
            status["ready"] = json!(false);
            status["started"] = json!(false);
            status["state"] = json!({ "waiting": { "reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\"") } });
        } else if crashing && !runs_to_completion(pod) {
            status["ready"] = json!(false);
            status["started"] = json!(false);
            status["restartCount"] = json!(1);
            status["state"] = json!({ "waiting": { "reason": "CrashLoopBackOff",
                "message": format!("back-off 10s restarting failed container={name} pod={}", name_of(pod)) } });
            status["lastState"] = json!({ "terminated": { "exitCode": 1, "reason": "Error", "startedAt": started, "finishedAt": started } });
        }
        if status["ready"] == false {
            unready.push(name.to_string());
        }
        statuses.push(status);
    }
    let ready = unready.is_empty();
    let not_ready = format!("containers with unready status: [{}]", unready.join(" "));
    let (reason, message) = if ready { ("", "") } else { ("ContainersNotReady", not_ready.as_str()) };
    json!({
        "phase": if pulled { "Running" } else { "Pending" },
        "qosClass": "BestEffort",
        "hostIP": HOST_IP,
        "hostIPs": [{ "ip": HOST_IP }],
        "podIP": pod_ip(pod),
        "podIPs": [{ "ip": pod_ip(pod) }],
        "startTime": started,
        "containerStatuses": statuses,
        "conditions": [
            condition(previous, "PodReadyToStartContainers", true, "", "", &[]),
            condition(previous, "Initialized", true, "", "", &[]),
            condition(previous, "Ready", ready, reason, message, &[]),
            condition(previous, "ContainersReady", ready, reason, message, &[]),
            condition(previous, "PodScheduled", true, "", "", &[]),
        ],
    })
}
