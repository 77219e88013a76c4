//! What live objects' states say, in a sentence: a Deployment's rollout,
//! the platform's images and exposure, a namespace's termination, what
//! keeps an object that is being deleted.

use super::observation::Observation;
use super::owner::describe;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kite_core::api::{GatewayPhase, KitePlatform};
use serde_json::Value;

/// A terminating namespace's state: since when, and its `NamespaceDeletion…`
/// and `NamespaceContentRemaining`/`NamespaceFinalizersRemaining` conditions that hold.
pub fn termination(namespace: &Namespace) -> String {
    let since = namespace
        .metadata
        .deletion_timestamp
        .as_ref()
        .map(|t| format!("Terminating since {}", t.0))
        .unwrap_or_else(|| "Terminating".into());
    let held: Vec<String> = namespace
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.status == "True")
        .map(|c| format!("{}: {}", c.type_, c.message.clone().unwrap_or_default()))
        .collect();
    if held.is_empty() { since } else { format!("{since}; {}", held.join("; ")) }
}

/// `name: 1/2 available, 2/2 updated` and whether it is Available and rolled out.
pub fn deployment_state(deployment: &Deployment) -> (bool, String) {
    let name = deployment.metadata.name.clone().unwrap_or_default();
    let wanted = deployment.spec.replicas.unwrap_or(1);
    let status = deployment.status.clone().unwrap_or_default();
    let available = status.conditions.as_ref().is_some_and(|cs| {
        cs.iter().any(|c| c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True"))
    });
    let observed = status.observed_generation.unwrap_or(0) >= deployment.metadata.generation.unwrap_or(0);
    let (ready, updated) = (status.available_replicas.unwrap_or(0), status.updated_replicas.unwrap_or(0));
    let done = available && observed && ready >= wanted && updated >= wanted;
    (done, format!("{name}: {ready}/{wanted} available, {updated}/{wanted} updated"))
}

/// The platform's images and exposure, and whether both are as wanted.
pub fn platform_state(platform: &KitePlatform) -> (bool, String) {
    let status = platform.status.clone().unwrap_or_default();
    let mut done = true;
    let mut parts = Vec::new();
    for image in &platform.spec.golden_images {
        let seen = status.golden_images.iter().find(|s| s.name == image.name);
        let ready = seen.is_some_and(|s| s.ready);
        done &= ready;
        let state = match seen {
            Some(s) if s.ready => "Ready".to_string(),
            Some(s) => [s.phase.clone(), s.progress.clone(), s.message.clone()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" "),
            None => "not reported yet".into(),
        };
        parts.push(format!("image {}: {state}", image.name));
    }
    if platform.spec.ssh_gateway.external_enabled {
        let gateway = status.ssh_gateway.as_ref();
        let ready = gateway.is_some_and(|g| g.phase == GatewayPhase::Ready);
        done &= ready;
        let state = gateway.map_or_else(
            || "not reported yet".to_string(),
            |g| format!("{:?}{}", g.phase, g.message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default()),
        );
        parts.push(format!("gateway exposure: {state}"));
    }
    if parts.is_empty() {
        parts.push("no golden images, exposure disabled".into());
    }
    (done, parts.join(", "))
}

/// What keeps a live object: `Terminating since …` with its conditions for
/// a namespace, its finalizers for anything else.
pub fn holding(live: &Value) -> String {
    if live["kind"] == "Namespace"
        && let Ok(namespace) = serde_json::from_value::<Namespace>(live.clone())
    {
        return termination(&namespace);
    }
    let finalizers: Vec<&str> =
        live["metadata"]["finalizers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    match (live["metadata"]["deletionTimestamp"].as_str(), finalizers.is_empty()) {
        (Some(since), false) => format!("Terminating since {since}, finalizers {}", finalizers.join(", ")),
        (Some(since), true) => format!("Terminating since {since}"),
        (None, _) => "not deleted yet".into(),
    }
}

/// What is left of objects being waited on until gone: done when none is.
pub fn remaining(live: &[Value]) -> Observation {
    let parts: Vec<String> = live.iter().map(|l| format!("{} ({})", describe(l), holding(l))).collect();
    Observation {
        done: parts.is_empty(),
        now: if parts.is_empty() { "gone".into() } else { parts.join(", ") },
        failed: false,
    }
}
