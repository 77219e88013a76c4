//! Aggregated APIs: `APIService` objects (`apiregistration.k8s.io/v1`) as
//! kube-aggregator treats them. One backed by a Service is `Available` only
//! while that Service has a ready endpoint (`pkg/controller/status/available_controller.go`);
//! its group is listed in discovery, and while it is unavailable its
//! group-version answers `503`, so clients' discovery fails for that group
//! and the namespace controller, which must discover every type before it
//! can empty a namespace, keeps every terminating namespace `Terminating`
//! (KubeVirt's `v1.subresources.kubevirt.io` with `virt-api` gone is the
//! usual culprit). Nothing is proxied: an available aggregated API serves
//! no resources here.

use crate::registry::ResourceKey;
use crate::service_routes::{self, Route};
use crate::state::Inner;
use crate::store::Store;
use serde_json::{Value, json};
use std::sync::Weak;
use std::time::Duration;

fn api_services() -> ResourceKey {
    ResourceKey { group: "apiregistration.k8s.io".into(), plural: "apiservices".into() }
}

/// The `Available` condition an APIService should have: status, reason, message.
fn availability(store: &Store, api_service: &Value) -> (&'static str, &'static str, String) {
    let service = &api_service["spec"]["service"];
    let (Some(namespace), Some(name)) = (service["namespace"].as_str(), service["name"].as_str()) else {
        return ("True", "Local", "Local APIServices are always available".into());
    };
    match service_routes::route(store, namespace, name) {
        Route::NoService => ("False", "ServiceNotFound", format!("service/{name} in \"{namespace}\" is not present")),
        Route::NoReadyEndpoint => (
            "False",
            "MissingEndpoints",
            format!("endpoints for service/{name} in \"{namespace}\" have no addresses with port name \"\""),
        ),
        Route::Ready(_) => ("True", "Passed", "all checks passed".into()),
    }
}

/// The group and version an APIService claims, and whether it is local (served by the API server itself).
fn claim(api_service: &Value) -> Option<(String, String, bool)> {
    let spec = &api_service["spec"];
    let group = spec["group"].as_str()?.to_string();
    let version = spec["version"].as_str()?.to_string();
    Some((group, version, !spec["service"].is_object()))
}

/// The group-versions of the aggregated (not local) APIServices, each with whether it is available.
pub(crate) fn aggregated(store: &Store) -> Vec<(String, String, bool)> {
    store
        .list(&api_services())
        .filter_map(|(_, api_service)| {
            let (group, version, local) = claim(api_service)?;
            let available = availability(store, api_service).0 == "True";
            (!local).then_some((group, version, available))
        })
        .collect()
}

/// What discovery of every group meets while an aggregated API is
/// unavailable, as client-go's `ErrGroupDiscoveryFailed` says it: how many
/// group-versions failed, and the sentence.
pub(crate) fn discovery_failure(store: &Store) -> Option<(usize, String)> {
    let mut failed: Vec<String> = aggregated(store)
        .into_iter()
        .filter(|(_, _, available)| !available)
        .map(|(group, version, _)| format!("{group}/{version}: the server is currently unable to handle the request"))
        .collect();
    if failed.is_empty() {
        return None;
    }
    failed.sort();
    Some((failed.len(), format!("unable to retrieve the complete list of server APIs: {}", failed.join(", "))))
}

/// Brings every APIService's `Available` condition up to date.
fn refresh(store: &mut Store) {
    let now = crate::meta::now();
    let updates: Vec<_> = store
        .list(&api_services())
        .filter_map(|(key, api_service)| {
            let (status, reason, message) = availability(store, api_service);
            let previous = api_service["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
                .cloned()
                .unwrap_or_default();
            if previous["status"] == status && previous["reason"] == reason && previous["message"] == message.as_str() {
                return None;
            }
            let since = if previous["status"] == status { previous["lastTransitionTime"].clone() } else { json!(now) };
            let mut updated = api_service.clone();
            updated["status"] = json!({ "conditions": [{ "type": "Available", "status": status, "reason": reason,
                "message": message, "lastTransitionTime": since }] });
            Some((key.clone(), updated))
        })
        .collect();
    for (key, updated) in updates {
        store.replace(&api_services(), key, updated);
    }
}

/// Runs the availability controller until the server is dropped.
pub(crate) fn start(inner: Weak<Inner>, runtime: &tokio::runtime::Handle) {
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let Some(inner) = inner.upgrade() else { return };
            refresh(&mut inner.store());
        }
    });
}
