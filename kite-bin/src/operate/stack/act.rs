//! What the stack's steps do at the moment they run, on what the cluster
//! holds then: release a finalizer whose operator is gone, and remove the
//! webhook configurations and APIServices of a component being removed;
//! and the reading of those hooks, which the doctor's checks share.

use crate::operate::objects::{self, Kinds};
use crate::operate::plan::owner::describe;
use crate::operate::plan::{Release, Scope};
use anyhow::Context;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ServiceReference, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, discovery};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Releases `release`'s finalizer when its operator is not running; says what it released.
pub async fn release_finalizer(client: &Client, kinds: &mut Kinds, release: &Release) -> anyhow::Result<Vec<String>> {
    let operator = objects::live(client, kinds, &release.operator).await?;
    if operator.as_ref().is_some_and(has_ready_pods) {
        return Ok(Vec::new());
    }
    let held = match &release.scope {
        Scope::Objects(list) => {
            let mut held = Vec::new();
            for object in list {
                if let Some(mut live) = objects::live(client, kinds, object).await?
                    && live["metadata"]["deletionTimestamp"].is_string()
                {
                    live["apiVersion"] = object["apiVersion"].clone();
                    live["kind"] = object["kind"].clone();
                    held.push(live);
                }
            }
            held
        }
        Scope::Group { group, namespace } => in_group(client, group, namespace).await?,
    };
    let mut notes = Vec::new();
    let operator = describe(&release.operator);
    for live in held.iter().filter(|l| has_finalizer(l, &release.finalizer)) {
        let Some(resource) = kinds.resource(client, live).await? else { continue };
        let api: Api<DynamicObject> = match live["metadata"]["namespace"].as_str() {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let kept: Vec<&Value> = live["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f.as_str() != Some(release.finalizer.as_str()))
            .collect();
        let name = live["metadata"]["name"].as_str().unwrap_or_default();
        let what = describe(live);
        // A JSON merge patch with the whole list: the finalizer goes, the others stay.
        let patch =
            json!({ "metadata": { "finalizers": kept, "resourceVersion": live["metadata"]["resourceVersion"] } });
        match api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_not_found() => continue,
            Err(error) => return Err(error).with_context(|| format!("releasing {} from {what}", release.finalizer)),
        }
        tracing::info!(object = %what, finalizer = %release.finalizer, "released: its operator is not running");
        notes.push(format!(
            "{what}: finalizer {} released, since {operator} is not running to release it",
            release.finalizer
        ));
    }
    Ok(notes)
}

/// Whether a Deployment (an available replica) or a DaemonSet (a ready pod) runs something.
pub fn has_ready_pods(workload: &Value) -> bool {
    workload["status"]["availableReplicas"].as_i64().unwrap_or(0) > 0
        || workload["status"]["numberReady"].as_i64().unwrap_or(0) > 0
}

fn has_finalizer(live: &Value, finalizer: &str) -> bool {
    live["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|f| f == finalizer))
}

/// Every object of `group`'s kinds in `namespace`, with `apiVersion` and `kind` set.
async fn in_group(client: &Client, group: &str, namespace: &str) -> anyhow::Result<Vec<Value>> {
    let Ok(served) = discovery::group(client, group).await else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    for (resource, capabilities) in served.recommended_resources() {
        if capabilities.scope != discovery::Scope::Namespaced {
            continue;
        }
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let Ok(list) = api.list(&ListParams::default()).await else { continue };
        for item in list.items {
            let mut value = serde_json::to_value(item).context("reading a live object")?;
            value["apiVersion"] = json!(resource.api_version);
            value["kind"] = json!(resource.kind);
            found.push(value);
        }
    }
    Ok(found)
}

/// Something the API server calls at a Service: a webhook configuration or an APIService.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    /// `ValidatingWebhookConfiguration`, `MutatingWebhookConfiguration` or `APIService`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The Service it calls: (namespace, name).
    pub service: (String, String),
    /// Whether that Service exists.
    pub service_exists: bool,
}

impl Hook {
    /// `ValidatingWebhookConfiguration longhorn-webhook-validator (calls longhorn-system/longhorn-admission-webhook, gone)`.
    pub fn describe(&self) -> String {
        let (namespace, service) = &self.service;
        let state = if self.service_exists { "" } else { ", which is gone" };
        format!("{} {} (calls Service {namespace}/{service}{state})", self.kind, self.name)
    }

    fn reference(&self) -> Value {
        let api_version =
            if self.kind == "APIService" { "apiregistration.k8s.io/v1" } else { "admissionregistration.k8s.io/v1" };
        json!({ "apiVersion": api_version, "kind": self.kind, "metadata": { "name": self.name } })
    }
}

/// Each configuration of kind `K` as its name and the Services its webhooks call.
async fn webhook_services<K>(
    client: &Client,
    what: &str,
    services: impl Fn(K) -> Vec<ServiceReference>,
) -> anyhow::Result<Vec<(String, Vec<ServiceReference>)>>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list =
        Api::<K>::all(client.clone()).list(&ListParams::default()).await.with_context(|| format!("listing {what}"))?;
    Ok(list.items.into_iter().map(|c| (c.meta().name.clone().unwrap_or_default(), services(c))).collect())
}

/// Every webhook configuration and APIService that calls a Service, with whether the Service exists.
pub async fn hooks(client: &Client) -> anyhow::Result<Vec<Hook>> {
    let mut found: Vec<(&'static str, String, (String, String))> = Vec::new();
    let validating =
        webhook_services(client, "validating webhook configurations", |c: ValidatingWebhookConfiguration| {
            c.webhooks.into_iter().flatten().filter_map(|h| h.client_config.service).collect()
        });
    let mutating = webhook_services(client, "mutating webhook configurations", |c: MutatingWebhookConfiguration| {
        c.webhooks.into_iter().flatten().filter_map(|h| h.client_config.service).collect()
    });
    for (kind, configurations) in
        [("ValidatingWebhookConfiguration", validating.await?), ("MutatingWebhookConfiguration", mutating.await?)]
    {
        for (name, services) in configurations {
            found.extend(services.into_iter().map(|s| (kind, name.clone(), (s.namespace, s.name))));
        }
    }
    let params = ListParams::default();
    for a in Api::<APIService>::all(client.clone()).list(&params).await.context("listing APIServices")? {
        if let Some(service) = a.spec.and_then(|s| s.service) {
            let namespace = service.namespace.unwrap_or_default();
            found.push((
                "APIService",
                a.metadata.name.unwrap_or_default(),
                (namespace, service.name.unwrap_or_default()),
            ));
        }
    }
    found.dedup();
    // Each Service is read once, however many hooks call it.
    let mut exists: HashMap<(String, String), bool> = HashMap::new();
    let mut hooks = Vec::new();
    for (kind, name, service) in found {
        let service_exists = match exists.get(&service) {
            Some(known) => *known,
            None => {
                let (namespace, name) = &service;
                let there = Api::<Service>::namespaced(client.clone(), namespace)
                    .get_opt(name)
                    .await
                    .with_context(|| format!("reading Service {namespace}/{name}"))?
                    .is_some();
                exists.insert(service.clone(), there);
                there
            }
        };
        hooks.push(Hook { kind, name, service, service_exists });
    }
    Ok(hooks)
}

/// The hooks that call a Service in `namespaces` (only those whose Service is gone, when `stale_only`).
pub fn of_namespaces<'a>(all: &'a [Hook], namespaces: &[String], stale_only: bool) -> Vec<&'a Hook> {
    all.iter().filter(|h| namespaces.contains(&h.service.0)).filter(|h| !(stale_only && h.service_exists)).collect()
}

/// Deletes the hooks that call a Service in `namespaces` (only those whose Service is gone, when `stale_only`).
pub async fn remove_hooks(client: &Client, namespaces: &[String], stale_only: bool) -> anyhow::Result<Vec<String>> {
    let all = hooks(client).await?;
    let mut kinds = Kinds::default();
    let mut notes = Vec::new();
    for hook in of_namespaces(&all, namespaces, stale_only) {
        let reference = hook.reference();
        let Some(resource) = kinds.resource(client, &reference).await? else { continue };
        match Api::<DynamicObject>::all_with(client.clone(), &resource)
            .delete(&hook.name, &DeleteParams::background())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_not_found() => continue,
            Err(error) => return Err(error).with_context(|| format!("deleting {}", hook.describe())),
        }
        tracing::info!(hook = %hook.describe(), "deleted");
        notes.push(format!("deleted {}", hook.describe()));
    }
    Ok(notes)
}
