//! Workloads, as a cluster's controllers and kubelet run them: pods run
//! nothing, but their owners and their status move as on a real cluster, so
//! `kubectl rollout status` and `kubectl wait --for=condition=Available`
//! work, and Services list their ready pods in EndpointSlices.
//!
//! - **Deployment** (`pkg/controller/deployment`): a ReplicaSet
//!   `<name>-<pod-template-hash>` per template, scaled to `spec.replicas`, the
//!   older ones to 0; `status` counts replicas (`updatedReplicas`,
//!   `readyReplicas`, `availableReplicas`, `observedGeneration`) with the
//!   `Available` and `Progressing` conditions and their upstream reasons.
//! - **ReplicaSet** (`pkg/controller/replicaset`): pods from its template,
//!   owned by it, created or deleted to match `spec.replicas`.
//! - **Kubelet**: a pod is scheduled to the node, `Pending`, then `Running`
//!   and `Ready` with a pod IP; an image listed in
//!   [`WorkloadConfig::missing_images`] stays `ImagePullBackOff`, and a pod
//!   annotated [`CRASH_ANNOTATION`] goes `CrashLoopBackOff`.
//! - **Endpoints** (`pkg/controller/endpointslice`): a Service with a
//!   selector gets an EndpointSlice (and an `Endpoints`) of the ready pods it
//!   selects.
//! - **StatefulSet**: ordered pods `<name>-<ordinal>` with their PVCs, a new
//!   template rolled out from the highest ordinal down.
//! - **DaemonSet**: one pod on the node, replaced when the template changes.
//! - **Job**: pods until `completions` succeed (`Complete`), or `Failed` past
//!   `backoffLimit`.

mod daemon_set;
mod deployment;
mod endpoints;
mod job;
mod kubelet;
mod replica_set;
mod stateful_set;

use crate::state::Inner;
use crate::{Error, FakeApiServer};
use serde_json::Value;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// On a pod or a pod template: its containers crash (`CrashLoopBackOff`).
pub const CRASH_ANNOTATION: &str = "kite-testkit.hy3ons.github.io/crash";

/// How the simulated workloads behave.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    /// The time between two steps.
    pub step: Duration,
    /// The node pods are scheduled on (created `Ready` when missing).
    pub node_name: String,
    /// Images that cannot be pulled: their pods stay `ImagePullBackOff`.
    pub missing_images: Vec<String>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self { step: Duration::from_millis(50), node_name: "kite-node-1".into(), missing_images: Vec::new() }
    }
}

/// The running workload controllers; they stop when dropped.
#[derive(Debug)]
pub struct Workloads {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Workloads {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the workload controllers and the kubelet on `server`.
pub fn start(server: &FakeApiServer, config: WorkloadConfig) -> Result<Workloads, Error> {
    let weak = Arc::downgrade(&server.inner);
    let task = server.inner.runtime.spawn(run(weak, config));
    Ok(Workloads { task })
}

async fn run(weak: Weak<Inner>, config: WorkloadConfig) {
    let mut ticker = tokio::time::interval(config.step);
    loop {
        ticker.tick().await;
        let Some(inner) = weak.upgrade() else { return };
        kubelet::ensure_node(&inner, &config);
        deployment::step(&inner);
        replica_set::step(&inner);
        stateful_set::step(&inner);
        daemon_set::step(&inner, &config);
        job::step(&inner);
        kubelet::step(&inner, &config);
        endpoints::step(&inner);
    }
}

/// A pod of `owner`'s template, named `name` and controlled by `owner`
/// (`api_version` `kind`), for the caller to finish and create.
fn pod_of(owner: &Value, api_version: &str, kind: &str, name: String) -> Value {
    let template = &owner["spec"]["template"];
    let mut metadata = template["metadata"].clone();
    if !metadata.is_object() {
        metadata = serde_json::json!({});
    }
    metadata["name"] = serde_json::json!(name);
    metadata["ownerReferences"] = serde_json::json!([crate::sim::owner_reference(owner, api_version, kind)]);
    serde_json::json!({ "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"] })
}

/// Writes `status` into `object` (of `api`) as `manager`, when it changed.
fn report(inner: &Arc<Inner>, manager: &str, api: (&str, &str, &str), object: &Value, status: Value) {
    if object["status"] != status {
        let (namespace, name) = (crate::sim::namespace_of(object), crate::sim::name_of(object));
        crate::sim::write(inner, manager, api, namespace, Some(name), serde_json::json!({ "status": status }), true);
    }
}

/// Whether `object` is controlled by `owner` (a controller owner reference to its uid).
fn controlled_by(object: &Value, owner: &Value) -> bool {
    object["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == owner["metadata"]["uid"] && r["controller"] == true))
}

/// `spec.replicas`, 1 when unset (the API server's default).
fn desired_replicas(object: &Value) -> i64 {
    object["spec"]["replicas"].as_i64().unwrap_or(1)
}

/// Whether a pod is `Ready`.
fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Whether a pod is on its way out.
fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}
