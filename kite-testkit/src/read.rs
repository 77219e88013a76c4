//! Reads: get one object (or find one with no request), and list a collection with label and field
//! selectors and `limit`/`continue` paging.

use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector, labels_of};
use crate::state::Inner;
use crate::status::ApiError;
use base64::Engine;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The object `namespace/name` of the type `group`/`plural` as stored, or
/// none: a look-up with no request, as the console and the simulation make.
pub(crate) fn find(inner: &Inner, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
    let key = crate::registry::ResourceKey { group: group.into(), plural: plural.into() };
    inner.store().get(&key, &(namespace.to_string(), name.to_string())).cloned()
}

/// Gets one object.
pub fn get(inner: &Inner, resource: &ResourceType, namespace: Option<&str>, name: &str) -> Result<Value, ApiError> {
    let key = (if resource.namespaced { namespace.unwrap_or("").to_string() } else { String::new() }, name.to_string());
    inner
        .store()
        .get(&resource.key(), &key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&resource.qualified_plural(), name))
}

/// The selectors of a list or watch request.
pub struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub fn from_query(query: &HashMap<String, String>) -> Result<Self, ApiError> {
        let labels = LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
        let fields = FieldSelector::parse(query.get("fieldSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse fieldSelector: {e}")))?;
        Ok(Self { labels, fields })
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(&labels_of(object)) && self.fields.matches(object)
    }
}

/// A page of a list: the items, and the metadata of the list.
pub struct Page {
    pub items: Vec<Value>,
    pub metadata: Value,
}

/// Lists objects of a type, in namespace-then-name order.
pub fn list(
    inner: &Inner,
    resource: &ResourceType,
    namespace: Option<&str>,
    query: &HashMap<String, String>,
) -> Result<Page, ApiError> {
    let selectors = Selectors::from_query(query)?;
    let limit: Option<usize> = match query.get("limit") {
        Some(l) => Some(l.parse().map_err(|_| ApiError::bad_request(format!("limit must be a number, not {l:?}")))?),
        None => None,
    }
    .filter(|l| *l > 0);
    let store = inner.store();
    let after: Option<(String, String)> = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let (rv, after) = decode_continue(token)?;
            if rv < store.compacted() {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            Some(after)
        }
        None => None,
    };
    let mut items = Vec::new();
    let mut remaining = 0usize;
    let mut last_key = None;
    for (object_key, object) in store.list(&resource.key()) {
        if resource.namespaced && namespace.is_some_and(|ns| ns != object_key.0) {
            continue;
        }
        if after.as_ref().is_some_and(|a| object_key <= a) {
            continue;
        }
        if !selectors.matches(object) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            remaining += 1;
            continue;
        }
        last_key = Some(object_key.clone());
        items.push(object.clone());
    }
    let rv = store.resource_version();
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if remaining > 0
        && let Some(last) = last_key
    {
        metadata["continue"] = json!(encode_continue(rv, &last));
        metadata["remainingItemCount"] = json!(remaining);
    }
    Ok(Page { items, metadata })
}

fn encode_continue(rv: u64, last: &(String, String)) -> String {
    let token = json!({"rv": rv, "namespace": last.0, "name": last.1});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<(u64, (String, String)), ApiError> {
    let invalid = || ApiError::bad_request("the continue token is not valid");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let rv = value["rv"].as_u64().ok_or_else(invalid)?;
    let namespace = value["namespace"].as_str().ok_or_else(invalid)?.to_string();
    let name = value["name"].as_str().ok_or_else(invalid)?.to_string();
    Ok((rv, (namespace, name)))
}
