//! Server-side apply of desired objects under a named field manager, that
//! writes nothing when the live object already holds what is desired.
//!
//! A steady-state pass of a reconciler therefore makes reads only: this is
//! what keeps a thousand converged machines from costing a thousand writes
//! on every resync.

use super::stores::Stores;
use crate::{Error, labels};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::ApiResource;
use kube::{Client, ResourceExt};
use serde_json::Value;

/// Whether `live` holds every field that `desired` sets, with the same value.
///
/// Maps may hold more keys in `live` (the server and other controllers add
/// fields); lists must have the same length, item by item.
///
/// ```
/// use kite_core::reconcile::apply::contains;
/// use serde_json::json;
/// let live = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.43.0.7", "ports": [{"port": 22, "protocol": "TCP"}]}});
/// assert!(contains(&live, &json!({"spec": {"type": "ClusterIP", "ports": [{"port": 22}]}})));
/// assert!(!contains(&live, &json!({"spec": {"type": "LoadBalancer"}})));
/// ```
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(live), Value::Object(desired)) => desired.iter().all(|(key, want)| match live.get(key) {
            Some(have) => contains(have, want),
            // An absent field is as good as an empty map, list or null one.
            None => is_empty(want),
        }),
        (Value::Array(live), Value::Array(desired)) => {
            live.len() == desired.len() && live.iter().zip(desired).all(|(have, want)| contains(have, want))
        }
        (Value::Number(have), Value::Number(want)) => have.as_f64() == want.as_f64(),
        // The server stores quantities in canonical form (`0.5` as `500m`).
        (Value::String(have), Value::String(want)) => have == want || crate::quantity::same(have, want),
        (Value::String(have), Value::Number(want)) => crate::quantity::same(have, &want.to_string()),
        (have, want) => have == want,
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.values().all(is_empty),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// An object as the JSON that [`ensure`] applies.
pub fn to_json(object: &impl serde::Serialize, what: &str) -> Result<Value, Error> {
    serde_json::to_value(object).map_err(|source| Error::Serde { what: what.into(), source })
}

/// Whether an object read as JSON carries Kite's managed-by label.
///
/// ```
/// use kite_core::reconcile::apply::is_ours;
/// assert!(is_ours(&serde_json::json!({"metadata": {"labels": {"hy3ons.github.io/managed-by": "kite-controller"}}})));
/// assert!(!is_ours(&serde_json::json!({"metadata": {"name": "theirs"}})));
/// ```
pub fn is_ours(object: &Value) -> bool {
    object.pointer(&format!("/metadata/labels/{}", labels::MANAGED_BY.replace('/', "~1"))).and_then(Value::as_str)
        == Some(labels::MANAGED_BY_CONTROLLER)
}

/// A handle on one kind of object: its API resource and scope.
fn api(client: &Client, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

fn describe(resource: &ApiResource, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{} {namespace}/{name}", resource.kind),
        None => format!("{} {name}", resource.kind),
    }
}

/// What [`ensure`] did.
#[derive(Debug)]
pub struct Applied {
    /// The object as the server holds it afterwards.
    pub live: Value,
    /// Whether a write was needed.
    pub written: bool,
}

/// Makes the cluster hold `desired` (a whole object: `apiVersion`, `kind`,
/// `metadata.name` and, for namespaced kinds, `metadata.namespace`).
///
/// Reads the live object first. It refuses, with [`Error::NotOurs`], to
/// touch an object of that name that lacks Kite's managed-by label; it
/// writes nothing when the live object already [`contains`] `desired`; else
/// it applies `desired` server-side under `manager`, forcing ownership of
/// the fields it sets.
pub async fn ensure(client: &Client, manager: &str, resource: &ApiResource, desired: &Value) -> Result<Applied, Error> {
    ensure_in(&Stores::default(), client, manager, resource, desired).await
}

/// [`ensure`], reading the live object from `stores` (see [`read_in`]). A
/// cache that lags a write of this reconciler's is read as that write's
/// answer; one that lags anything else only makes the apply happen again,
/// which server-side apply makes harmless. An object found absent is made
/// with [`create_in`].
pub async fn ensure_in(
    stores: &Stores,
    client: &Client,
    manager: &str,
    resource: &ApiResource,
    desired: &Value,
) -> Result<Applied, Error> {
    let (name, namespace) = name_of(desired)?;
    let Some(live) = read_in(stores, client, resource, namespace, name).await? else {
        return create_in(stores, client, manager, resource, desired).await;
    };
    if !is_ours(&live) {
        return Err(not_ours(resource, namespace, name));
    }
    if contains(&live, desired) {
        return Ok(Applied { live, written: false });
    }
    apply_in(stores, client, manager, resource, desired).await
}

/// Makes `desired`, an object the caller has just read (see [`read_in`])
/// and found absent, without reading it again. It is applied without
/// forcing, so that an object of that name someone else made meanwhile
/// (one the caches did not show yet) refuses, with a conflict, the fields
/// it holds with other values. Such a conflict is settled by reading the
/// object from the API server: Kite's is applied again with force, anyone
/// else's is left alone ([`Error::NotOurs`]).
///
/// The API has no "create, or else fail" for server-side apply, and a
/// POST would record the fields under an `Update` entry that later applies
/// could not prune. So an object someone else made within the caches' lag
/// whose fields do not clash with Kite's is merged into, not refused: that
/// is logged as a warning, naming the other field managers seen on it.
pub async fn create_in(
    stores: &Stores,
    client: &Client,
    manager: &str,
    resource: &ApiResource,
    desired: &Value,
) -> Result<Applied, Error> {
    let (name, namespace) = name_of(desired)?;
    let what = describe(resource, namespace, name);
    let params = PatchParams::apply(manager);
    match api(client, resource, namespace).patch(name, &params, &Patch::Apply(desired)).await {
        Ok(applied) => {
            let others = other_managers(&applied, manager);
            if others.is_empty() {
                tracing::debug!(object = %what, manager, "created");
            } else {
                tracing::warn!(object = %what, managers = ?others, "made an object that was there already, with fields of other managers");
            }
            let live = to_value(&applied, &what)?;
            stores.wrote(resource, &live);
            Ok(Applied { live, written: true })
        }
        Err(kube::Error::Api(status)) if status.is_conflict() => {
            tracing::debug!(object = %what, "there already, with fields of another manager; reading it");
            match read(client, resource, namespace, name).await? {
                Some(live) if is_ours(&live) => apply_in(stores, client, manager, resource, desired).await,
                _ => Err(not_ours(resource, namespace, name)),
            }
        }
        Err(source) => Err(Error::Kube { action: format!("creating {what}"), source }),
    }
}

/// Applies `desired` server-side under `manager`, forcing ownership of the
/// fields it sets, without reading it first: for an object the caller has
/// read and found to be Kite's. [`ensure_in`] otherwise.
pub async fn apply_in(
    stores: &Stores,
    client: &Client,
    manager: &str,
    resource: &ApiResource,
    desired: &Value,
) -> Result<Applied, Error> {
    let (name, namespace) = name_of(desired)?;
    let what = describe(resource, namespace, name);
    let params = PatchParams::apply(manager).force();
    let applied = api(client, resource, namespace)
        .patch(name, &params, &Patch::Apply(desired))
        .await
        .map_err(Error::kube(format!("applying {what}")))?;
    tracing::debug!(object = %what, manager, "applied");
    let live = to_value(&applied, &what)?;
    stores.wrote(resource, &live);
    Ok(Applied { live, written: true })
}

/// The field managers of `object` other than `manager`.
fn other_managers(object: &DynamicObject, manager: &str) -> Vec<String> {
    let entries = object.metadata.managed_fields.iter().flatten();
    entries.filter_map(|entry| entry.manager.clone()).filter(|other| other != manager).collect()
}

/// The name and namespace a desired object sets.
fn name_of(desired: &Value) -> Result<(&str, Option<&str>), Error> {
    let name = desired["metadata"]["name"].as_str().ok_or(Error::incomplete("desired object", "name"))?;
    Ok((name, desired["metadata"]["namespace"].as_str()))
}

fn not_ours(resource: &ApiResource, namespace: Option<&str>, name: &str) -> Error {
    Error::NotOurs { kind: resource.kind.clone(), namespace: namespace.unwrap_or_default().into(), name: name.into() }
}

fn to_value(object: &DynamicObject, what: &str) -> Result<Value, Error> {
    serde_json::to_value(object).map_err(|source| Error::Serde { what: format!("reading {what}"), source })
}

/// Reads an object, as JSON; `None` when there is none.
pub async fn read(
    client: &Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, Error> {
    read_in(&Stores::default(), client, resource, namespace, name).await
}

/// [`read`], from `stores` when they hold the object, or when they know
/// there is none ([`Stores::knows_absent`]); else from the API server.
pub async fn read_in(
    stores: &Stores,
    client: &Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, Error> {
    if let Some(cached) = stores.get(resource, namespace, name) {
        return Ok(Some(cached));
    }
    if stores.knows_absent(resource, namespace, name) {
        return Ok(None);
    }
    let what = describe(resource, namespace, name);
    let live = api(client, resource, namespace).get_opt(name).await.map_err(Error::kube(format!("reading {what}")))?;
    live.map(|object| to_value(&object, &what)).transpose()
}

/// What [`remove`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// There is no such object (any more).
    Gone,
    /// It is being deleted; look again later.
    Deleting,
    /// It exists without Kite's label, so it was left alone.
    NotOurs,
}

/// Deletes an object Kite created: only if it carries Kite's managed-by
/// label. Deletion runs in the background (dependents are collected by the
/// server's garbage collector).
pub async fn remove(
    client: &Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Removal, Error> {
    remove_in(&Stores::default(), client, resource, namespace, name).await
}

/// [`remove`], taking the word of `stores` (when they cache the kind) that
/// Kite has no such object; one they hold is read again before it is deleted.
pub async fn remove_in(
    stores: &Stores,
    client: &Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Removal, Error> {
    if stores.holds_none(resource, namespace, name) {
        // Nothing of Kite's by that name: whatever else may be there is not for Kite to delete.
        return Ok(Removal::Gone);
    }
    let what = describe(resource, namespace, name);
    let api = api(client, resource, namespace);
    let Some(live) = api.get_opt(name).await.map_err(Error::kube(format!("reading {what}")))? else {
        return Ok(Removal::Gone);
    };
    if !labels::is_managed_by_controller(live.metadata.labels.as_ref()) {
        tracing::warn!(object = %what, "not deleting an object Kite did not create");
        return Ok(Removal::NotOurs);
    }
    if live.metadata.deletion_timestamp.is_some() {
        return Ok(Removal::Deleting);
    }
    let uid = live.uid();
    let params = DeleteParams {
        preconditions: uid.map(|uid| kube::api::Preconditions { uid: Some(uid), resource_version: None }),
        ..DeleteParams::background()
    };
    stores.forget(resource, namespace, name);
    match api.delete(name, &params).await {
        Ok(_) => {
            tracing::info!(object = %what, "deleting");
            Ok(Removal::Deleting)
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(Removal::Gone),
        Err(source) => Err(Error::Kube { action: format!("deleting {what}"), source }),
    }
}
