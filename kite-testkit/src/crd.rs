//! CustomResourceDefinitions: a created CRD starts serving its kind, with
//! its schema, status subresource and printer columns; a deleted one stops,
//! and its objects go.

use crate::crd_names::CLEANUP_FINALIZER;
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
    let versions: Vec<&Value> =
        object["spec"]["versions"].as_array().into_iter().flatten().map(|v| &v["name"]).collect();
    for (i, stored) in object["status"]["storedVersions"].as_array().into_iter().flatten().enumerate() {
        if !versions.contains(&stored) {
            return Err(invalid(
                &format!("status.storedVersions[{i}]"),
                format!("Invalid value: {stored}: must appear in spec.versions"),
            ));
        }
    }
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
        rename_waiting(inner, resource, object["spec"]["group"].as_str().unwrap_or_default());
        return;
    }
    if !object["metadata"]["deletionTimestamp"].is_null() {
        clean_up(inner, resource, name);
        return;
    }
    let served = match resource_type(object) {
        Ok(served) => served,
        Err(error) => {
            tracing::warn!(crd = name, %error, "the CRD cannot be served");
            return;
        }
    };
    let key = (String::new(), name.to_string());
    let Some(current) = inner.store().get(&resource.key(), &key).cloned() else { return };
    let naming = crate::crd_names::decide(&inner.store(), &current);
    let previous = current["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let was = |kind: &str| previous.iter().find(|c| c["type"] == kind).cloned();
    let established_before = was("Established").is_some_and(|c| c["status"] == "True");
    // A CRD whose names are not all accepted is not served; one served before keeps its names.
    if naming.accepted() {
        inner.registry_mut().serve(served);
    }
    let now = crate::meta::now();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        let since =
            was(kind).filter(|c| c["status"] == status).map_or_else(|| json!(now), |c| c["lastTransitionTime"].clone());
        json!({"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since})
    };
    let (status, reason, message) = &naming.condition;
    let names_accepted = condition("NamesAccepted", status, reason, message);
    let established = if naming.accepted() {
        condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
    } else if established_before {
        was("Established").unwrap_or_default()
    } else {
        condition("Established", "False", "NotAccepted", "not all names are accepted")
    };
    let mut store = inner.store();
    let Some(current) = store.get(&resource.key(), &key).cloned() else { return };
    // Every version objects were ever stored in stays listed until a client removes it.
    let mut storage: Vec<Value> = current["status"]["storedVersions"].as_array().cloned().unwrap_or_default();
    for version in current["spec"]["versions"].as_array().into_iter().flatten() {
        if version["storage"] == json!(true) && !storage.contains(&version["name"]) {
            storage.push(version["name"].clone());
        }
    }
    let status = json!({
        "acceptedNames": naming.accepted_names,
        "conditions": [names_accepted, established],
        "storedVersions": storage,
    });
    if current["status"] != status {
        let mut updated = current;
        updated["status"] = status;
        store.replace(&resource.key(), key, updated);
    }
}

/// After a CRD of `group` went: the CRDs of the group whose names were
/// refused are named again, as the naming controller requeues them.
fn rename_waiting(inner: &Arc<Inner>, resource: &ResourceType, group: &str) {
    let waiting: Vec<Value> = inner
        .store()
        .list(&resource.key())
        .map(|(_, crd)| crd)
        .filter(|crd| crd["spec"]["group"] == group)
        .filter(|crd| {
            crd["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "NamesAccepted" && c["status"] != "True"))
        })
        .cloned()
        .collect();
    for crd in waiting {
        after_write(inner, resource, &crd);
    }
}

fn withdraw(inner: &Arc<Inner>, crd_name: &str) {
    inner.registry_mut().withdraw(crd_name);
}

/// Whether the CRD that serves `resource` is being deleted (then its objects cannot be created).
pub fn is_terminating(inner: &Inner, resource: &ResourceType) -> bool {
    let Some(crd_name) = &resource.crd_name else { return false };
    let key = ResourceKey { group: "apiextensions.k8s.io".into(), plural: "customresourcedefinitions".into() };
    inner
        .store()
        .get(&key, &(String::new(), crd_name.clone()))
        .is_some_and(|crd| !crd["metadata"]["deletionTimestamp"].is_null())
}

/// A deleted CRD, as apiextensions' finalizer controller handles it: the
/// kind stays served while `Terminating` (`InstanceDeletionInProgress`), its
/// objects are deleted (waiting on their finalizers), then the condition is
/// `InstanceDeletionCompleted`, the cleanup finalizer goes, and with it the
/// CRD and its kind.
fn clean_up(inner: &Arc<Inner>, resource: &ResourceType, name: &str) {
    if !delete_objects(inner, resource, name) {
        let weak = Arc::downgrade(inner);
        let (resource, name) = (resource.clone(), name.to_string());
        inner.runtime.spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                let Some(inner) = weak.upgrade() else { return };
                if delete_objects(&inner, &resource, &name) {
                    return;
                }
            }
        });
    }
}

/// Marks the CRD `Terminating`, deletes its objects, and finishes the CRD
/// once none remain; returns whether it did.
fn delete_objects(inner: &Arc<Inner>, resource: &ResourceType, name: &str) -> bool {
    let crd_key = (String::new(), name.to_string());
    let Some(crd) = inner.store().get(&resource.key(), &crd_key).cloned() else {
        withdraw(inner, name);
        return true;
    };
    let (Some(group), Some(plural)) = (crd["spec"]["group"].as_str(), crd["spec"]["names"]["plural"].as_str()) else {
        return true;
    };
    let objects_key = ResourceKey { group: group.to_string(), plural: plural.to_string() };
    let mut store = inner.store();
    let members: Vec<(crate::store::ObjectKey, bool)> =
        store.list(&objects_key).map(|(k, v)| (k.clone(), !v["metadata"]["deletionTimestamp"].is_null())).collect();
    for (object_key, deleting) in &members {
        if !deleting {
            // Gone already (a cascade) is not an error here.
            let _ = crate::lifecycle::delete(
                inner,
                &mut store,
                &objects_key,
                object_key,
                crate::lifecycle::DeleteOptions::BACKGROUND,
            );
        }
    }
    let remaining = store.list(&objects_key).count();
    let (status, reason, message) = if remaining == 0 {
        ("False", "InstanceDeletionCompleted", "removed all instances")
    } else {
        ("True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
    };
    let Some(current) = store.get(&resource.key(), &crd_key).cloned() else { return true };
    let mut updated = current.clone();
    set_condition(&mut updated, "Terminating", status, reason, message);
    if remaining == 0 {
        let finalizers: Vec<Value> = current["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f.as_str() != Some(CLEANUP_FINALIZER))
            .cloned()
            .collect();
        if finalizers.is_empty() {
            store.remove(&resource.key(), &crd_key);
            crate::lifecycle::collect_garbage(inner, &mut store);
            drop(store);
            withdraw(inner, name);
            rename_waiting(inner, resource, group);
            return true;
        }
        updated["metadata"]["finalizers"] = json!(finalizers);
    }
    if updated != current {
        store.replace(&resource.key(), crd_key, updated);
    }
    remaining == 0
}

/// Sets a condition of `crd`'s status, keeping its transition time while its status stays.
fn set_condition(crd: &mut Value, kind: &str, status: &str, reason: &str, message: &str) {
    let conditions = crd["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let previous = conditions.iter().find(|c| c["type"] == kind);
    let since = match previous {
        Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
        _ => json!(crate::meta::now()),
    };
    let mut kept: Vec<Value> = conditions.iter().filter(|c| c["type"] != kind).cloned().collect();
    kept.push(
        json!({"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since}),
    );
    crd["status"]["conditions"] = json!(kept);
}
