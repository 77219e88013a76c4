//! A watch-fed cache of one kind, with indexes, so that a request never
//! lists the cluster: finding a user by email or a machine by `sshId` is a
//! hash-map read. The API and the SSH gateway both build on it.
//!
//! A cache follows a `kube::runtime::watcher` stream (a list, then watch
//! events, re-listing when the watch expires; the old contents serve until a
//! re-list is complete). A writer may also put what it just wrote into the
//! cache at once ([`Cache::upsert`]), so its next read sees it; the watch
//! event that follows carries the same or a newer state. The watch stops
//! when the last clone of the cache is dropped. Cached objects carry no
//! `managedFields`: nothing reads them from a cache, and they are often
//! the larger half of an object.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kite_core::cache::{Cache, Index, by_namespace};
//! use kube::runtime::watcher::Event;
//!
//! // `Cache::start(api, indexes)` follows the cluster; a cache can also be fed by hand.
//! let cache = Cache::new(vec![Index { name: "namespace", keys: by_namespace::<ConfigMap> }]);
//! let mut map = ConfigMap::default();
//! map.metadata.namespace = Some("team".into());
//! map.metadata.name = Some("settings".into());
//! cache.apply(Event::Apply(map));
//! assert!(cache.get("team/settings").is_some());
//! assert_eq!(cache.find("namespace", "team").len(), 1);
//! ```

mod table;

pub use table::{Index, IndexFn};

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;
use table::Table;
use tokio::sync::watch;

/// Aborts the watch task when the last clone of its cache goes.
struct Follower(Option<tokio::task::JoinHandle<()>>);

impl Drop for Follower {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// A cache of every object of kind `K` its `Api` may read, kept current by a watch.
pub struct Cache<K> {
    table: Arc<RwLock<Table<K>>>,
    synced_tx: Arc<watch::Sender<bool>>,
    synced: watch::Receiver<bool>,
    failing: Arc<RwLock<Option<String>>>,
    follower: Arc<Follower>,
}

impl<K> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Self {
            table: self.table.clone(),
            synced_tx: self.synced_tx.clone(),
            synced: self.synced.clone(),
            failing: self.failing.clone(),
            follower: self.follower.clone(),
        }
    }
}

impl<K> Cache<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// An empty cache with `indexes`, fed only through [`Cache::apply`] and [`Cache::upsert`].
    pub fn new(indexes: Vec<Index<K>>) -> Self {
        let (synced_tx, synced) = watch::channel(false);
        Self {
            table: Arc::new(RwLock::new(Table::new(indexes))),
            synced_tx: Arc::new(synced_tx),
            synced,
            failing: Arc::new(RwLock::new(None)),
            follower: Arc::new(Follower(None)),
        }
    }

    /// Starts following `api`; the cache is synced once the first list is in.
    pub fn start(api: Api<K>, indexes: Vec<Index<K>>) -> Self {
        let mut cache = Self::new(indexes);
        let (table, synced_tx, failing) = (cache.table.clone(), cache.synced_tx.clone(), cache.failing.clone());
        let task = tokio::spawn(async move {
            // managedFields is read by nobody here and is often the larger half of an object.
            let mut events = watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .modify(|object: &mut K| object.managed_fields_mut().clear())
                .boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => {
                        *write(&failing) = None;
                        if write(&table).apply(event) {
                            synced_tx.send_replace(true);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, kind = std::any::type_name::<K>(), "watch failed; retrying");
                        *write(&failing) = Some(error.to_string());
                    }
                }
            }
        });
        cache.follower = Arc::new(Follower(Some(task)));
        cache
    }

    /// Applies one watch event; the cache is synced once a list is complete.
    pub fn apply(&self, event: Event<K>) {
        if write(&self.table).apply(event) {
            self.synced_tx.send_replace(true);
        }
    }

    /// Puts an object just written into the cache, ahead of its watch event.
    pub fn upsert(&self, object: K) {
        write(&self.table).put(Arc::new(object));
    }

    /// Drops an object just deleted, ahead of its watch event.
    pub fn remove(&self, key: &str) {
        write(&self.table).remove(key);
    }

    /// The object under `key` (see [`crate::key`]).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        read(&self.table).get(key)
    }

    /// The objects found under `value` in the index `index`, by key.
    pub fn find(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        read(&self.table).find(index, value)
    }

    /// Every object, by key (for the admin lists).
    pub fn all(&self) -> Vec<Arc<K>> {
        read(&self.table).all()
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        read(&self.table).is_empty()
    }

    /// The watch's last error, while it has not recovered (no event since):
    /// the cache may then be stale. Reading it asks the cluster nothing.
    pub fn failure(&self) -> Option<String> {
        read(&self.failing).clone()
    }

    /// Whether the first list has arrived.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits up to `within` for the first list; returns whether it arrived.
    pub async fn wait_synced(&self, within: Duration) -> bool {
        tokio::time::timeout(within, self.when_synced()).await.unwrap_or(false)
    }

    /// Completes with `true` once the first list is in (`false` if the
    /// cache is dropped first); it borrows nothing, so it can outlive `self`.
    pub fn when_synced(&self) -> impl Future<Output = bool> + Send + 'static {
        let mut synced = self.synced.clone();
        async move { synced.wait_for(|s| *s).await.is_ok() }
    }
}

fn read<T>(table: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    table.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(table: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    table.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The namespace of an object, as an index value.
pub fn by_namespace<K: Resource>(object: &K) -> Vec<String> {
    object.namespace().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Patch, PatchParams};

    #[tokio::test]
    async fn cached_objects_carry_no_managed_fields() {
        let server = kite_testkit::FakeApiServer::new().unwrap();
        let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
        let map = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "default"}, "data": {"a": "b"}});
        let applied = maps.patch("settings", &PatchParams::apply("someone"), &Patch::Apply(&map)).await.unwrap();
        assert!(!applied.managed_fields().is_empty(), "the server keeps who applied what");
        let cache = Cache::start(maps, Vec::new());
        assert!(cache.wait_synced(Duration::from_secs(10)).await);
        let cached = cache.get("default/settings").unwrap();
        assert!(cached.managed_fields().is_empty(), "{:?}", cached.metadata.managed_fields);
        assert_eq!(cached.data.as_ref().unwrap()["a"], "b");
    }
}
