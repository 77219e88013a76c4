//! Deletion as the API server and its controllers do it: finalizers and
//! `deletionTimestamp`, owner-reference garbage collection (background,
//! foreground and orphan), and namespaces that go through `Terminating`.

use crate::meta;
use crate::registry::{ResourceKey, ResourceType};
use crate::state::Inner;
use crate::status::ApiError;
use crate::store::{ObjectKey, Store};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

/// `propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are deleted after the owner is gone.
    Background,
    /// The owner stays until its dependents are gone.
    Foreground,
    /// Dependents lose their owner reference and stay.
    Orphan,
}

impl Propagation {
    /// Reads the policy; `None` for an unknown one.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            "Orphan" => Some(Self::Orphan),
            _ => None,
        }
    }
}

const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";

fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn is_namespace(key: &ResourceKey) -> bool {
    key.group.is_empty() && key.plural == "namespaces"
}

/// How to delete.
#[derive(Clone, Copy, Debug)]
pub struct DeleteOptions<'a> {
    /// What happens to dependents.
    pub policy: Propagation,
    /// `("uid" | "resourceVersion", expected)`: refuse unless the object has it.
    pub precondition: Option<(&'a str, &'a str)>,
    /// Check only; change nothing.
    pub dry_run: bool,
}

impl DeleteOptions<'_> {
    /// A plain background deletion.
    pub const BACKGROUND: DeleteOptions<'static> =
        DeleteOptions { policy: Propagation::Background, precondition: None, dry_run: false };
}

/// Deletes one object: marks it with `deletionTimestamp` while finalizers
/// hold it, removes it otherwise. Returns its state after the request.
pub fn delete(
    inner: &Arc<Inner>,
    store: &mut Store,
    key: &ResourceKey,
    object_key: &ObjectKey,
    options: DeleteOptions<'_>,
) -> Result<Value, ApiError> {
    let DeleteOptions { policy, precondition, dry_run } = options;
    let qualified_plural =
        &inner.registry().by_key(key).map(|t| t.qualified_plural()).unwrap_or_else(|| key.plural.clone());
    let object =
        store.get(key, object_key).cloned().ok_or_else(|| ApiError::not_found(qualified_plural, &object_key.1))?;
    if let Some((field, expected)) = precondition {
        let actual = match field {
            "uid" => object["metadata"]["uid"].as_str(),
            _ => object["metadata"]["resourceVersion"].as_str(),
        };
        if actual != Some(expected) {
            return Err(ApiError::conflict(qualified_plural, &object_key.1));
        }
    }
    if dry_run {
        return Ok(object);
    }
    if is_namespace(key) {
        return Ok(terminate_namespace(inner, store, key, object_key, object));
    }
    let mut held = finalizers(&object);
    if crate::crd_names::is_crd_key(key) && !held.iter().any(|f| f == crate::crd_names::CLEANUP_FINALIZER) {
        held.push(crate::crd_names::CLEANUP_FINALIZER.into());
    }
    match policy {
        Propagation::Foreground if !held.iter().any(|f| f == FOREGROUND) => held.push(FOREGROUND.into()),
        Propagation::Orphan if !held.iter().any(|f| f == ORPHAN) => held.push(ORPHAN.into()),
        _ => {}
    }
    if held.is_empty() {
        let removed = store.remove(key, object_key).unwrap_or(object);
        collect_garbage(inner, store);
        return Ok(removed);
    }
    let mut marked = object.clone();
    if marked["metadata"]["deletionTimestamp"].is_null() {
        marked["metadata"]["deletionTimestamp"] = json!(meta::now());
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    }
    marked["metadata"]["finalizers"] = json!(held);
    let result = if marked == object { object } else { store.replace(key, object_key.clone(), marked) };
    collect_garbage(inner, store);
    Ok(result)
}

/// Marks a namespace `Terminating`, and after the configured time removes
/// its objects (waiting on their finalizers), then the namespace.
fn terminate_namespace(
    inner: &Arc<Inner>,
    store: &mut Store,
    key: &ResourceKey,
    object_key: &ObjectKey,
    object: Value,
) -> Value {
    if !object["metadata"]["deletionTimestamp"].is_null() {
        return object;
    }
    let mut marked = object;
    marked["metadata"]["deletionTimestamp"] = json!(meta::now());
    marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    marked["status"] = json!({"phase": "Terminating", "conditions": namespace_conditions(&Remaining::default(), None)});
    let stored = store.replace(key, object_key.clone(), marked);
    let weak = Arc::downgrade(inner);
    let namespace = object_key.1.clone();
    let delay = inner.config.namespace_termination;
    inner.runtime.spawn(async move {
        tokio::time::sleep(delay).await;
        finalize_namespace(weak, namespace).await;
    });
    stored
}

async fn finalize_namespace(weak: Weak<Inner>, namespace: String) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let done = {
            let mut store = inner.store();
            let types: Vec<Arc<ResourceType>> =
                inner.registry().all().iter().filter(|t| t.namespaced).cloned().collect();
            let mut remaining = 0;
            for resource in &types {
                let key = resource.key();
                let members: Vec<(ObjectKey, bool)> = store
                    .list(&key)
                    .filter(|(k, _)| k.0 == namespace)
                    .map(|(k, v)| (k.clone(), !v["metadata"]["deletionTimestamp"].is_null()))
                    .collect();
                remaining += members.len();
                for (object_key, deleting) in members {
                    if !deleting {
                        // Gone already (a cascade) is not an error here.
                        let _ = delete(&inner, &mut store, &key, &object_key, DeleteOptions::BACKGROUND);
                    }
                }
            }
            // The namespace controller must discover every type before it may
            // call the namespace empty: an unavailable aggregated API stalls it.
            let discovery = crate::apiservice::discovery_failure(&store);
            let stalled = discovery.is_some();
            report_remaining(&mut store, &types, &namespace, discovery);
            if remaining == 0 && !stalled {
                let key = ResourceKey { group: String::new(), plural: "namespaces".into() };
                let object_key = (String::new(), namespace.clone());
                if let Some(ns) = store.get(&key, &object_key).cloned() {
                    if finalizers(&ns).is_empty() {
                        store.remove(&key, &object_key);
                        collect_garbage(&inner, &mut store);
                    } else {
                        // Other finalizers hold the namespace: it stays Terminating.
                        let mut finalized = ns.clone();
                        finalized["spec"]["finalizers"] = json!([]);
                        if finalized != ns {
                            store.replace(&key, object_key, finalized);
                        }
                    }
                }
            }
            remaining == 0 && !stalled
        };
        if done {
            return;
        }
        drop(inner);
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// What is left in a terminating namespace: objects by `<plural>.<group>`,
/// and the finalizers holding them, with counts.
#[derive(Default, PartialEq)]
struct Remaining {
    objects: BTreeMap<String, usize>,
    finalizers: BTreeMap<String, usize>,
    /// The failed discovery that keeps the namespace from being emptied: how many group-versions, and why.
    discovery: Option<(usize, String)>,
}

/// The conditions the namespace controller reports on a terminating
/// namespace (`pkg/controller/namespace/deletion/status_condition_utils.go`;
/// a failed discovery as `ProcessDiscoverResourcesErr` words it),
/// with the transition times of `previous` kept where a status is unchanged.
fn namespace_conditions(remaining: &Remaining, previous: Option<&Value>) -> Value {
    let listed = |counts: &BTreeMap<String, usize>, verb: &str| -> String {
        counts.iter().map(|(name, n)| format!("{name} {verb} {n} resource instances")).collect::<Vec<_>>().join(", ")
    };
    let content = if remaining.objects.is_empty() {
        ("False", "ContentRemoved", "All content successfully removed".to_string())
    } else {
        ("True", "SomeResourcesRemain", format!("Some resources are remaining: {}", listed(&remaining.objects, "has")))
    };
    let finalizers = if remaining.finalizers.is_empty() {
        ("False", "ContentHasNoFinalizers", "All content-preserving finalizers finished".to_string())
    } else {
        (
            "True",
            "SomeFinalizersRemain",
            format!("Some content in the namespace has finalizers remaining: {}", listed(&remaining.finalizers, "in")),
        )
    };
    let discovery = match &remaining.discovery {
        None => ("False", "ResourcesDiscovered", "All resources successfully discovered".to_string()),
        Some((count, why)) => {
            ("True", "DiscoveryFailed", format!("Discovery failed for some groups, {count} failing: {why}"))
        }
    };
    let now = meta::now();
    let conditions = [
        ("NamespaceDeletionDiscoveryFailure", discovery),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            ("False", "ParsedGroupVersions", "All legacy kube types successfully parsed".to_string()),
        ),
        (
            "NamespaceDeletionContentFailure",
            ("False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization".to_string()),
        ),
        ("NamespaceContentRemaining", content),
        ("NamespaceFinalizersRemaining", finalizers),
    ];
    let since = |kind: &str, status: &str| {
        previous
            .and_then(|p| p.as_array())
            .and_then(|p| p.iter().find(|c| c["type"] == kind && c["status"] == status))
            .map_or_else(|| json!(now), |c| c["lastTransitionTime"].clone())
    };
    Value::Array(
        conditions
            .into_iter()
            .map(|(kind, (status, reason, message))| {
                json!({"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since(kind, status)})
            })
            .collect(),
    )
}

/// Writes what remains in `namespace` into its conditions, when that changed.
fn report_remaining(
    store: &mut Store,
    types: &[Arc<ResourceType>],
    namespace: &str,
    discovery: Option<(usize, String)>,
) {
    let mut remaining = Remaining { discovery, ..Remaining::default() };
    for resource in types {
        for (_, object) in store.list(&resource.key()).filter(|(k, _)| k.0 == namespace) {
            let name = format!("{}.{}", resource.plural, resource.group);
            *remaining.objects.entry(name).or_default() += 1;
            for finalizer in finalizers(object) {
                *remaining.finalizers.entry(finalizer).or_default() += 1;
            }
        }
    }
    let key = ResourceKey { group: String::new(), plural: "namespaces".into() };
    let object_key = (String::new(), namespace.to_string());
    let Some(ns) = store.get(&key, &object_key).cloned() else { return };
    let conditions = namespace_conditions(&remaining, Some(&ns["status"]["conditions"]));
    if ns["status"]["conditions"] != conditions {
        let mut updated = ns;
        updated["status"]["conditions"] = conditions;
        store.replace(&key, object_key, updated);
    }
}

/// One pass of the garbage collector, repeated until nothing changes:
/// dependents whose owners are all gone are deleted; dangling owner
/// references are dropped; owners deleted in the foreground wait for their
/// dependents; orphaning owners release theirs.
pub fn collect_garbage(inner: &Arc<Inner>, store: &mut Store) {
    for _ in 0..1000 {
        if !gc_pass(inner, store) {
            return;
        }
    }
    tracing::warn!("garbage collection did not settle after 1000 passes");
}

/// Where each stored object is, by uid.
type Uids = HashMap<String, (ResourceKey, ObjectKey)>;
/// The objects that name each owner uid.
type Dependents = HashMap<String, Vec<(ResourceKey, ObjectKey)>>;

/// One pass: the first change the collector finds, made; whether it found one.
fn gc_pass(inner: &Arc<Inner>, store: &mut Store) -> bool {
    let (uids, dependents) = index_owners(store);
    for key in store.keys() {
        let objects: Vec<(ObjectKey, Value)> = store.list(&key).map(|(k, v)| (k.clone(), v.clone())).collect();
        for (object_key, object) in objects {
            if settle_owner_references(inner, store, &uids, &key, &object_key, &object) {
                return true;
            }
            if object["metadata"]["deletionTimestamp"].is_null() {
                continue;
            }
            if finish_deleting_owner(inner, store, &dependents, &key, &object_key, object) {
                return true;
            }
        }
    }
    false
}

/// Every stored object by uid, and the dependents of each owner uid.
fn index_owners(store: &Store) -> (Uids, Dependents) {
    let mut uids = Uids::new();
    let mut dependents = Dependents::new();
    for key in store.keys() {
        for (object_key, object) in store.list(&key) {
            if let Some(uid) = object["metadata"]["uid"].as_str() {
                uids.insert(uid.to_string(), (key.clone(), object_key.clone()));
            }
            for owner in object["metadata"]["ownerReferences"].as_array().into_iter().flatten() {
                if let Some(uid) = owner["uid"].as_str() {
                    dependents.entry(uid.to_string()).or_default().push((key.clone(), object_key.clone()));
                }
            }
        }
    }
    (uids, dependents)
}

/// Deletes a dependent whose owners are all gone, or drops its references
/// to the owners that are; whether it changed anything.
fn settle_owner_references(
    inner: &Arc<Inner>,
    store: &mut Store,
    uids: &Uids,
    key: &ResourceKey,
    object_key: &ObjectKey,
    object: &Value,
) -> bool {
    let owners: Vec<String> = object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["uid"].as_str().map(String::from))
        .collect();
    if owners.is_empty() {
        return false;
    }
    let live: Vec<&String> = owners.iter().filter(|uid| uids.contains_key(*uid)).collect();
    if live.is_empty() {
        if object["metadata"]["deletionTimestamp"].is_null() {
            let _ = delete(inner, store, key, object_key, DeleteOptions::BACKGROUND);
            return true;
        }
    } else if live.len() < owners.len() {
        let mut pruned = object.clone();
        if let Some(refs) = pruned["metadata"]["ownerReferences"].as_array_mut() {
            refs.retain(|o| o["uid"].as_str().is_some_and(|u| uids.contains_key(u)));
        }
        store.replace(key, object_key.clone(), pruned);
        return true;
    }
    false
}

/// For an owner being deleted: an orphaning one releases its dependents
/// and its finalizer; a foreground one deletes its dependents, then
/// releases its finalizer once they are gone. Whether it changed anything.
fn finish_deleting_owner(
    inner: &Arc<Inner>,
    store: &mut Store,
    dependents: &Dependents,
    key: &ResourceKey,
    object_key: &ObjectKey,
    object: Value,
) -> bool {
    let held = finalizers(&object);
    let uid = object["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let own_dependents = dependents.get(&uid).cloned().unwrap_or_default();
    if held.iter().any(|f| f == ORPHAN) {
        release_dependents(store, &own_dependents, &uid);
        release_finalizer(store, key, object_key, object, ORPHAN);
        return true;
    }
    if held.iter().any(|f| f == FOREGROUND) {
        if own_dependents.is_empty() {
            release_finalizer(store, key, object_key, object, FOREGROUND);
            return true;
        }
        return delete_in_foreground(inner, store, &own_dependents);
    }
    false
}

/// Drops the owner reference to `uid` from each of `dependents`.
fn release_dependents(store: &mut Store, dependents: &[(ResourceKey, ObjectKey)], uid: &str) {
    for (dep_key, dep_object_key) in dependents {
        if let Some(dep) = store.get(dep_key, dep_object_key).cloned() {
            let mut released = dep.clone();
            if let Some(refs) = released["metadata"]["ownerReferences"].as_array_mut() {
                refs.retain(|o| o["uid"].as_str() != Some(uid));
            }
            store.replace(dep_key, dep_object_key.clone(), released);
        }
    }
}

/// Deletes (in the foreground) each of `dependents` not being deleted yet; whether there was one.
fn delete_in_foreground(inner: &Arc<Inner>, store: &mut Store, dependents: &[(ResourceKey, ObjectKey)]) -> bool {
    let mut changed = false;
    for (dep_key, dep_object_key) in dependents {
        let deleting =
            store.get(dep_key, dep_object_key).is_some_and(|d| !d["metadata"]["deletionTimestamp"].is_null());
        if !deleting {
            let foreground = DeleteOptions { policy: Propagation::Foreground, ..DeleteOptions::BACKGROUND };
            let _ = delete(inner, store, dep_key, dep_object_key, foreground);
            changed = true;
        }
    }
    changed
}

fn release_finalizer(store: &mut Store, key: &ResourceKey, object_key: &ObjectKey, object: Value, finalizer: &str) {
    let remaining: Vec<String> = finalizers(&object).into_iter().filter(|f| f != finalizer).collect();
    if remaining.is_empty() {
        store.remove(key, object_key);
    } else {
        let mut released = object;
        released["metadata"]["finalizers"] = json!(remaining);
        store.replace(key, object_key.clone(), released);
    }
}
