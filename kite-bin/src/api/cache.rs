//! Watch-fed caches of the Kite objects, with indexes, so that a request
//! never lists the cluster: looking a user up by email or a machine up by
//! `sshId` is a hash-map read.
//!
//! Each cache follows a `kube::runtime::watcher` stream (a list, then
//! watch events, re-listing when the watch expires). Writes the API makes are
//! also applied to the cache at once ([`Cache::upsert`]), so a user sees
//! their new machine on the next read; the watch event that follows carries
//! the same or a newer state.

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

/// Computes the keys an object is found under in one index.
pub type IndexFn<K> = fn(&K) -> Vec<String>;

/// A named index over a cache.
pub struct Index<K> {
    /// The name lookups use.
    pub name: &'static str,
    /// The keys of an object.
    pub keys: IndexFn<K>,
}

struct Inner<K> {
    objects: HashMap<String, Arc<K>>,
    /// Objects of a re-list in progress; swapped in when it completes.
    relisting: Option<HashMap<String, Arc<K>>>,
    indexes: HashMap<&'static str, HashMap<String, BTreeSet<String>>>,
}

/// A cache of every object of kind `K` the API may read, kept current by a watch.
pub struct Cache<K> {
    inner: Arc<RwLock<Inner<K>>>,
    index_fns: Arc<Vec<Index<K>>>,
    synced: watch::Receiver<bool>,
}

impl<K> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), index_fns: self.index_fns.clone(), synced: self.synced.clone() }
    }
}

/// The key of an object in a cache: `namespace/name`, or `name` when cluster-scoped.
pub fn key_of<K: Resource>(object: &K) -> String {
    key(object.meta().namespace.as_deref(), object.meta().name.as_deref().unwrap_or_default())
}

/// The key of `name` in `namespace`.
pub fn key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

impl<K> Cache<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// Starts following `api`; the cache is synced once the first list is in.
    pub fn start(api: Api<K>, indexes: Vec<Index<K>>) -> Self {
        let (synced_tx, synced) = watch::channel(false);
        let cache = Self {
            inner: Arc::new(RwLock::new(Inner {
                objects: HashMap::new(),
                relisting: None,
                indexes: indexes.iter().map(|i| (i.name, HashMap::new())).collect(),
            })),
            index_fns: Arc::new(indexes),
            synced,
        };
        let follower = cache.clone();
        tokio::spawn(async move {
            let mut events = watcher::watcher(api, watcher::Config::default()).default_backoff().boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => {
                        if follower.apply(event) {
                            let _ = synced_tx.send(true);
                        }
                    }
                    Err(error) => tracing::warn!(%error, kind = std::any::type_name::<K>(), "watch failed; retrying"),
                }
            }
        });
        cache
    }

    /// Applies one watch event; returns whether a complete list is now in.
    fn apply(&self, event: Event<K>) -> bool {
        let mut inner = self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        match event {
            Event::Init => {
                inner.relisting = Some(HashMap::new());
                false
            }
            Event::InitApply(object) => {
                if let Some(relisting) = inner.relisting.as_mut() {
                    relisting.insert(key_of(&object), Arc::new(object));
                }
                false
            }
            Event::InitDone => {
                let objects = inner.relisting.take().unwrap_or_default();
                inner.objects = objects;
                self.reindex(&mut inner);
                true
            }
            Event::Apply(object) => {
                self.put(&mut inner, Arc::new(object));
                false
            }
            Event::Delete(object) => {
                self.drop_key(&mut inner, &key_of(&object));
                false
            }
        }
    }

    fn reindex(&self, inner: &mut Inner<K>) {
        for index in self.index_fns.iter() {
            let mut map: HashMap<String, BTreeSet<String>> = HashMap::new();
            for (key, object) in &inner.objects {
                for value in (index.keys)(object) {
                    map.entry(value).or_default().insert(key.clone());
                }
            }
            inner.indexes.insert(index.name, map);
        }
    }

    fn drop_key(&self, inner: &mut Inner<K>, key: &str) {
        if let Some(old) = inner.objects.remove(key) {
            for index in self.index_fns.iter() {
                let Some(map) = inner.indexes.get_mut(index.name) else { continue };
                for value in (index.keys)(&old) {
                    if let Some(keys) = map.get_mut(&value) {
                        keys.remove(key);
                        if keys.is_empty() {
                            map.remove(&value);
                        }
                    }
                }
            }
        }
    }

    fn put(&self, inner: &mut Inner<K>, object: Arc<K>) {
        let key = key_of(object.as_ref());
        self.drop_key(inner, &key);
        for index in self.index_fns.iter() {
            let map = inner.indexes.entry(index.name).or_default();
            for value in (index.keys)(&object) {
                map.entry(value).or_default().insert(key.clone());
            }
        }
        inner.objects.insert(key, object);
    }

    /// Puts an object the API just wrote into the cache, ahead of its watch event.
    pub fn upsert(&self, object: K) {
        let mut inner = self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.put(&mut inner, Arc::new(object));
    }

    /// Drops an object the API just deleted, ahead of its watch event.
    pub fn remove(&self, key: &str) {
        let mut inner = self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.drop_key(&mut inner, key);
    }

    /// The object under `key` (see [`key`]).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        let inner = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.objects.get(key).cloned()
    }

    /// The objects found under `value` in the index `index`.
    pub fn find(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        let inner = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(keys) = inner.indexes.get(index).and_then(|map| map.get(value)) else { return Vec::new() };
        keys.iter().filter_map(|key| inner.objects.get(key).cloned()).collect()
    }

    /// Every object, sorted by key (for the admin lists).
    pub fn all(&self) -> Vec<Arc<K>> {
        let inner = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut all: Vec<_> = inner.objects.iter().map(|(k, o)| (k.clone(), o.clone())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.into_iter().map(|(_, o)| o).collect()
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        let inner = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.objects.is_empty()
    }

    /// Whether the first list has arrived.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits up to `within` for the first list; returns whether it arrived.
    pub async fn wait_synced(&self, within: Duration) -> bool {
        let mut synced = self.synced.clone();
        matches!(tokio::time::timeout(within, synced.wait_for(|s| *s)).await, Ok(Ok(_)))
    }
}

/// The namespace of an object, as an index key.
pub fn by_namespace<K: Resource>(object: &K) -> Vec<String> {
    object.namespace().into_iter().collect()
}
