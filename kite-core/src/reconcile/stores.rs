//! The watch caches a reconciler reads its children from, instead of a GET
//! per child per pass.
//!
//! A reconciler's `Controller` already watches every kind it owns, so that
//! a changed child brings its parent back. [`Stores::watch`] makes that watch
//! a reflector: the same stream triggers the controller and keeps a store
//! (without `managedFields`, which no reconciler reads), and [`Stores::get`]
//! answers from it once it has listed. The store is updated before the
//! event that triggers a pass is handed on, so a pass sees at least what
//! triggered it. The caches hold only what their watch selects (Kite's
//! labelled objects), so an object they lack is read from the API server:
//! one that is not Kite's is then seen and left alone. A cache can lag a
//! write the reconciler just made; that costs at most an idempotent
//! server-side apply, never a wrong decision.

use futures::{FutureExt, Stream};
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// One kind's cache: the store and how to name its objects.
struct Cached {
    store: Store<DynamicObject>,
    resource: ApiResource,
}

/// The watch caches of a reconciler, by kind (`group/kind`). Empty, every
/// read goes to the API server.
#[derive(Clone, Default)]
pub struct Stores {
    kinds: Arc<RwLock<HashMap<String, Cached>>>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds = self.kinds.read().map(|k| k.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        f.debug_struct("Stores").field("kinds", &kinds).finish()
    }
}

fn kind_key(resource: &ApiResource) -> String {
    format!("{}/{}", resource.group, resource.kind)
}

impl Stores {
    /// Watches `resource` (objects matching `config`), keeping them in a
    /// store [`Stores::get`] reads; the stream is for the controller's
    /// `owns_stream_with` (it yields changed and deleted objects).
    pub fn watch(
        &self,
        client: Client,
        resource: ApiResource,
        config: watcher::Config,
    ) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static {
        self.watch_keeping(client, resource, config, None)
    }

    /// [`Stores::watch`], keeping of each object only its metadata and the
    /// fields at `keep` (JSON pointers, such as `/status/nodeName`), for a
    /// kind of large objects of which a reconciler reads little.
    pub fn watch_keeping(
        &self,
        client: Client,
        resource: ApiResource,
        config: watcher::Config,
        keep: Option<&'static [&'static str]>,
    ) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static {
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        if let Ok(mut kinds) = self.kinds.write() {
            kinds.insert(kind_key(&resource), Cached { store, resource: resource.clone() });
        }
        let api = Api::<DynamicObject>::all_with(client, &resource);
        reflector::reflector(
            writer,
            watcher(api, config).default_backoff().modify(move |object: &mut DynamicObject| {
                object.managed_fields_mut().clear();
                if let Some(pointers) = keep {
                    keep_only(&mut object.data, pointers);
                }
            }),
        )
        .touched_objects()
    }

    /// The cached object `namespace/name` of `resource` as JSON, when the
    /// cache of that kind has listed and holds it. `None` says nothing:
    /// the cache holds only what its watch selects (Kite's own objects), so
    /// an object missing from it may still exist; ask the API server.
    pub fn get(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.lookup(resource, namespace, name)?.and_then(|object| serde_json::to_value(&*object).ok())
    }

    /// Whether the cache of `resource` has listed and holds no Kite object
    /// `namespace/name` (there may be one that is not Kite's).
    pub fn holds_none(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> bool {
        matches!(self.lookup(resource, namespace, name), Some(None))
    }

    /// `None` when the kind is not cached or has not listed yet; else what it holds.
    fn lookup(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Option<Arc<DynamicObject>>> {
        let kinds = self.kinds.read().ok()?;
        let cached = kinds.get(&kind_key(resource))?;
        if cached.store.wait_until_ready().now_or_never().is_none_or(|ready| ready.is_err()) {
            return None;
        }
        let mut key = ObjectRef::<DynamicObject>::new_with(name, cached.resource.clone());
        if let Some(namespace) = namespace {
            key = key.within(namespace);
        }
        Some(cached.store.get(&key))
    }
}

/// Reduces `data` to the fields at `pointers`.
fn keep_only(data: &mut Value, pointers: &[&str]) {
    let mut kept = Value::Object(serde_json::Map::new());
    for pointer in pointers {
        let Some(value) = data.pointer(pointer) else { continue };
        let mut at = &mut kept;
        let mut keys = pointer.split('/').skip(1).peekable();
        while let Some(key) = keys.next() {
            let Some(map) = at.as_object_mut() else { break };
            if keys.peek().is_none() {
                map.insert(key.to_string(), value.clone());
                break;
            }
            at = map.entry(key.to_string()).or_insert_with(|| Value::Object(serde_json::Map::new()));
        }
    }
    *data = kept;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keep_only_leaves_the_fields_asked_for_and_nothing_else() {
        let mut data = json!({"spec": {"domain": {"cpu": 1}}, "status": {"nodeName": "n1", "phase": "Running", "interfaces": [1]}});
        keep_only(&mut data, &["/status/nodeName", "/status/phase", "/status/absent"]);
        assert_eq!(data, json!({"status": {"nodeName": "n1", "phase": "Running"}}));
    }
}
