//! Kite's objects in the cluster: read (one, each of a list, or every one
//! of a kind), deleted only when they are the owner's, and applied
//! server-side under [`FIELD_MANAGER`]. Reading and applying go through
//! [`kite_core::reconcile::apply`], as the controller's objects do; an
//! object of the same name that is not Kite's is never taken over (the plan
//! refuses it first, see [`crate::operate::plan::change::compare`]).

use crate::operate::plan::Owner;
use crate::operate::plan::owner::describe;
use anyhow::Context;
use kite_core::reconcile::apply;
use kite_core::reconcile::stores::Stores;
use kube::api::{Api, DeleteParams, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, discovery};
use serde_json::Value;
use std::collections::HashMap;

/// The field manager of everything `kite install` applies.
pub const FIELD_MANAGER: &str = "kite-install";

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

fn api(client: &Client, resource: &ApiResource, object: &Value) -> Api<DynamicObject> {
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

/// The live object of `object`'s kind, namespace and name, as JSON; `None`
/// when there is none or its kind is not served.
pub async fn live(client: &Client, kinds: &mut Kinds, object: &Value) -> anyhow::Result<Option<Value>> {
    let what = describe(object);
    let name = object["metadata"]["name"].as_str().with_context(|| format!("{what} has no name"))?;
    let Some(resource) = kinds.resource(client, object).await? else { return Ok(None) };
    let namespace = object["metadata"]["namespace"].as_str();
    Ok(apply::read(client, &resource, namespace, name).await?)
}

/// The live object of each of `objects`, in their order (see [`live`]).
pub async fn each_live(client: &Client, kinds: &mut Kinds, objects: &[Value]) -> anyhow::Result<Vec<Option<Value>>> {
    let mut found = Vec::with_capacity(objects.len());
    for object in objects {
        found.push(live(client, kinds, object).await?);
    }
    Ok(found)
}

/// Every live object of a kind, in every namespace; none when the kind is not served.
pub async fn all_of(client: &Client, kinds: &mut Kinds, api_version: &str, kind: &str) -> anyhow::Result<Vec<Value>> {
    let probe = serde_json::json!({ "apiVersion": api_version, "kind": kind });
    let Some(resource) = kinds.resource(client, &probe).await? else { return Ok(Vec::new()) };
    let list = Api::<DynamicObject>::all_with(client.clone(), &resource)
        .list(&Default::default())
        .await
        .with_context(|| format!("listing {kind}s"))?;
    list.items
        .into_iter()
        .map(|item| {
            let mut value = serde_json::to_value(item).context("reading a live object")?;
            value["apiVersion"] = api_version.into();
            value["kind"] = kind.into();
            Ok(value)
        })
        .collect()
}

/// Deletes `objects` in order (in the background: the garbage collector
/// takes their dependents), each only if it exists and is `owner`'s; the
/// ones that are not are returned, untouched.
pub async fn delete(
    client: &Client,
    kinds: &mut Kinds,
    objects: &[Value],
    orphan: bool,
    owner: Owner,
) -> anyhow::Result<Vec<String>> {
    let params = if orphan { DeleteParams::orphan() } else { DeleteParams::background() };
    let mut theirs = Vec::new();
    for object in objects {
        let what = describe(object);
        let Some(live) = live(client, kinds, object).await? else { continue };
        if !owner.owns(&live) {
            tracing::warn!(object = %what, owner = %owner.possessive(), "not deleting what is not the owner's");
            theirs.push(what);
            continue;
        }
        if live["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        let Some(resource) = kinds.resource(client, object).await? else { continue };
        let name = live["metadata"]["name"].as_str().unwrap_or_default();
        match api(client, &resource, object).delete(name, &params).await {
            Ok(_) => tracing::info!(object = %what, "deleting"),
            Err(kube::Error::Api(status)) if status.is_not_found() => {}
            Err(error) => return Err(error).with_context(|| format!("deleting {what}")),
        }
    }
    Ok(theirs)
}

/// Applies `objects` in order, server-side under [`FIELD_MANAGER`], forcing
/// ownership of the fields they set ([`apply::apply_in`]): the plan has
/// already refused any that is not Kite's.
pub async fn apply(client: &Client, kinds: &mut Kinds, objects: &[Value]) -> anyhow::Result<()> {
    let stores = Stores::default();
    for object in objects {
        let what = describe(object);
        if !object["metadata"]["name"].is_string() {
            anyhow::bail!("{what} has no name");
        }
        let resource = kinds
            .resource(client, object)
            .await?
            .with_context(|| format!("the cluster does not serve the kind of {what}"))?;
        apply::apply_in(&stores, client, FIELD_MANAGER, &resource, object).await?;
        tracing::info!(object = %what, "applied");
    }
    Ok(())
}
