//! The indexed table behind a [`Cache`](super::Cache): objects by key,
//! and for each index the keys of the objects found under each value. It is
//! pure (no I/O, no lock), so watch events can be applied to it in tests.

use crate::key::object_key;
use kube::Resource;
use kube::runtime::watcher::Event;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Computes the values an object is found under in one index; an object
/// found under none is in the table but in no list of that index.
pub type IndexFn<K> = fn(&K) -> Vec<String>;

/// A named index over a cache.
pub struct Index<K> {
    /// The name lookups use.
    pub name: &'static str,
    /// The values of an object.
    pub keys: IndexFn<K>,
}

/// An object and the values it is found under, one list per index (computed once, when it comes in).
struct Entry<K> {
    object: Arc<K>,
    values: Vec<Vec<String>>,
}

/// Objects by key, their indexes, and the objects of a re-list in progress.
pub(super) struct Table<K> {
    objects: HashMap<String, Entry<K>>,
    /// Objects of a re-list in progress; swapped in when it completes, so
    /// the old table serves until then.
    relisting: Option<HashMap<String, Entry<K>>>,
    index_fns: Vec<Index<K>>,
    indexes: HashMap<&'static str, HashMap<String, BTreeSet<String>>>,
}

impl<K: Resource> Table<K> {
    /// An empty table with `indexes`.
    pub(super) fn new(indexes: Vec<Index<K>>) -> Self {
        Self {
            objects: HashMap::new(),
            relisting: None,
            indexes: indexes.iter().map(|i| (i.name, HashMap::new())).collect(),
            index_fns: indexes,
        }
    }

    /// Applies one watch event; returns whether a complete list is now in.
    pub(super) fn apply(&mut self, event: Event<K>) -> bool {
        match event {
            Event::Init => {
                self.relisting = Some(HashMap::new());
                false
            }
            Event::InitApply(object) => {
                let entry = self.entry(Arc::new(object));
                self.relisting.get_or_insert_with(HashMap::new).insert(object_key(entry.object.as_ref()), entry);
                false
            }
            Event::InitDone => {
                self.objects = self.relisting.take().unwrap_or_default();
                self.reindex();
                true
            }
            Event::Apply(object) => {
                self.put(Arc::new(object));
                false
            }
            Event::Delete(object) => {
                self.remove(&object_key(&object));
                false
            }
        }
    }

    fn entry(&self, object: Arc<K>) -> Entry<K> {
        let values = self.index_fns.iter().map(|index| (index.keys)(&object)).collect();
        Entry { object, values }
    }

    fn reindex(&mut self) {
        for (i, index) in self.index_fns.iter().enumerate() {
            let mut map: HashMap<String, BTreeSet<String>> = HashMap::new();
            for (key, entry) in &self.objects {
                for value in entry.values.get(i).into_iter().flatten() {
                    map.entry(value.clone()).or_default().insert(key.clone());
                }
            }
            self.indexes.insert(index.name, map);
        }
    }

    /// Drops the object under `key` and its index entries.
    pub(super) fn remove(&mut self, key: &str) {
        let Some(old) = self.objects.remove(key) else { return };
        for (index, values) in self.index_fns.iter().zip(&old.values) {
            let Some(map) = self.indexes.get_mut(index.name) else { continue };
            for value in values {
                if let Some(keys) = map.get_mut(value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        map.remove(value);
                    }
                }
            }
        }
    }

    /// Puts `object` in, replacing the one under its key.
    pub(super) fn put(&mut self, object: Arc<K>) {
        let key = object_key(object.as_ref());
        self.remove(&key);
        let entry = self.entry(object);
        for (index, values) in self.index_fns.iter().zip(&entry.values) {
            let map = self.indexes.entry(index.name).or_default();
            for value in values {
                map.entry(value.clone()).or_default().insert(key.clone());
            }
        }
        self.objects.insert(key, entry);
    }

    /// The object under `key`.
    pub(super) fn get(&self, key: &str) -> Option<Arc<K>> {
        self.objects.get(key).map(|entry| entry.object.clone())
    }

    /// The keys found under `value` in `index`, sorted.
    #[cfg(test)]
    pub(super) fn keys(&self, index: &str, value: &str) -> Vec<String> {
        self.indexes
            .get(index)
            .and_then(|map| map.get(value))
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The objects found under `value` in `index`, by key.
    pub(super) fn find(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        let Some(keys) = self.indexes.get(index).and_then(|map| map.get(value)) else { return Vec::new() };
        keys.iter().filter_map(|key| self.get(key)).collect()
    }

    /// Every object, by key.
    pub(super) fn all(&self) -> Vec<Arc<K>> {
        let mut all: Vec<_> = self.objects.iter().collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all.into_iter().map(|(_, entry)| entry.object.clone()).collect()
    }

    /// Whether the table holds no object.
    pub(super) fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn map(namespace: &str, name: &str, colour: &str) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.namespace = Some(namespace.into());
        object.metadata.name = Some(name.into());
        object.data = Some([("colour".to_string(), colour.to_string())].into());
        object
    }

    fn by_colour(object: &ConfigMap) -> Vec<String> {
        object.data.as_ref().and_then(|d| d.get("colour")).cloned().into_iter().collect()
    }

    fn table() -> Table<ConfigMap> {
        Table::new(vec![Index { name: "colour", keys: by_colour }])
    }

    #[test]
    fn events_update_objects_and_indexes_one_by_one() {
        let mut table = table();
        table.apply(Event::Apply(map("ns", "a", "red")));
        table.apply(Event::Apply(map("ns", "b", "red")));
        assert_eq!(table.keys("colour", "red"), ["ns/a", "ns/b"]);
        table.apply(Event::Apply(map("ns", "a", "blue")));
        assert_eq!(table.keys("colour", "red"), ["ns/b"], "a changed value leaves its old index entry");
        assert_eq!(table.keys("colour", "blue"), ["ns/a"]);
        table.apply(Event::Delete(map("ns", "b", "red")));
        assert!(table.keys("colour", "red").is_empty());
        assert!(table.get("ns/b").is_none());
        assert_eq!(table.all().len(), 1);
    }

    #[test]
    fn a_relist_replaces_the_table_when_it_is_done() {
        let mut table = table();
        table.apply(Event::Apply(map("ns", "old", "gone")));
        assert!(!table.apply(Event::Init));
        table.apply(Event::InitApply(map("ns", "new", "fresh")));
        assert_eq!(table.keys("colour", "gone"), ["ns/old"], "the old table serves until the relist is done");
        assert!(table.apply(Event::InitDone));
        assert!(table.keys("colour", "gone").is_empty());
        assert!(table.get("ns/old").is_none());
        assert_eq!(table.find("colour", "fresh").len(), 1);
    }
}
