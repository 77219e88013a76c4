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

mod config;
mod daemon_set;
mod deployment;
mod endpoints;
mod job;
mod kubelet;
mod pods;
mod replica_set;
mod stateful_set;

pub use config::{CRASH_ANNOTATION, WorkloadConfig};

use crate::state::Inner;
use crate::{Error, FakeApiServer};
use std::sync::{Arc, Weak};

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
