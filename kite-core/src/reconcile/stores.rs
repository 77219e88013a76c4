//! The watch caches a reconciler reads its children from, instead of a GET
//! per child per pass.
//!
//! A reconciler's `Controller` already watches every kind it owns, so that
//! a changed child brings its parent back. [`Stores::watch`] makes that watch
//! keep a store too: the same stream triggers the controller and keeps each
//! object as its JSON text (without `managedFields`, which no reconciler
//! reads; text is a fifth of the memory of a parsed tree), and
//! [`Stores::get`] answers from it once it has listed. The store is updated before the
//! event that triggers a pass is handed on, so a pass sees at least what
//! triggered it. The caches hold only what their watch selects (Kite's
//! labelled objects). Beside each, [`Stores::watch_others`] keeps the names
//! of the objects of that kind that are not Kite's (a metadata-only watch),
//! so that "not in the cache" can be told apart from "there, but not
//! Kite's" without a GET: the first is created, the second left alone. A
//! cache that lags a write the reconciler just made is stood in for by that
//! write's answer (see [`Stores`]); one that lags anything else costs at
//! most an idempotent server-side apply, and an object someone else made a
//! moment ago, not seen yet, is not taken over: it is created without
//! forcing (see `apply::create_in`), which such an object refuses.

use super::text_store::TextStore;
use crate::labels;
use futures::{FutureExt, Stream, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, PartialObjectMeta};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// One kind's cache.
struct Cached {
    store: Arc<TextStore>,
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
    others: Arc<RwLock<HashMap<String, Store<PartialObjectMeta<DynamicObject>>>>>,
    written: Arc<Mutex<HashMap<String, Written>>>,
    tasks: Arc<Mutex<Vec<Aborted>>>,
}

/// A task that is stopped when this is dropped (with the last clone of the
/// [`Stores`] that started it).
struct Aborted(tokio::task::AbortHandle);

impl Drop for Aborted {
    fn drop(&mut self) {
        self.0.abort();
    }
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
        let store = Arc::new(TextStore::default());
        if let Ok(mut kinds) = self.kinds.write() {
            kinds.insert(kind_key(&resource), Cached { store: store.clone() });
        }
        let api = Api::<DynamicObject>::all_with(client, &resource);
        let written = self.written.clone();
        let kind = resource.clone();
        let objects = watcher(api, config)
            .default_backoff()
            .modify(move |object: &mut DynamicObject| {
                object.managed_fields_mut().clear();
                if let Some(pointers) = keep {
                    keep_only(&mut object.data, pointers);
                }
            })
            .inspect(move |event| {
                // The cache is updated before the event is handed on (see the module's doc).
                if let Ok(event) = event {
                    store.apply(event);
                }
            })
            .touched_objects()
            .inspect(move |object| {
                // A write the cache now shows is no longer kept (see `Stores`).
                if let Ok(object) = object {
                    caught_up(&written, &kind, object);
                }
            });
        in_own_task(objects)
    }

    /// Keeps the names of the objects of `resource` that are not Kite's (whose
    /// managed-by label is absent or another), from a metadata-only watch of
    /// them: [`Stores::get`] answers for them, and [`Stores::knows_absent`]
    /// can say that there is no object of a name at all. Runs until the
    /// last clone of these stores is dropped.
    pub fn watch_others(&self, client: Client, resource: ApiResource) {
        let writer = reflector::store::Writer::new(resource.clone());
        if let Ok(mut others) = self.others.write() {
            others.insert(kind_key(&resource), writer.as_reader());
        }
        let api = Api::<PartialObjectMeta<DynamicObject>>::all_with(client, &resource);
        let config = watcher::Config::default().labels(&labels::others_selector());
        let names = reflector::reflector(
            writer,
            watcher(api, config).default_backoff().modify(|object: &mut PartialObjectMeta<DynamicObject>| {
                // A name and a namespace are all that is read.
                let (name, namespace) = (object.metadata.name.take(), object.metadata.namespace.take());
                let resource_version = object.metadata.resource_version.take();
                object.metadata = kube::api::ObjectMeta { name, namespace, resource_version, ..Default::default() };
            }),
        );
        let task = tokio::spawn(async move {
            let mut names = std::pin::pin!(names);
            while names.next().await.is_some() {}
        });
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.push(Aborted(task.abort_handle()));
        }
    }

    /// The cached object `namespace/name` of `resource` as JSON, when the
    /// cache of that kind has listed and holds it, or the answer to this
    /// reconciler's write of it when the cache does not show that write yet.
    /// `None` says nothing: the cache holds only what its watch selects
    /// (Kite's own objects), so an object missing from it may still exist;
    /// ask the API server.
    pub fn get(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> Option<Value> {
        let cached = self.store_of(resource)?.get(namespace, name)?;
        let cached_version = cached.as_ref().and_then(|(version, _)| *version);
        if let Some(written) = self.written_after(&written_key(resource, namespace, name), cached_version) {
            return Some(written);
        }
        if let Some((_, object)) = cached {
            return Some(object);
        }
        // Someone else's: its name is all there is to know (it lacks Kite's label).
        self.lookup_others(resource, namespace, name)?.then(|| {
            serde_json::json!({"apiVersion": resource.api_version, "kind": resource.kind,
                               "metadata": {"name": name, "namespace": namespace}})
        })
    }

    /// Whether there is no object `namespace/name` of `resource` at all, as
    /// far as the watches have seen: the kind's cache and the names of the
    /// others' objects have both listed and hold none, and this reconciler
    /// has not written one lately. `false` says nothing.
    pub fn knows_absent(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> bool {
        self.holds_none(resource, namespace, name) && self.lookup_others(resource, namespace, name) == Some(false)
    }

    /// Whether the cache of `resource` has listed and holds no Kite object
    /// `namespace/name` (there may be one that is not Kite's), nor has this
    /// reconciler written one lately.
    pub fn holds_none(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> bool {
        self.store_of(resource).and_then(|store| store.holds(namespace, name)) == Some(false)
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
        if self.store_of(resource).is_none() {
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

    /// Whether the names of the others' objects of `resource` hold
    /// `namespace/name`; `None` when they are not kept or have not listed.
    fn lookup_others(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> Option<bool> {
        let others = self.others.read().ok()?;
        let store = others.get(&kind_key(resource))?;
        if store.wait_until_ready().now_or_never().is_none_or(|ready| ready.is_err()) {
            return None;
        }
        let mut key = ObjectRef::<PartialObjectMeta<DynamicObject>>::new_with(name, resource.clone());
        if let Some(namespace) = namespace {
            key = key.within(namespace);
        }
        Some(store.get(&key).is_some())
    }

    /// The cache of `resource`'s kind, if it has one.
    fn store_of(&self, resource: &ApiResource) -> Option<Arc<TextStore>> {
        Some(self.kinds.read().ok()?.get(&kind_key(resource))?.store.clone())
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

/// Runs `objects` (a watch: polling it updates its store) in a task of
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

    /// Stores with one cached kind, Services, fed by the store returned.
    fn stores_of_services() -> (Stores, ApiResource, Arc<TextStore>) {
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&());
        let writer = Arc::new(TextStore::default());
        writer.apply(&watcher::Event::InitDone);
        let stores = Stores::default();
        let cached = Cached { store: writer.clone() };
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
        let (stores, resource, writer) = stores_of_services();
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
        writer.apply(&watcher::Event::Apply(older));
        assert_eq!(stores.get(&resource, Some("ns"), "vm-1"), Some(service("7", 22)), "the cache is behind the write");

        let caught_up: DynamicObject = serde_json::from_value(service("9", 2200)).unwrap();
        caught_up_with(&stores, &resource, &caught_up);
        writer.apply(&watcher::Event::Apply(caught_up));
        let read = stores.get(&resource, Some("ns"), "vm-1").unwrap();
        assert_eq!(read["spec"]["ports"][0]["port"], 2200, "the cache shows a later version: the cache is read");
        assert!(stores.written.lock().unwrap().is_empty(), "the write is no longer kept");
    }

    /// Adds the names of the others' Services to `stores`, fed by the writer returned.
    fn with_others(
        stores: &Stores,
        resource: &ApiResource,
    ) -> reflector::store::Writer<PartialObjectMeta<DynamicObject>> {
        let mut writer = reflector::store::Writer::new(resource.clone());
        writer.apply_watcher_event(&watcher::Event::InitDone);
        stores.others.write().unwrap().insert(kind_key(resource), writer.as_reader());
        writer
    }

    #[test]
    fn absence_is_known_only_when_neither_kites_cache_nor_the_others_names_hold_the_name() {
        let (stores, resource, _writer) = stores_of_services();
        assert!(!stores.knows_absent(&resource, Some("ns"), "vm-1"), "no names of others' objects: unknown");
        assert_eq!(stores.get(&resource, Some("ns"), "vm-1"), None);

        let mut others = with_others(&stores, &resource);
        assert!(stores.knows_absent(&resource, Some("ns"), "vm-1"), "both listed, neither holds it");

        let theirs: PartialObjectMeta<DynamicObject> = serde_json::from_value(
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {"name": "vm-1", "namespace": "ns"}}),
        )
        .unwrap();
        others.apply_watcher_event(&watcher::Event::Apply(theirs));
        assert!(!stores.knows_absent(&resource, Some("ns"), "vm-1"), "someone else's is there");
        let read = stores.get(&resource, Some("ns"), "vm-1").expect("their object is reported");
        assert!(!crate::reconcile::apply::is_ours(&read), "and not as Kite's: {read}");
        assert_eq!(read["metadata"]["name"], "vm-1");
        assert!(stores.knows_absent(&resource, Some("other-ns"), "vm-1"), "names are by namespace");

        stores.wrote(&resource, &service("7", 22));
        assert!(!stores.knows_absent(&resource, Some("ns"), "vm-1"), "a write lately is not absence");
    }

    #[tokio::test]
    async fn the_names_task_stops_with_the_last_clone_of_the_stores() {
        let stores = Stores::default();
        let (handle, _never) = {
            let (sender, receiver) = tokio::sync::oneshot::channel::<()>();
            (tokio::spawn(async move { receiver.await.ok() }), sender)
        };
        stores.tasks.lock().unwrap().push(Aborted(handle.abort_handle()));
        let clone = stores.clone();
        drop(stores);
        tokio::task::yield_now().await;
        assert!(!handle.is_finished(), "a clone still holds it");
        drop(clone);
        let ended = tokio::time::timeout(Duration::from_secs(5), handle).await.expect("stopped within 5 s");
        assert!(ended.unwrap_err().is_cancelled());
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
