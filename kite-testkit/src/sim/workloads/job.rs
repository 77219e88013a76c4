//! The Job controller (`pkg/controller/job`): pods until `completions` have
//! succeeded, at most `parallelism` at a time, then `Complete`; past
//! `backoffLimit` failures, `Failed`. The kubelet finishes a Job's pod one
//! step after it runs (failing it when it is asked to crash).

use super::pods::{controlled_by, is_deleting, is_ready, pod_of, report};
use crate::sim::object_fields::{condition, name_of, namespace_of};
use crate::sim::store_io::{delete, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const COMPLETED: &str = "Reached expected number of succeeded pods";

fn has_condition(job: &Value, kind: &str) -> bool {
    job["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// One pass over every Job.
pub(super) fn step(inner: &Arc<Inner>) {
    let pods = objects(inner, "", "pods");
    for job in objects(inner, "batch", "jobs") {
        if is_deleting(&job) || has_condition(&job, "Complete") || has_condition(&job, "Failed") {
            continue;
        }
        let owned: Vec<&Value> = pods.iter().filter(|p| controlled_by(p, &job)).collect();
        let phase = |p: &&Value, phase: &str| p["status"]["phase"] == phase;
        let succeeded = owned.iter().filter(|p| phase(p, "Succeeded")).count() as i64;
        let failed = owned.iter().filter(|p| phase(p, "Failed")).count() as i64;
        let active: Vec<&&Value> =
            owned.iter().filter(|p| !phase(p, "Succeeded") && !phase(p, "Failed") && !is_deleting(p)).collect();
        let completions = job["spec"]["completions"].as_i64().unwrap_or(1);
        let parallelism = job["spec"]["parallelism"].as_i64().unwrap_or(1);
        let backoff_limit = job["spec"]["backoffLimit"].as_i64().unwrap_or(6);
        let previous = &job["status"]["conditions"];
        let now = json!(crate::meta::now());
        let mut status = json!({
            "startTime": job["status"]["startTime"].as_str().map_or(now.clone(), |t| json!(t)),
            "active": active.len(),
            "ready": active.iter().filter(|p| is_ready(p)).count(),
            "succeeded": succeeded,
            "failed": failed,
            "terminating": 0,
            "uncountedTerminatedPods": {},
        });
        if failed > backoff_limit {
            let message = "Job has reached the specified backoff limit";
            status["conditions"] = json!([
                condition(
                    previous,
                    "FailureTarget",
                    true,
                    "BackoffLimitExceeded",
                    message,
                    &[("lastProbeTime", now.clone())]
                ),
                condition(previous, "Failed", true, "BackoffLimitExceeded", message, &[("lastProbeTime", now.clone())]),
            ]);
            status["active"] = json!(0);
            for pod in &active {
                delete(inner, "", "pods", namespace_of(pod), name_of(pod));
            }
        } else if succeeded >= completions {
            status["conditions"] = json!([
                condition(
                    previous,
                    "SuccessCriteriaMet",
                    true,
                    "CompletionsReached",
                    COMPLETED,
                    &[("lastProbeTime", now.clone())]
                ),
                condition(
                    previous,
                    "Complete",
                    true,
                    "CompletionsReached",
                    COMPLETED,
                    &[("lastProbeTime", now.clone())]
                ),
            ]);
            status["completionTime"] = now.clone();
        } else {
            let wanted = parallelism.min(completions - succeeded).max(0) as usize;
            for _ in active.len()..wanted {
                create_pod(inner, &job);
            }
        }
        report(inner, "job-controller", ("batch", "v1", "jobs"), &job, status);
    }
}

fn create_pod(inner: &Arc<Inner>, job: &Value) {
    let (name, uid) = (name_of(job), job["metadata"]["uid"].clone());
    let mut pod = pod_of(job, "batch/v1", "Job", crate::meta::generate_name(&format!("{name}-")));
    for (label, value) in [
        ("batch.kubernetes.io/controller-uid", uid.clone()),
        ("batch.kubernetes.io/job-name", json!(name)),
        ("controller-uid", uid),
        ("job-name", json!(name)),
    ] {
        pod["metadata"]["labels"][label] = value;
    }
    write(inner, "job-controller", ("", "v1", "pods"), namespace_of(job), None, pod, false);
}
