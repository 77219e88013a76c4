//! Kite's own objects: planned against what the cluster holds, then applied
//! server-side under [`super::FIELD_MANAGER`]. An object of the same name
//! that is not Kite's is never taken over.

use super::plan::{Change, ChangeKind};
use anyhow::Context;
use kite_core::reconcile::apply::contains;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
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
    format!("{kind} {}", kite_core::key::key(object["metadata"]["namespace"].as_str(), name))
}

/// Whose objects a command may change or delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Kite's own ([`is_kites`]).
    Kite,
    /// What Kite applied from a stack component's release ([`super::stack::STACK_LABEL`]).
    Stack(kite_core::api::StackName),
}

impl Owner {
    /// Whether `live` is this owner's.
    pub fn owns(self, live: &Value) -> bool {
        match self {
            Owner::Kite => is_kites(live),
            Owner::Stack(name) => live["metadata"]["labels"][super::stack::STACK_LABEL] == name.id(),
        }
    }

    /// Whose, for people: `Kite's`, `KubeVirt's (installed by kite install)`.
    pub fn possessive(self) -> String {
        match self {
            Owner::Kite => "Kite's".into(),
            Owner::Stack(name) => format!("{}'s as kite install applied it", name.title()),
        }
    }
}

/// Just what names an object (`apiVersion`, `kind`, `metadata.name` and `namespace`): for deleting it and waiting for it.
pub fn reference(object: &Value) -> Value {
    let mut metadata = serde_json::json!({ "name": object["metadata"]["name"] });
    if let Some(namespace) = object["metadata"]["namespace"].as_str() {
        metadata["namespace"] = namespace.into();
    }
    serde_json::json!({ "apiVersion": object["apiVersion"], "kind": object["kind"], "metadata": metadata })
}

/// Whether a live object is Kite's: labelled by `kite manifests` or by Kite's controller, or of Kite's own API group.
pub fn is_kites(live: &Value) -> bool {
    let group = live["spec"]["group"].as_str();
    let api_version = live["apiVersion"].as_str().unwrap_or_default();
    live["metadata"]["labels"][PART_OF] == "kite"
        || (live["kind"] == "CustomResourceDefinition" && group == Some(kite_core::api::GROUP))
        || api_version.starts_with(&format!("{}/", kite_core::api::GROUP))
        || kite_core::reconcile::apply::is_ours(live)
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
    api(client, &resource, object)
        .get_opt(name)
        .await
        .with_context(|| format!("reading {what}"))?
        .map(|live| serde_json::to_value(live).context("reading a live object"))
        .transpose()
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

/// What applying `objects` would change; the objects of that name that are not Kite's.
pub async fn plan(client: &Client, kinds: &mut Kinds, objects: &[Value]) -> anyhow::Result<(Vec<Change>, Vec<String>)> {
    plan_as(client, kinds, objects, Owner::Kite).await
}

/// What applying `objects` would change; the objects of that name that are not `owner`'s.
pub async fn plan_as(
    client: &Client,
    kinds: &mut Kinds,
    objects: &[Value],
    owner: Owner,
) -> anyhow::Result<(Vec<Change>, Vec<String>)> {
    let mut changes = Vec::new();
    let mut theirs = Vec::new();
    for object in objects {
        let what = describe(object);
        let live = live(client, kinds, object).await?;
        let change = match &live {
            None => ChangeKind::Create,
            Some(live) if !owner.owns(live) => {
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
