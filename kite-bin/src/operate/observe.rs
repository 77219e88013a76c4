//! What a wait observes, in a sentence, and whether it is what it waits for:
//! each [`Wait`] looks at the cluster once.

use super::objects::{self, Kinds};
use super::plan::state::{deployment_state, platform_state, remaining, termination};
use super::plan::{Observation, Wait};
use super::stack;
use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kite_core::api::{KitePlatform, PLATFORM_NAME};
use kube::{Api, Client};
use serde_json::Value;

impl Wait {
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
                stack::observe::stack_ready(client, *name, version, resource.as_ref()).await
            }
            Wait::JobComplete { namespace, name } => stack::observe::job_complete(client, namespace, name).await,
        }
    }
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

async fn gone(client: &Client, objects: &[Value]) -> anyhow::Result<Observation> {
    let mut kinds = Kinds::default();
    let mut live = Vec::new();
    for object in objects {
        if let Some(mut found) = objects::live(client, &mut kinds, object).await? {
            found["apiVersion"] = object["apiVersion"].clone();
            found["kind"] = object["kind"].clone();
            live.push(found);
        }
    }
    Ok(remaining(&live))
}

async fn none_left(client: &Client, api_version: &str, kind: &str) -> anyhow::Result<Observation> {
    let mut kinds = Kinds::default();
    Ok(remaining(&objects::all_of(client, &mut kinds, api_version, kind).await?))
}
