//! The object store: every object as JSON, one resourceVersion counter for
//! the whole server, and the event log that watches read from.

use crate::registry::ResourceKey;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tokio::sync::broadcast;

/// The namespace (empty for cluster-scoped objects) and name of an object.
pub type ObjectKey = (String, String);

/// The logged events a watch starts with, and the receiver of the ones to come.
pub type Subscription = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// It was created.
    Added,
    /// It changed.
    Modified,
    /// It is gone.
    Deleted,
}

impl EventKind {
    /// The watch event type.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        }
    }
}

/// One change, as watches see it.
#[derive(Debug)]
pub struct Event {
    /// The resourceVersion the change made.
    pub rv: u64,
    /// The resource type.
    pub key: ResourceKey,
    /// What happened.
    pub kind: EventKind,
    /// The object after the change (for `Deleted`, its last state).
    pub object: Value,
    /// The object before the change, for `Modified`.
    pub previous: Option<Value>,
}

/// All objects, and the log of their changes.
pub struct Store {
    rv: u64,
    objects: BTreeMap<ResourceKey, BTreeMap<ObjectKey, Value>>,
    log: VecDeque<Arc<Event>>,
    log_limit: usize,
    /// Watches from a resourceVersion below this get `410 Gone`.
    compacted: u64,
    sender: broadcast::Sender<Arc<Event>>,
}

impl Store {
    /// An empty store that keeps the last `log_limit` events for watches.
    pub fn new(log_limit: usize) -> Self {
        let (sender, _) = broadcast::channel(8192);
        Self { rv: 1, objects: BTreeMap::new(), log: VecDeque::new(), log_limit, compacted: 0, sender }
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// The oldest resourceVersion a watch can still start from.
    pub fn compacted(&self) -> u64 {
        self.compacted
    }

    /// Forgets the event log, so watches from any earlier version get `410 Gone`.
    pub fn compact(&mut self) {
        self.log.clear();
        self.compacted = self.rv;
    }

    /// The object, if it exists.
    pub fn get(&self, key: &ResourceKey, object: &ObjectKey) -> Option<&Value> {
        self.objects.get(key).and_then(|m| m.get(object))
    }

    /// Every object of a type, in namespace-then-name order.
    pub fn list(&self, key: &ResourceKey) -> impl Iterator<Item = (&ObjectKey, &Value)> {
        self.objects.get(key).into_iter().flat_map(|m| m.iter())
    }

    /// Every type that has objects.
    pub fn keys(&self) -> Vec<ResourceKey> {
        self.objects.keys().cloned().collect()
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn record(&mut self, event: Event) {
        let event = Arc::new(event);
        self.log.push_back(event.clone());
        while self.log.len() > self.log_limit {
            if let Some(dropped) = self.log.pop_front() {
                self.compacted = dropped.rv;
            }
        }
        // No receiver is not an error: nobody is watching.
        let _ = self.sender.send(event);
    }

    /// Stores a new object, stamping its resourceVersion; returns it.
    pub fn insert(&mut self, key: &ResourceKey, object_key: ObjectKey, mut object: Value) -> Value {
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        self.objects.entry(key.clone()).or_default().insert(object_key, object.clone());
        self.record(Event { rv, key: key.clone(), kind: EventKind::Added, object: object.clone(), previous: None });
        object
    }

    /// Replaces an object, stamping a new resourceVersion; returns it.
    pub fn replace(&mut self, key: &ResourceKey, object_key: ObjectKey, mut object: Value) -> Value {
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let previous = self.objects.entry(key.clone()).or_default().insert(object_key, object.clone());
        self.record(Event { rv, key: key.clone(), kind: EventKind::Modified, object: object.clone(), previous });
        object
    }

    /// Removes an object; returns its last state, with the resourceVersion of its removal.
    pub fn remove(&mut self, key: &ResourceKey, object_key: &ObjectKey) -> Option<Value> {
        let mut object = self.objects.get_mut(key)?.remove(object_key)?;
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        self.record(Event { rv, key: key.clone(), kind: EventKind::Deleted, object: object.clone(), previous: None });
        Some(object)
    }

    /// The logged events after `rv` of one type, and a receiver for the
    /// ones to come, taken together so that none is missed.
    pub fn subscribe_from(&self, key: &ResourceKey, rv: u64) -> Result<Subscription, u64> {
        if rv < self.compacted {
            return Err(self.compacted);
        }
        let backlog = self.log.iter().filter(|e| e.rv > rv && &e.key == key).cloned().collect();
        Ok((backlog, self.sender.subscribe()))
    }

    /// A receiver for the events to come.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.sender.subscribe()
    }
}
