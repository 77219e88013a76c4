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
//! one that is not Kite's is then seen and left alone. A cache that lags a
//! write the reconciler just made is stood in for by that write's answer
//! (see [`Stores`]); one that lags anything else costs at most an
//! idempotent server-side apply, never a wrong decision.

use futures::{FutureExt, Stream, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// One kind's cache: the store and how to name its objects.
struct Cached {
    store: Store<DynamicObject>,
    resource: ApiResource,
}

/// How long an object the reconciler wrote stands in for its cache's copy
/// while the cache does not show that write yet. Past it, a cache still
/// behind is not trusted either: the object is read from the API server.
const WRITTEN_STANDS_FOR: Duration = Duration::from_secs(30);

/// An object as the API server answered a write of it.
struct Written {
    resource_version: u64,
    live: Arc<Value>,
    at: Instant,
}

/// The watch caches of a reconciler, by kind (`group/kind`). Empty, every
/// read goes to the API server.
///
/// Each cache is a watch, and a watch shows a write some time after the
/// write's answer: the next pass over the same parent, brought by another
/// watch, may come first. So the objects written through
/// [`crate::reconcile::apply`] are kept, as answered, until their cache
/// shows that version (or [`WRITTEN_STANDS_FOR`] passes), and read from
/// there meanwhile, instead of with a GET that would only repeat the
/// answer.
#[derive(Clone, Default)]
pub struct Stores {
    kinds: Arc<RwLock<HashMap<String, Cached>>>,
    written: Arc<Mutex<HashMap<String, Written>>>,
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
        let written = self.written.clone();
        let kind = resource.clone();
        let objects = reflector::reflector(
            writer,
            watcher(api, config).default_backoff().modify(move |object: &mut DynamicObject| {
                object.managed_fields_mut().clear();
                if let Some(pointers) = keep {
                    keep_only(&mut object.data, pointers);
                }
            }),
        )
        .touched_objects()
        .inspect(move |object| {
            // A write the cache now shows is no longer kept (see `Stores`).
            if let Ok(object) = object {
                caught_up(&written, &kind, object);
            }
        });
        in_own_task(objects)
    }

    /// The cached object `namespace/name` of `resource` as JSON, when the
    /// cache of that kind has listed and holds it, or the answer to this
    /// reconciler's write of it when the cache does not show that write yet.
    /// `None` says nothing: the cache holds only what its watch selects
    /// (Kite's own objects), so an object missing from it may still exist;
    /// ask the API server.
    pub fn get(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> Option<Value> {
        let cached = self.lookup(resource, namespace, name)?;
        let cached_version = cached.as_ref().and_then(|object| version(object.metadata.resource_version.as_deref()));
        if let Some(written) = self.written_after(&written_key(resource, namespace, name), cached_version) {
            return Some(written);
        }
        cached.and_then(|object| serde_json::to_value(&*object).ok())
    }

    /// Whether the cache of `resource` has listed and holds no Kite object
    /// `namespace/name` (there may be one that is not Kite's), nor has this
    /// reconciler written one lately.
    pub fn holds_none(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> bool {
        matches!(self.lookup(resource, namespace, name), Some(None))
            && self.written_after(&written_key(resource, namespace, name), None).is_none()
    }

    /// Keeps `live`, the API server's answer to a write of an object of a
    /// cached kind, until the cache shows that version (see [`Stores`]).
    pub fn wrote(&self, resource: &ApiResource, live: &Value) {
        let namespace = live.pointer("/metadata/namespace").and_then(Value::as_str);
        let (Some(name), Some(resource_version)) = (
            live.pointer("/metadata/name").and_then(Value::as_str),
            version(live.pointer("/metadata/resourceVersion").and_then(Value::as_str)),
        ) else {
            return;
        };
        if self.lookup(resource, namespace, name).is_none() {
            return;
        }
        let written = Written { resource_version, live: Arc::new(live.clone()), at: Instant::now() };
        if let Ok(mut all) = self.written.lock() {
            all.retain(|_, w| w.at.elapsed() < WRITTEN_STANDS_FOR);
            all.insert(written_key(resource, namespace, name), written);
        }
    }

    /// Forgets a write of `namespace/name` (the object is being deleted).
    pub fn forget(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) {
        if let Ok(mut all) = self.written.lock() {
            all.remove(&written_key(resource, namespace, name));
        }
    }

    /// The answer to this reconciler's write of `key`, if the cache shows
    /// an older version of it (`cached`) or none, and it is recent enough.
    fn written_after(&self, key: &str, cached: Option<u64>) -> Option<Value> {
        let mut all = self.written.lock().ok()?;
        let written = all.get(key)?;
        if written.at.elapsed() >= WRITTEN_STANDS_FOR || cached.is_some_and(|c| c >= written.resource_version) {
            // The cache caught up (or it is too late to stand in for it).
            all.remove(key);
            return None;
        }
        Some((*written.live).clone())
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

/// Forgets the kept write of `object` once its cache shows that version or a later one.
fn caught_up(written: &Mutex<HashMap<String, Written>>, resource: &ApiResource, object: &DynamicObject) {
    let Some(shown) = version(object.metadata.resource_version.as_deref()) else { return };
    let key = written_key(resource, object.metadata.namespace.as_deref(), &object.name_any());
    if let Ok(mut all) = written.lock()
        && all.get(&key).is_some_and(|w| w.resource_version <= shown)
    {
        all.remove(&key);
    }
}

fn written_key(resource: &ApiResource, namespace: Option<&str>, name: &str) -> String {
    format!("{}/{}/{name}", kind_key(resource), namespace.unwrap_or_default())
}

/// A resourceVersion as a number to compare, when it is one (the API
/// server's are: etcd's revisions). Another kind of version is never
/// compared, so a write of such an object is not kept.
fn version(resource_version: Option<&str>) -> Option<u64> {
    resource_version?.parse().ok()
}

/// How many changed objects a cache's task holds for a controller that has
/// not taken them yet; past that, the task (and so its cache) waits.
const HANDED_ON: usize = 4096;

/// Runs `objects` (a reflector: polling it updates its store) in a task of
/// its own and hands on what it yields. Polled by the controller instead, a
/// store would be updated only as fast as a busy controller polls, and its
/// passes would find it behind and read from the API server. The task ends
/// when the stream does or when its taker is dropped.
fn in_own_task<T: Send + 'static>(
    objects: impl Stream<Item = T> + Send + 'static,
) -> impl Stream<Item = T> + Send + 'static {
    let (sender, receiver) = tokio::sync::mpsc::channel(HANDED_ON);
    tokio::spawn(async move {
        let mut objects = std::pin::pin!(objects);
        loop {
            tokio::select! {
                () = sender.closed() => break,
                next = objects.next() => match next {
                    Some(object) => {
                        if sender.send(object).await.is_err() {
                            break;
                        }
                    }
                    None => break,
                },
            }
        }
    });
    futures::stream::unfold(receiver, |mut receiver| async move { receiver.recv().await.map(|item| (item, receiver)) })
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

    /// Stores with one cached kind, Services, fed by the writer returned.
    fn stores_of_services() -> (Stores, ApiResource, reflector::store::Writer<DynamicObject>) {
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&());
        let mut writer = reflector::store::Writer::new(resource.clone());
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let stores = Stores::default();
        let cached = Cached { store: writer.as_reader(), resource: resource.clone() };
        stores.kinds.write().unwrap().insert(kind_key(&resource), cached);
        (stores, resource, writer)
    }

    fn service(version: &str, port: u16) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "vm-1", "namespace": "ns", "resourceVersion": version},
               "spec": {"ports": [{"port": port}]}})
    }

    #[test]
    fn a_write_stands_in_for_its_cache_until_the_cache_shows_that_version() {
        let (stores, resource, mut writer) = stores_of_services();
        assert!(stores.holds_none(&resource, Some("ns"), "vm-1"));
        assert_eq!(stores.get(&resource, Some("ns"), "vm-1"), None, "nothing written, nothing cached");

        stores.wrote(&resource, &service("7", 22));
        assert_eq!(
            stores.get(&resource, Some("ns"), "vm-1"),
            Some(service("7", 22)),
            "the cache lacks it: the write's answer"
        );
        assert!(!stores.holds_none(&resource, Some("ns"), "vm-1"), "a write lately is not nothing");

        let older: DynamicObject = serde_json::from_value(service("5", 2222)).unwrap();
        writer.apply_watcher_event(&watcher::Event::Apply(older));
        assert_eq!(stores.get(&resource, Some("ns"), "vm-1"), Some(service("7", 22)), "the cache is behind the write");

        let caught_up: DynamicObject = serde_json::from_value(service("9", 2200)).unwrap();
        caught_up_with(&stores, &resource, &caught_up);
        writer.apply_watcher_event(&watcher::Event::Apply(caught_up));
        let read = stores.get(&resource, Some("ns"), "vm-1").unwrap();
        assert_eq!(read["spec"]["ports"][0]["port"], 2200, "the cache shows a later version: the cache is read");
        assert!(stores.written.lock().unwrap().is_empty(), "the write is no longer kept");
    }

    #[test]
    fn a_deleted_object_is_no_longer_stood_in_for() {
        let (stores, resource, _writer) = stores_of_services();
        stores.wrote(&resource, &service("7", 22));
        stores.forget(&resource, Some("ns"), "vm-1");
        assert!(stores.holds_none(&resource, Some("ns"), "vm-1"));
    }

    #[test]
    fn a_kind_without_a_cache_keeps_no_writes() {
        let stores = Stores::default();
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&());
        stores.wrote(&resource, &service("7", 22));
        assert!(stores.written.lock().unwrap().is_empty());
        assert_eq!(stores.get(&resource, Some("ns"), "vm-1"), None, "read from the API server");
    }

    fn caught_up_with(stores: &Stores, resource: &ApiResource, object: &DynamicObject) {
        caught_up(&stores.written, resource, object);
    }

    #[test]
    fn keep_only_leaves_the_fields_asked_for_and_nothing_else() {
        let mut data = json!({"spec": {"domain": {"cpu": 1}}, "status": {"nodeName": "n1", "phase": "Running", "interfaces": [1]}});
        keep_only(&mut data, &["/status/nodeName", "/status/phase", "/status/absent"]);
        assert_eq!(data, json!({"status": {"nodeName": "n1", "phase": "Running"}}));
    }
}
