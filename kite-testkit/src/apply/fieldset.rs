//! Field sets: which fields a manager owns, in the `FieldsV1` shape of
//! `metadata.managedFields` (`{"f:spec": {"f:replicas": {}}}`).

use crate::list_kind::ListKind;
use crate::registry::ResourceType;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A set of field paths, as a tree keyed by `f:<field>`, `k:<keys>` and `v:<value>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// The node itself is owned (the `"."` member), as for a list-map item.
    pub itself: bool,
    /// Owned fields below this node.
    pub children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// Reads a `fieldsV1` object.
    pub fn from_fields_v1(value: &Value) -> Self {
        let mut set = FieldSet::default();
        if let Value::Object(map) = value {
            for (key, child) in map {
                if key == "." {
                    set.itself = true;
                } else {
                    set.children.insert(key.clone(), FieldSet::from_fields_v1(child));
                }
            }
        }
        set
    }

    /// Writes the `fieldsV1` object.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.itself {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (key, child) in &self.children {
            map.insert(key.clone(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    /// Whether nothing is owned.
    pub fn is_empty(&self) -> bool {
        !self.itself && self.children.is_empty()
    }

    /// Every owned path, each a list of keys from the root; a leaf or an item.
    pub fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        if (self.itself || self.children.is_empty()) && !prefix.is_empty() {
            out.push(prefix.clone());
        }
        for (key, child) in &self.children {
            prefix.push(key.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Whether `path` is owned here.
    pub fn contains(&self, path: &[String]) -> bool {
        match path.split_first() {
            None => true,
            Some((first, rest)) => self
                .children
                .get(first)
                .is_some_and(|c| if rest.is_empty() { c.itself || c.children.is_empty() } else { c.contains(rest) }),
        }
    }

    /// Adds `path`.
    pub fn insert(&mut self, path: &[String], item: bool) {
        match path.split_first() {
            None => self.itself |= item,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest, item),
        }
    }

    /// Removes `path` and what is below it; prunes emptied parents.
    pub fn remove(&mut self, path: &[String]) {
        if let Some((first, rest)) = path.split_first() {
            if rest.is_empty() {
                self.children.remove(first);
            } else if let Some(child) = self.children.get_mut(first) {
                child.remove(rest);
                if child.is_empty() {
                    self.children.remove(first);
                }
            }
        }
    }

    /// Adds every path of `other`.
    pub fn union(&mut self, other: &FieldSet) {
        self.itself |= other.itself;
        for (key, child) in &other.children {
            self.children.entry(key.clone()).or_default().union(child);
        }
    }
}

/// The fields an object sets: its leaves, list-map items and set members,
/// as server-side apply counts them. `apiVersion`, `kind`, the identity
/// fields of `metadata`, and `status` (or everything else, for `/status`)
/// are not counted.
pub fn fields_of(object: &Value, resource: &ResourceType, status_only: bool) -> FieldSet {
    let mut set = FieldSet::default();
    let Value::Object(map) = object else { return set };
    for (key, value) in map {
        let counted = match key.as_str() {
            "apiVersion" | "kind" => false,
            "status" => status_only || !resource.status_subresource,
            "metadata" => !status_only,
            _ => !status_only || !resource.status_subresource,
        };
        if !counted {
            continue;
        }
        let mut path = vec![key.clone()];
        let node =
            if key == "metadata" { metadata_fields(value, resource) } else { node_fields(value, resource, &mut path) };
        if !node.is_empty() || !value.is_object() {
            set.children.insert(format!("f:{key}"), node);
        }
    }
    set
}

fn metadata_fields(metadata: &Value, resource: &ResourceType) -> FieldSet {
    let mut set = FieldSet::default();
    for key in ["labels", "annotations", "finalizers", "ownerReferences"] {
        if let Some(value) = metadata.get(key) {
            let mut path = vec!["metadata".to_string(), key.to_string()];
            set.children.insert(format!("f:{key}"), node_fields(value, resource, &mut path));
        }
    }
    set
}

fn node_fields(value: &Value, resource: &ResourceType, path: &mut Vec<String>) -> FieldSet {
    match value {
        Value::Object(map) => {
            let mut set = FieldSet::default();
            for (key, child) in map {
                path.push(key.clone());
                set.children.insert(format!("f:{key}"), node_fields(child, resource, path));
                path.pop();
            }
            set
        }
        Value::Array(items) => {
            let refs: Vec<&str> = path.iter().map(String::as_str).collect();
            match resource.list_kind(&refs) {
                ListKind::Atomic => FieldSet::default(),
                ListKind::Set => {
                    let mut set = FieldSet::default();
                    for item in items {
                        set.children.insert(format!("v:{item}"), FieldSet::default());
                    }
                    set
                }
                ListKind::Map(keys) => {
                    let mut set = FieldSet::default();
                    for item in items {
                        let mut item_set = node_fields(item, resource, path);
                        item_set.itself = true;
                        set.children.insert(item_key(item, &keys), item_set);
                    }
                    set
                }
            }
        }
        _ => FieldSet::default(),
    }
}

/// `k:{"name":"web"}`: the key of a list-map item.
pub fn item_key(item: &Value, keys: &[String]) -> String {
    let mut key_map = Map::new();
    for k in keys {
        if let Some(v) = item.get(k) {
            key_map.insert(k.clone(), v.clone());
        }
    }
    format!("k:{}", Value::Object(key_map))
}

/// The value at a field-set path, if the object has one.
pub fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = object;
    for step in path {
        node = if let Some(field) = step.strip_prefix("f:") {
            node.get(field)?
        } else if let Some(keys) = step.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(keys).ok()?;
            node.as_array()?.iter().find(|item| keys.iter().all(|(k, v)| item.get(k) == Some(v)))?
        } else if let Some(member) = step.strip_prefix("v:") {
            let member: Value = serde_json::from_str(member).ok()?;
            node.as_array()?.iter().find(|item| **item == member)?
        } else {
            return None;
        };
    }
    Some(node)
}

/// Removes the value at a field-set path; returns whether something was removed.
pub fn remove_at(object: &mut Value, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else { return false };
    let mut node = object;
    for step in parents {
        let next = if let Some(field) = step.strip_prefix("f:") {
            node.get_mut(field)
        } else if let Some(keys) = step.strip_prefix("k:") {
            let Ok(keys) = serde_json::from_str::<Map<String, Value>>(keys) else { return false };
            node.as_array_mut()
                .and_then(|items| items.iter_mut().find(|i| keys.iter().all(|(k, v)| i.get(k) == Some(v))))
        } else {
            None
        };
        match next {
            Some(n) => node = n,
            None => return false,
        }
    }
    if let Some(field) = last.strip_prefix("f:") {
        node.as_object_mut().is_some_and(|m| m.remove(field).is_some())
    } else if let Some(keys) = last.strip_prefix("k:") {
        let Ok(keys) = serde_json::from_str::<Map<String, Value>>(keys) else { return false };
        let Some(items) = node.as_array_mut() else { return false };
        let before = items.len();
        items.retain(|i| !keys.iter().all(|(k, v)| i.get(k) == Some(v)));
        items.len() != before
    } else if let Some(member) = last.strip_prefix("v:") {
        let Ok(member) = serde_json::from_str::<Value>(member) else { return false };
        let Some(items) = node.as_array_mut() else { return false };
        let before = items.len();
        items.retain(|i| *i != member);
        items.len() != before
    } else {
        false
    }
}
