//! A watch cache that keeps each object as its JSON text.
//!
//! A reflector's store keeps every object as it was read: for a kind read
//! as [`DynamicObject`], a tree of `serde_json` maps and strings, several
//! times the size of the object's text. A reconciler reads a cached child
//! once or twice per pass, so the text, parsed when read, costs a few
//! microseconds a read and a fifth of the memory.

use kube::api::DynamicObject;
use kube::runtime::watcher;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// One cached object: its resourceVersion (as a number, when it is one)
/// and its JSON text.
struct Kept {
    version: Option<u64>,
    text: Box<str>,
}

/// The objects of one watch, by `namespace/name`, as JSON text; fed with
/// the watch's events by [`TextStore::apply`], as a reflector's store is.
#[derive(Default)]
pub(super) struct TextStore {
    objects: RwLock<Objects>,
    ready: AtomicBool,
}

#[derive(Default)]
struct Objects {
    current: HashMap<String, Kept>,
    /// The objects of a (re)list under way, which replace `current` when it ends.
    listing: Option<HashMap<String, Kept>>,
}

fn key(namespace: Option<&str>, name: &str) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}

fn kept(object: &DynamicObject) -> Option<(String, Kept)> {
    let name = object.metadata.name.as_deref()?;
    let text = serde_json::to_string(object).ok()?.into_boxed_str();
    let version = object.metadata.resource_version.as_deref().and_then(|v| v.parse().ok());
    Some((key(object.metadata.namespace.as_deref(), name), Kept { version, text }))
}

impl TextStore {
    /// Takes in one event of the watch.
    pub(super) fn apply(&self, event: &watcher::Event<DynamicObject>) {
        let Ok(mut objects) = self.objects.write() else { return };
        match event {
            watcher::Event::Init => objects.listing = Some(HashMap::new()),
            watcher::Event::InitApply(object) => {
                if let (Some(listing), Some((key, kept))) = (objects.listing.as_mut(), kept(object)) {
                    listing.insert(key, kept);
                }
            }
            watcher::Event::InitDone => {
                if let Some(listed) = objects.listing.take() {
                    objects.current = listed;
                }
                self.ready.store(true, Ordering::Release);
            }
            watcher::Event::Apply(object) => {
                if let Some((key, kept)) = kept(object) {
                    objects.current.insert(key, kept);
                }
            }
            watcher::Event::Delete(object) => {
                let name = object.metadata.name.as_deref().unwrap_or_default();
                objects.current.remove(&key(object.metadata.namespace.as_deref(), name));
            }
        }
    }

    /// `None` until the first list is complete; then the object
    /// `namespace/name`, if held, with its resourceVersion.
    pub(super) fn get(&self, namespace: Option<&str>, name: &str) -> Option<Option<(Option<u64>, Value)>> {
        if !self.ready.load(Ordering::Acquire) {
            return None;
        }
        let objects = self.objects.read().ok()?;
        let found = objects.current.get(&key(namespace, name)).and_then(|kept| {
            let value = serde_json::from_str(&kept.text).ok()?;
            Some((kept.version, value))
        });
        Some(found)
    }

    /// `None` until the first list is complete; then whether it holds
    /// `namespace/name`.
    pub(super) fn holds(&self, namespace: Option<&str>, name: &str) -> Option<bool> {
        if !self.ready.load(Ordering::Acquire) {
            return None;
        }
        Some(self.objects.read().ok()?.current.contains_key(&key(namespace, name)))
    }

    /// How many objects it holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.objects.read().map(|objects| objects.current.len()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(name: &str, version: &str) -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": version}, "spec": {"ports": [{"port": 22}]}}))
        .unwrap()
    }

    #[test]
    fn it_answers_only_once_listed_and_follows_applies_and_deletes() {
        let store = TextStore::default();
        assert!(store.get(Some("ns"), "a").is_none(), "not listed yet");
        store.apply(&watcher::Event::Init);
        store.apply(&watcher::Event::InitApply(object("a", "3")));
        assert!(store.get(Some("ns"), "a").is_none(), "the list is not complete");
        store.apply(&watcher::Event::InitDone);
        let (version, value) = store.get(Some("ns"), "a").unwrap().unwrap();
        assert_eq!(version, Some(3));
        assert_eq!(value["spec"]["ports"][0]["port"], 22);
        assert_eq!(store.get(Some("other"), "a"), Some(None), "names are by namespace");
        assert_eq!((store.holds(Some("ns"), "a"), store.holds(Some("other"), "a")), (Some(true), Some(false)));

        store.apply(&watcher::Event::Apply(object("b", "4")));
        store.apply(&watcher::Event::Delete(object("a", "5")));
        assert_eq!(store.get(Some("ns"), "a"), Some(None));
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn a_relist_replaces_what_was_held_when_it_ends() {
        let store = TextStore::default();
        for event in [watcher::Event::Init, watcher::Event::InitApply(object("a", "1")), watcher::Event::InitDone] {
            store.apply(&event);
        }
        store.apply(&watcher::Event::Init);
        store.apply(&watcher::Event::InitApply(object("b", "2")));
        assert!(store.get(Some("ns"), "a").unwrap().is_some(), "the old list answers while the new one comes");
        store.apply(&watcher::Event::InitDone);
        assert_eq!(store.get(Some("ns"), "a"), Some(None), "a was deleted while the watch was down");
        assert!(store.get(Some("ns"), "b").unwrap().is_some());
    }
}
