//! The EndpointSlice and Endpoints controllers: a Service with a selector
//! lists the pods it selects, the ready ones as ready, with its ports
//! resolved against the pods' container ports.

use super::pods::{is_deleting, is_ready};
use crate::selector::labels_of;
use crate::sim::object_fields::{name_of, namespace_of, owner_reference};
use crate::sim::store_io::{delete, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const SLICE_CONTROLLER: &str = "endpointslice-controller.k8s.io";
const ENDPOINTS_MANAGED_BY: &str = "endpoints.kubernetes.io/managed-by";
const ENDPOINTS_CONTROLLER: &str = "endpoint-controller";

/// A Service port's target on `pod`: a number, or a container port's name.
fn target_port(port: &Value, pod: &Value) -> Value {
    match &port["targetPort"] {
        Value::Number(n) => Value::Number(n.clone()),
        Value::String(name) => pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["ports"].as_array().into_iter().flatten())
            .find(|p| p["name"] == name.as_str())
            .map_or(Value::Null, |p| p["containerPort"].clone()),
        _ => port["port"].clone(),
    }
}

/// One pass over every Service (and the Endpoints left by deleted ones).
pub(super) fn step(inner: &Arc<Inner>) {
    let pods = objects(inner, "", "pods");
    let services = objects(inner, "", "services");
    let slices = objects(inner, "discovery.k8s.io", "endpointslices");
    let endpoints = objects(inner, "", "endpoints");
    for service in &services {
        let Some(selector) = service["spec"]["selector"].as_object().filter(|s| !s.is_empty()) else { continue };
        if is_deleting(service) {
            continue;
        }
        let namespace = namespace_of(service);
        let selected: Vec<&Value> = pods
            .iter()
            .filter(|p| namespace_of(p) == namespace && !is_deleting(p) && p["status"]["podIP"].is_string())
            .filter(|p| {
                let labels = labels_of(p);
                selector.iter().all(|(k, v)| v.as_str().is_some_and(|v| labels.get(k).map(String::as_str) == Some(v)))
            })
            .collect();
        let service_ports: Vec<&Value> = service["spec"]["ports"].as_array().into_iter().flatten().collect();
        let first = selected.first().copied().unwrap_or(&Value::Null);
        let ports: Vec<Value> = service_ports
            .iter()
            .map(|p| json!({ "name": p["name"].as_str().unwrap_or(""), "port": target_port(p, first), "protocol": p["protocol"].as_str().unwrap_or("TCP") }))
            .collect();
        sync_slice(inner, service, &slices, &selected, &ports);
        sync_endpoints(inner, service, &endpoints, &selected, &ports);
    }
    for stale in endpoints.iter().filter(|e| e["metadata"]["labels"][ENDPOINTS_MANAGED_BY] == ENDPOINTS_CONTROLLER) {
        let gone = !services.iter().any(|s| namespace_of(s) == namespace_of(stale) && name_of(s) == name_of(stale));
        if gone {
            delete(inner, "", "endpoints", namespace_of(stale), name_of(stale));
        }
    }
}

fn target_ref(pod: &Value) -> Value {
    json!({ "kind": "Pod", "namespace": namespace_of(pod), "name": name_of(pod), "uid": pod["metadata"]["uid"] })
}

fn sync_slice(inner: &Arc<Inner>, service: &Value, slices: &[Value], selected: &[&Value], ports: &[Value]) {
    let (namespace, name) = (namespace_of(service), name_of(service));
    let listed: Vec<Value> = selected
        .iter()
        .map(|pod| {
            let ready = is_ready(pod);
            json!({ "addresses": [pod["status"]["podIP"]], "conditions": { "ready": ready, "serving": ready, "terminating": false },
                    "nodeName": pod["spec"]["nodeName"], "targetRef": target_ref(pod) })
        })
        .collect();
    let existing = slices.iter().find(|s| {
        namespace_of(s) == namespace
            && s["metadata"]["labels"][SERVICE_NAME] == name
            && s["metadata"]["labels"][MANAGED_BY] == SLICE_CONTROLLER
    });
    let api = ("discovery.k8s.io", "v1", "endpointslices");
    match existing {
        None => {
            let slice = json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": { "generateName": format!("{name}-"), "labels": { SERVICE_NAME: name, MANAGED_BY: SLICE_CONTROLLER },
                              "ownerReferences": [owner_reference(service, "v1", "Service")] },
                "addressType": "IPv4", "endpoints": listed, "ports": ports,
            });
            write(inner, SLICE_CONTROLLER, api, namespace, None, slice, false);
        }
        Some(slice) => {
            let same = slice["endpoints"].as_array().map_or(listed.is_empty(), |e| *e == listed)
                && slice["ports"] == json!(ports);
            if !same {
                let patch = json!({ "endpoints": listed, "ports": ports });
                write(inner, SLICE_CONTROLLER, api, namespace, Some(name_of(slice)), patch, false);
            }
        }
    }
}

fn sync_endpoints(inner: &Arc<Inner>, service: &Value, endpoints: &[Value], selected: &[&Value], ports: &[Value]) {
    let (namespace, name) = (namespace_of(service), name_of(service));
    let address = |pod: &&Value| json!({ "ip": pod["status"]["podIP"], "nodeName": pod["spec"]["nodeName"], "targetRef": target_ref(pod) });
    let ready: Vec<Value> = selected.iter().filter(|p| is_ready(p)).map(address).collect();
    let not_ready: Vec<Value> = selected.iter().filter(|p| !is_ready(p)).map(address).collect();
    let mut subset = json!({ "ports": ports });
    if !ready.is_empty() {
        subset["addresses"] = json!(ready);
    }
    if !not_ready.is_empty() {
        subset["notReadyAddresses"] = json!(not_ready);
    }
    let subsets = if selected.is_empty() { json!(null) } else { json!([subset]) };
    let api = ("", "v1", "endpoints");
    match endpoints.iter().find(|e| namespace_of(e) == namespace && name_of(e) == name) {
        None => {
            let object = json!({ "apiVersion": "v1", "kind": "Endpoints",
                "metadata": { "name": name, "labels": { ENDPOINTS_MANAGED_BY: ENDPOINTS_CONTROLLER } }, "subsets": subsets });
            write(inner, ENDPOINTS_CONTROLLER, api, namespace, None, object, false);
        }
        Some(existing) if existing["subsets"] != subsets => {
            write(inner, ENDPOINTS_CONTROLLER, api, namespace, Some(name), json!({ "subsets": subsets }), false);
        }
        Some(_) => {}
    }
}
