//! CustomResourceDefinitions: a created CRD starts serving its kind, with
//! its schema, status subresource and printer columns; a deleted one stops,
//! and its objects go.

use crate::registry::{ResourceKey, ResourceType, ScalePaths};
use crate::state::Inner;
use crate::status::{ApiError, Cause};
use crate::validation::ObjectSchema;
use serde_json::{Value, json};
use std::sync::Arc;

fn is_crd(resource: &ResourceType) -> bool {
    resource.group == "apiextensions.k8s.io" && resource.plural == "customresourcedefinitions"
}

/// The served type a CRD describes, or why it cannot be served.
pub fn resource_type(crd: &Value) -> Result<ResourceType, String> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().ok_or("spec.group is required")?.to_string();
    let names = &spec["names"];
    let plural = names["plural"].as_str().ok_or("spec.names.plural is required")?.to_string();
    let kind = names["kind"].as_str().ok_or("spec.names.kind is required")?.to_string();
    let singular = names["singular"].as_str().map(String::from).unwrap_or_else(|| kind.to_lowercase());
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)).collect()
    };
    let versions: Vec<&Value> =
        spec["versions"].as_array().into_iter().flatten().filter(|v| v["served"] != json!(false)).collect();
    if versions.is_empty() {
        return Err("spec.versions must have at least one served version".into());
    }
    let storage = versions.iter().find(|v| v["storage"] == json!(true)).copied().unwrap_or(versions[0]);
    let schema = match storage.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
        Some(schema) => Some(Arc::new(ObjectSchema::new(schema)?)),
        None => None,
    };
    let scope = spec["scope"].as_str().unwrap_or("Namespaced");
    Ok(ResourceType {
        group,
        versions: versions.iter().filter_map(|v| v["name"].as_str().map(String::from)).collect(),
        kind,
        plural,
        singular,
        namespaced: scope == "Namespaced",
        short_names: strings(&names["shortNames"]),
        categories: strings(&names["categories"]),
        status_subresource: storage.get("subresources").and_then(|s| s.get("status")).is_some(),
        scale: storage.get("subresources").and_then(|s| s.get("scale")).and_then(ScalePaths::from_crd),
        generation: true,
        schema,
        printer_columns: storage["additionalPrinterColumns"].as_array().cloned().unwrap_or_default(),
        crd_name: crd["metadata"]["name"].as_str().map(String::from),
        list_fields: &[],
    })
}

/// Refuses a CRD the API server would refuse.
pub fn check_crd(resource: &ResourceType, object: &Value) -> Result<(), ApiError> {
    if !is_crd(resource) {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or("");
    let invalid = |field: &str, message: String| {
        ApiError::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            vec![Cause::invalid(field, message)],
        )
    };
    let served = resource_type(object).map_err(|e| invalid("spec", e))?;
    let expected = format!("{}.{}", served.plural, served.group);
    if name != expected {
        return Err(invalid(
            "metadata.name",
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group ({expected})"),
        ));
    }
    Ok(())
}

/// After a write: a CRD's kind is served (or withdrawn once the CRD is gone)
/// and its status says so.
pub fn after_write(inner: &Arc<Inner>, resource: &ResourceType, object: &Value) {
    if !is_crd(resource) {
        return;
    }
    let Some(name) = object["metadata"]["name"].as_str() else { return };
    let gone = inner.store().get(&resource.key(), &(String::new(), name.to_string())).is_none();
    if gone {
        withdraw(inner, name);
        return;
    }
    if !object["metadata"]["deletionTimestamp"].is_null() {
        // A deleted CRD takes its objects with it, then goes.
        remove_objects(inner, object);
        let mut store = inner.store();
        let key = (String::new(), name.to_string());
        if let Some(current) = store.get(&resource.key(), &key).cloned() {
            let mut finalized = current.clone();
            let remaining: Vec<Value> = current["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f.as_str() != Some("customresourcecleanup.apiextensions.k8s.io"))
                .cloned()
                .collect();
            if remaining.is_empty() {
                store.remove(&resource.key(), &key);
            } else {
                finalized["metadata"]["finalizers"] = json!(remaining);
                store.replace(&resource.key(), key, finalized);
            }
        }
        drop(store);
        withdraw(inner, name);
        return;
    }
    let served = match resource_type(object) {
        Ok(served) => served,
        Err(error) => {
            tracing::warn!(crd = name, %error, "the CRD cannot be served");
            return;
        }
    };
    inner.registry_mut().serve(served);
    let mut store = inner.store();
    let key = (String::new(), name.to_string());
    if let Some(current) = store.get(&resource.key(), &key).cloned() {
        let storage: Vec<Value> = current["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["storage"] == json!(true))
            .map(|v| v["name"].clone())
            .collect();
        let condition = |t: &str, reason: &str, message: &str| json!({"type": t, "status": "True", "reason": reason, "message": message, "lastTransitionTime": current["metadata"]["creationTimestamp"]});
        let status = json!({
            "acceptedNames": current["spec"]["names"],
            "conditions": [
                condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": storage,
        });
        if current["status"] != status {
            let mut established = current;
            established["status"] = status;
            store.replace(&resource.key(), key, established);
        }
    }
}

fn withdraw(inner: &Arc<Inner>, crd_name: &str) {
    inner.registry_mut().withdraw(crd_name);
}

fn remove_objects(inner: &Arc<Inner>, crd: &Value) {
    let (Some(group), Some(plural)) = (crd["spec"]["group"].as_str(), crd["spec"]["names"]["plural"].as_str()) else {
        return;
    };
    let key = ResourceKey { group: group.to_string(), plural: plural.to_string() };
    let mut store = inner.store();
    let objects: Vec<_> = store.list(&key).map(|(k, _)| k.clone()).collect();
    for object_key in objects {
        store.remove(&key, &object_key);
    }
    crate::lifecycle::collect_garbage(inner, &mut store);
}
