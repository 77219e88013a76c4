//! Kite's own objects: planned against what the cluster holds, then applied
//! server-side under [`super::FIELD_MANAGER`]. An object of the same name
//! that is not Kite's is never taken over.

use super::plan::{Change, ChangeKind};
use anyhow::Context;
use kite_core::reconcile::apply::contains;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, discovery};
use serde_json::Value;
use std::collections::HashMap;

/// The label that marks what `kite manifests` made.
const PART_OF: &str = "app.kubernetes.io/part-of";

/// Resolves kinds to their API resources, asking discovery once per kind.
#[derive(Default)]
pub struct Kinds {
    known: HashMap<(String, String), Option<ApiResource>>,
}

impl Kinds {
    /// The resource of `object`'s kind; `None` when the server does not serve it (yet).
    pub async fn resource(&mut self, client: &Client, object: &Value) -> anyhow::Result<Option<ApiResource>> {
        let api_version = object["apiVersion"].as_str().context("an object without apiVersion")?;
        let kind = object["kind"].as_str().context("an object without kind")?;
        let key = (api_version.to_string(), kind.to_string());
        if let Some(known) = self.known.get(&key) {
            return Ok(known.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let found = match discovery::pinned_kind(client, &gvk).await {
            Ok((resource, _)) => Some(resource),
            Err(kube::Error::Api(status)) if status.is_not_found() => None,
            Err(kube::Error::Discovery(_)) => None,
            Err(error) => return Err(error).with_context(|| format!("finding the API of {kind} ({api_version})")),
        };
        // Not found now may be served later (a CRD being established): remember only what was found.
        if found.is_some() {
            self.known.insert(key, found.clone());
        }
        Ok(found)
    }
}

/// `Kind namespace/name` or `Kind name`.
pub fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("object");
    let name = object["metadata"]["name"].as_str().unwrap_or("?");
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Whether a live object is Kite's: labelled by `kite manifests`, or of Kite's own API group.
pub fn is_kites(live: &Value) -> bool {
    let group = live["spec"]["group"].as_str();
    let api_version = live["apiVersion"].as_str().unwrap_or_default();
    live["metadata"]["labels"][PART_OF] == "kite"
        || (live["kind"] == "CustomResourceDefinition" && group == Some(kite_core::api::GROUP))
        || api_version.starts_with(&format!("{}/", kite_core::api::GROUP))
}

fn api(client: &Client, resource: &ApiResource, object: &Value) -> Api<DynamicObject> {
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

/// What applying `objects` would change; the objects of that name that are not Kite's.
pub async fn plan(client: &Client, kinds: &mut Kinds, objects: &[Value]) -> anyhow::Result<(Vec<Change>, Vec<String>)> {
    let mut changes = Vec::new();
    let mut theirs = Vec::new();
    for object in objects {
        let what = describe(object);
        let name = object["metadata"]["name"].as_str().with_context(|| format!("{what} has no name"))?;
        let live = match kinds.resource(client, object).await? {
            Some(resource) => api(client, &resource, object)
                .get_opt(name)
                .await
                .with_context(|| format!("reading {what}"))?
                .map(|live| serde_json::to_value(live).context("reading a live object"))
                .transpose()?,
            None => None,
        };
        let change = match &live {
            None => ChangeKind::Create,
            Some(live) if !is_kites(live) => {
                theirs.push(what.clone());
                continue;
            }
            Some(live) if contains(live, object) => ChangeKind::Unchanged,
            Some(_) => ChangeKind::Update,
        };
        changes.push(Change { change, object: what });
    }
    Ok((changes, theirs))
}

/// Applies `objects` in order, server-side under [`super::FIELD_MANAGER`].
pub async fn apply(client: &Client, kinds: &mut Kinds, objects: &[Value]) -> anyhow::Result<()> {
    let params = PatchParams::apply(super::FIELD_MANAGER).force();
    for object in objects {
        let what = describe(object);
        let name = object["metadata"]["name"].as_str().with_context(|| format!("{what} has no name"))?;
        let resource = kinds
            .resource(client, object)
            .await?
            .with_context(|| format!("the cluster does not serve the kind of {what}"))?;
        api(client, &resource, object)
            .patch(name, &params, &Patch::Apply(object))
            .await
            .with_context(|| format!("applying {what}"))?;
        tracing::info!(object = %what, "applied");
    }
    Ok(())
}
