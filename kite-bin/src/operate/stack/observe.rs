//! What the stack's waits observe: a component running at a version, and a Job's end.

use super::Upstream;
use super::release::image_tag;
use crate::operate::objects::{self, Kinds};
use crate::operate::plan::Observation;
use crate::operate::plan::owner::describe;
use anyhow::Context;
use k8s_openapi::api::batch::v1::Job;
use kite_core::api::StackName;
use kube::{Api, Client};
use serde_json::{Value, json};

/// Whether `name` runs at `version`: its custom resource `Available` and
/// reporting that version (KubeVirt, CDI), or its manager DaemonSet rolled
/// out at that version and every Longhorn node schedulable (Longhorn).
pub async fn stack_ready(
    client: &Client,
    name: StackName,
    version: &str,
    resource: Option<&Value>,
) -> anyhow::Result<Observation> {
    let upstream = Upstream::of(name);
    let mut kinds = Kinds::default();
    match (name, resource) {
        (StackName::Longhorn, _) => longhorn_ready(client, &mut kinds, upstream, version).await,
        (_, Some(resource)) => {
            let Some(live) = objects::live(client, &mut kinds, resource).await? else {
                return Ok(Observation::waiting(format!("{} missing", describe(resource))));
            };
            let reported = match name {
                StackName::KubeVirt => &live["status"]["observedKubeVirtVersion"],
                _ => &live["status"]["observedVersion"],
            };
            let available = condition(&live, "Available");
            let phase = live["status"]["phase"].as_str().unwrap_or("no phase yet");
            let now = format!(
                "{}: phase {phase}, Available {}, version {}",
                describe(resource),
                available.as_deref().unwrap_or("not reported"),
                reported.as_str().unwrap_or("not reported")
            );
            let done = available.as_deref() == Some("True") && reported == version;
            Ok(Observation { done, now, failed: false })
        }
        (_, None) => Ok(Observation::waiting(format!("{} has no custom resource to observe", name.title()))),
    }
}

fn condition(live: &Value, kind: &str) -> Option<String> {
    live["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

async fn longhorn_ready(
    client: &Client,
    kinds: &mut Kinds,
    upstream: Upstream,
    version: &str,
) -> anyhow::Result<Observation> {
    let (kind, name) = upstream.workload;
    let reference =
        json!({ "apiVersion": "apps/v1", "kind": kind, "metadata": { "name": name, "namespace": upstream.namespace } });
    let Some(manager) = objects::live(client, kinds, &reference).await? else {
        return Ok(Observation::waiting(format!("{} missing", describe(&reference))));
    };
    let status = &manager["status"];
    let count = |field: &str| status[field].as_i64().unwrap_or(0);
    let desired = count("desiredNumberScheduled");
    let rolled_out = desired > 0
        && count("numberReady") == desired
        && count("updatedNumberScheduled") == desired
        && status["observedGeneration"].as_i64() >= manager["metadata"]["generation"].as_i64();
    let running = image_tag(&manager).unwrap_or_default();
    let nodes = objects::all_of(client, kinds, "longhorn.io/v1beta2", "Node").await?;
    let schedulable = nodes.iter().filter(|n| condition(n, "Schedulable").as_deref() == Some("True")).count();
    let now = format!(
        "{name} {running}: {}/{desired} ready, {}/{desired} updated; Longhorn nodes schedulable: {schedulable}/{}",
        count("numberReady"),
        count("updatedNumberScheduled"),
        nodes.len()
    );
    let done = rolled_out && running == version && !nodes.is_empty() && schedulable == nodes.len();
    Ok(Observation { done, now, failed: false })
}

/// Whether the Job finished: done when `Complete`, failed when `Failed`, with its pods' last words.
pub async fn job_complete(client: &Client, namespace: &str, name: &str) -> anyhow::Result<Observation> {
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    let Some(job) = api.get_opt(name).await.with_context(|| format!("reading Job {namespace}/{name}"))? else {
        return Ok(Observation::waiting(format!("Job {namespace}/{name} missing")));
    };
    let status = job.status.unwrap_or_default();
    let holds =
        |kind: &str| status.conditions.iter().flatten().find(|c| c.type_ == kind && c.status == "True").cloned();
    if holds("Complete").is_some() {
        return Ok(Observation { done: true, now: format!("Job {namespace}/{name} Complete"), failed: false });
    }
    if let Some(failed) = holds("Failed") {
        let now = format!(
            "Job {namespace}/{name} Failed ({}: {}); `kubectl -n {namespace} logs job/{name}` says why",
            failed.reason.unwrap_or_default(),
            failed.message.unwrap_or_default()
        );
        return Ok(Observation { done: false, now, failed: true });
    }
    Ok(Observation::waiting(format!(
        "Job {namespace}/{name}: {} active, {} succeeded, {} failed",
        status.active.unwrap_or(0),
        status.succeeded.unwrap_or(0),
        status.failed.unwrap_or(0)
    )))
}
