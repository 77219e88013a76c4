//! What a wait observes, in a sentence, and whether it is what it waits for.

use super::plan::Wait;
use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kite_core::api::{GatewayPhase, KitePlatform, PLATFORM_NAME};
use kube::{Api, Client};
use serde_json::Value;

/// One look at the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// Whether the wait is over.
    pub done: bool,
    /// What was seen, for people.
    pub now: String,
    /// Whether what it waits for can no longer come (a Job that failed): the wait stops at once.
    pub failed: bool,
}

impl Observation {
    /// Not there yet, having seen `now`.
    pub fn waiting(now: String) -> Self {
        Self { done: false, now, failed: false }
    }
}

impl Wait {
    /// What it waits for, for people.
    pub fn describe(&self) -> String {
        match self {
            Wait::NamespacesGone { names } => format!("namespace {} to be gone", names.join(", ")),
            Wait::CrdsEstablished { names } => format!("{} CustomResourceDefinitions to be Established", names.len()),
            Wait::DeploymentsAvailable { namespace, names } => {
                format!("Deployments {} in {namespace} to be Available", names.join(", "))
            }
            Wait::PlatformReady => "the KitePlatform's golden images (and the gateway's exposure) to be Ready".into(),
            Wait::Gone { objects } => {
                let names: Vec<String> = objects.iter().map(super::objects::describe).collect();
                if names.len() > 3 {
                    format!("{} objects to be gone", names.len())
                } else {
                    format!("{} to be gone", names.join(", "))
                }
            }
            Wait::NoneLeft { kind, .. } => format!("every {kind} to be gone"),
            Wait::StackReady { name, version, .. } => match name {
                kite_core::api::StackName::Longhorn => {
                    format!("Longhorn {version}'s manager to roll out and its nodes to be schedulable")
                }
                _ => format!("{} {version} to be Available", name.title()),
            },
            Wait::JobComplete { namespace, name } => format!("Job {namespace}/{name} to complete"),
        }
    }

    /// What to do when it does not come.
    pub fn hint(&self) -> &'static str {
        match self {
            Wait::NamespacesGone { .. } => {
                "the conditions above name what holds the namespace (run `kite doctor`); once it is gone, run the command again"
            }
            Wait::CrdsEstablished { .. } => {
                "a CRD that is not Established was refused by the API server: `kubectl describe crd <name>` says why"
            }
            Wait::DeploymentsAvailable { .. } => {
                "`kubectl -n <namespace> describe deployment <name>` and the pods' events say why (an image the nodes cannot pull is the usual cause)"
            }
            Wait::PlatformReady => {
                "`kubectl get kiteplatform kite -o yaml` shows each image's import and the gateway's exposure; `kite doctor` checks both"
            }
            Wait::StackReady { .. } => {
                "the component's operator says why: `kubectl get kubevirt,cdi -A -o yaml` (their conditions), or for Longhorn `kubectl -n longhorn-system get daemonset,pods,nodes.longhorn.io`"
            }
            Wait::JobComplete { .. } => {
                "its pods' logs say why; for Longhorn's uninstall job, the setting deleting-confirmation-flag must be \"true\" and the manager running"
            }
            Wait::Gone { .. } | Wait::NoneLeft { .. } => {
                "the finalizers and conditions above say what holds each; Kite's own finalizers need the controller running (`kite doctor` checks it); then run the command again"
            }
        }
    }

    /// Looks once.
    pub async fn observe(&self, client: &Client) -> anyhow::Result<Observation> {
        match self {
            Wait::NamespacesGone { names } => namespaces_gone(client, names).await,
            Wait::CrdsEstablished { names } => crds_established(client, names).await,
            Wait::DeploymentsAvailable { namespace, names } => deployments_available(client, namespace, names).await,
            Wait::PlatformReady => platform_ready(client).await,
            Wait::Gone { objects } => gone(client, objects).await,
            Wait::NoneLeft { api_version, kind } => none_left(client, api_version, kind).await,
            Wait::StackReady { name, version, resource } => {
                super::stack::observe::stack_ready(client, *name, version, resource.as_ref()).await
            }
            Wait::JobComplete { namespace, name } => super::stack::observe::job_complete(client, namespace, name).await,
        }
    }
}

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

async fn namespaces_gone(client: &Client, names: &[String]) -> anyhow::Result<Observation> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut remaining = Vec::new();
    for name in names {
        if let Some(namespace) = api.get_opt(name).await.with_context(|| format!("reading namespace {name}"))? {
            remaining.push(format!("{name}: {}", termination(&namespace)));
        }
    }
    Ok(Observation {
        done: remaining.is_empty(),
        now: if remaining.is_empty() { "gone".into() } else { remaining.join(" | ") },
        failed: false,
    })
}

async fn crds_established(client: &Client, names: &[String]) -> anyhow::Result<Observation> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut waiting = Vec::new();
    for name in names {
        let crd = api.get_opt(name).await.with_context(|| format!("reading CustomResourceDefinition {name}"))?;
        let established = crd
            .as_ref()
            .and_then(|c| c.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"));
        if !established {
            waiting.push(if crd.is_some() { format!("{name} not yet Established") } else { format!("{name} missing") });
        }
    }
    let now = if waiting.is_empty() { format!("{} Established", names.len()) } else { waiting.join(", ") };
    Ok(Observation { done: waiting.is_empty(), now, failed: false })
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

async fn deployments_available(client: &Client, namespace: &str, names: &[String]) -> anyhow::Result<Observation> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let mut states = Vec::new();
    let mut done = true;
    for name in names {
        match api.get_opt(name).await.with_context(|| format!("reading Deployment {namespace}/{name}"))? {
            Some(deployment) => {
                let (ready, state) = deployment_state(&deployment);
                done &= ready;
                states.push(state);
            }
            None => {
                done = false;
                states.push(format!("{name}: missing"));
            }
        }
    }
    Ok(Observation { done, now: states.join(", "), failed: false })
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

async fn platform_ready(client: &Client) -> anyhow::Result<Observation> {
    let api: Api<KitePlatform> = Api::all(client.clone());
    match api.get_opt(PLATFORM_NAME).await.context("reading the KitePlatform")? {
        Some(platform) => {
            let (done, now) = platform_state(&platform);
            Ok(Observation { done, now, failed: false })
        }
        None => Ok(Observation::waiting("no KitePlatform".into())),
    }
}

/// What keeps a live object: `Terminating since …` with its conditions for
/// a namespace, its finalizers for anything else.
fn holding(live: &Value) -> String {
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

fn remaining(live: &[Value]) -> Observation {
    let parts: Vec<String> = live.iter().map(|l| format!("{} ({})", super::objects::describe(l), holding(l))).collect();
    Observation {
        done: parts.is_empty(),
        now: if parts.is_empty() { "gone".into() } else { parts.join(", ") },
        failed: false,
    }
}

async fn gone(client: &Client, objects: &[Value]) -> anyhow::Result<Observation> {
    let mut kinds = super::objects::Kinds::default();
    let mut live = Vec::new();
    for object in objects {
        if let Some(mut found) = super::objects::live(client, &mut kinds, object).await? {
            found["apiVersion"] = object["apiVersion"].clone();
            found["kind"] = object["kind"].clone();
            live.push(found);
        }
    }
    Ok(remaining(&live))
}

async fn none_left(client: &Client, api_version: &str, kind: &str) -> anyhow::Result<Observation> {
    let mut kinds = super::objects::Kinds::default();
    Ok(remaining(&super::objects::all_of(client, &mut kinds, api_version, kind).await?))
}
