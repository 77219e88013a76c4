//! What the simulated operators share: the objects they make (Deployments,
//! Services, APIServices, webhook configurations, CRDs) and remove, their
//! finalizers, and whether what they run is up.

use crate::sim::object_fields::{name_of, namespace_of};
use crate::sim::store_io::{delete, find, write};
use crate::state::Inner;
use crate::webhook_target::WebhookTarget;
use serde_json::{Value, json};
use std::sync::Arc;

/// Whether `object` is being deleted.
pub(crate) fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

/// Whether the Deployment `namespace/name` has an available replica.
pub(crate) fn deployment_available(inner: &Arc<Inner>, namespace: &str, name: &str) -> bool {
    find(inner, "apps", "deployments", namespace, name)
        .is_some_and(|d| !is_deleting(&d) && d["status"]["availableReplicas"].as_i64().unwrap_or(0) > 0)
}

/// Whether the DaemonSet `namespace/name` has a ready pod.
pub(crate) fn daemon_set_ready(inner: &Arc<Inner>, namespace: &str, name: &str) -> bool {
    find(inner, "apps", "daemonsets", namespace, name)
        .is_some_and(|d| !is_deleting(&d) && d["status"]["numberReady"].as_i64().unwrap_or(0) > 0)
}

/// The tag of the image of the first container of a workload's pod template.
pub(crate) fn image_tag(workload: &Value) -> String {
    let image = workload["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap_or_default();
    image.rsplit_once(':').map(|(_, tag)| tag.to_string()).unwrap_or_default()
}

/// Creates `object` (cluster-scoped when it has no namespace) unless one of its name exists.
pub(crate) fn ensure(inner: &Arc<Inner>, manager: &str, api: (&str, &str, &str), object: Value) {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    if find(inner, api.0, api.2, &namespace, name_of(&object)).is_none() {
        write(inner, manager, api, &namespace, None, object, false);
    }
}

/// Deletes the object `namespace/name` of `api` when it exists.
pub(crate) fn remove(inner: &Arc<Inner>, api: (&str, &str, &str), namespace: &str, name: &str) {
    if find(inner, api.0, api.2, namespace, name).is_some() {
        delete(inner, api.0, api.2, namespace, name);
    }
}

/// Adds `finalizer` to `object` when it lacks it.
pub(crate) fn add_finalizer(
    inner: &Arc<Inner>,
    manager: &str,
    api: (&str, &str, &str),
    object: &Value,
    finalizer: &str,
) {
    let mut finalizers: Vec<Value> = object["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    if finalizers.iter().any(|f| f == finalizer) {
        return;
    }
    finalizers.push(json!(finalizer));
    set_finalizers(inner, manager, api, object, finalizers);
}

/// Writes `object`'s finalizers as `finalizers`.
fn set_finalizers(inner: &Arc<Inner>, manager: &str, api: (&str, &str, &str), object: &Value, finalizers: Vec<Value>) {
    let patch = json!({"metadata": {"finalizers": finalizers}});
    write(inner, manager, api, namespace_of(object), Some(name_of(object)), patch, false);
}

/// Removes `finalizer` from `object`.
pub(crate) fn drop_finalizer(
    inner: &Arc<Inner>,
    manager: &str,
    api: (&str, &str, &str),
    object: &Value,
    finalizer: &str,
) {
    let finalizers: Vec<Value> = object["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    set_finalizers(inner, manager, api, object, finalizers);
}

/// A Deployment of one replica running `image`, its pods labelled `labels`.
pub(crate) fn deployment(namespace: &str, name: &str, image: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": name, "image": image}]}}},
    })
}

/// A Service selecting `selector`, on `port`.
pub(crate) fn service(namespace: &str, name: &str, selector: Value, port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector, "ports": [{"port": port, "targetPort": port, "protocol": "TCP"}]},
    })
}

/// An APIService backed by the Service `namespace/service`.
pub(crate) fn api_service(group: &str, version: &str, namespace: &str, service: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}")},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": 1000, "versionPriority": 15,
                 "insecureSkipTLSVerify": true, "service": {"namespace": namespace, "name": service, "port": 443}},
    })
}

/// A webhook configuration (`ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`)
/// of one webhook, failing closed, called at the Service `namespace/service` for `rules`.
pub(crate) fn webhook_configuration(
    kind: &str,
    name: &str,
    webhook: &str,
    namespace: &str,
    service: &str,
    rules: Value,
) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name},
        "webhooks": [{"name": webhook, "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "clientConfig": {"service": {"namespace": namespace, "name": service, "port": 443}}, "rules": rules}],
    })
}

/// Answers the webhooks of the Service `namespace/name` (allowing every request) while `up`; stops answering otherwise.
pub(crate) fn serve_webhooks(inner: &Arc<Inner>, namespace: &str, name: &str, up: bool) {
    let target = WebhookTarget::Service { namespace: namespace.into(), name: name.into() };
    let mut webhooks = inner.webhooks.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    if up {
        webhooks.entry(target).or_insert_with(|| {
            Arc::new(|review: &Value| {
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "response": {"uid": review["request"]["uid"], "allowed": true}})
            })
        });
    } else {
        webhooks.remove(&target);
    }
}

/// The upstream CRDs, built once: their schemas are large, and the operators look at them on every step.
fn upstream_crds() -> &'static [Value] {
    static CRDS: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    CRDS.get_or_init(crate::upstream::crds)
}

/// Installs the upstream CRDs of `group` that are not there yet.
pub(crate) fn install_crds(inner: &Arc<Inner>, manager: &str, group: &str) {
    for crd in upstream_crds().iter().filter(|crd| crd["spec"]["group"] == group) {
        if find(inner, CRDS.0, CRDS.2, "", name_of(crd)).is_none() {
            write(inner, manager, CRDS, "", None, crd.clone(), false);
        }
    }
}

/// Deletes the upstream CRDs of `group` (the operator's own CRD comes from its manifest and stays).
pub(crate) fn remove_crds(inner: &Arc<Inner>, group: &str) {
    for crd in upstream_crds().iter().filter(|crd| crd["spec"]["group"] == group) {
        remove(inner, CRDS, "", name_of(crd));
    }
}

pub(crate) const CRDS: (&str, &str, &str) = ("apiextensions.k8s.io", "v1", "customresourcedefinitions");
pub(crate) const DEPLOYMENTS: (&str, &str, &str) = ("apps", "v1", "deployments");
pub(crate) const DAEMON_SETS: (&str, &str, &str) = ("apps", "v1", "daemonsets");
pub(crate) const SERVICES: (&str, &str, &str) = ("", "v1", "services");
pub(crate) const API_SERVICES: (&str, &str, &str) = ("apiregistration.k8s.io", "v1", "apiservices");
pub(crate) const VALIDATING: (&str, &str, &str) =
    ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations");
pub(crate) const MUTATING: (&str, &str, &str) = ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations");
