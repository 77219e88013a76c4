//! The stack's operators, for a cluster that starts without KubeVirt, CDI
//! and Longhorn ([`super::StackSimulation::Operators`]): once an operator's
//! own Deployment (or Longhorn's manager DaemonSet) runs, it does what the
//! upstream operator does with its custom resource.
//!
//! - **KubeVirt** ([`kubevirt`]): a `KubeVirt` gets the finalizer
//!   `kubevirt.io/foregroundDeleteKubeVirt`, KubeVirt's CRDs, `virt-api`
//!   (Deployment and Service), `virt-controller`, the `virt-handler`
//!   DaemonSet, the APIService `v1.subresources.kubevirt.io`, the webhook
//!   configuration `virt-api-validator`, the node label
//!   `kubevirt.io/schedulable=true`, and the status `phase: Deployed` with
//!   `Available` once they run. Deleted, it removes them all, then its
//!   finalizer; with `uninstallStrategy: BlockUninstallIfWorkloadsExist` it
//!   waits while instances exist.
//! - **CDI** ([`cdi`]): the same for the cluster-scoped `CDI` (finalizer
//!   `operator.cdi.kubevirt.io`): CDI's CRDs, `cdi-apiserver` and its
//!   Service `cdi-api`, `cdi-deployment`, `cdi-uploadproxy`, the APIService
//!   `v1beta1.upload.cdi.kubevirt.io` and the webhook configuration
//!   `cdi-api-dataimportcron-validate`.
//! - **Longhorn** ([`longhorn`]): while `longhorn-manager` runs, a
//!   `nodes.longhorn.io` per node (finalizer `longhorn.io`, `Ready` and
//!   `Schedulable`), the settings `deleting-confirmation-flag` and
//!   `current-longhorn-version`, the StorageClass `longhorn` of the
//!   `longhorn-storageclass` ConfigMap, and the webhook configurations
//!   `longhorn-webhook-validator` and `longhorn-webhook-mutator` served by
//!   `longhorn-admission-webhook`. The Job `longhorn-uninstall` fails unless
//!   `deleting-confirmation-flag` is `"true"`; then it removes Longhorn's
//!   objects, its webhooks, its StorageClass and the manager, and completes.
//!
//! A webhook is answered (allowed) only while the pods behind its Service
//! run; after that, calling it fails as on a real cluster.

pub(super) mod cdi;
pub(super) mod kubevirt;
pub(super) mod longhorn;

use super::{find, name_of, write};
use crate::admission::call::WebhookTarget;
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

/// One pass of every operator.
pub(super) fn step(inner: &Arc<Inner>, node: &str, rules: &super::Rules) {
    kubevirt::step(inner, node);
    cdi::step(inner);
    longhorn::step(inner, rules);
}

pub(super) fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

/// Whether the Deployment `namespace/name` has an available replica.
pub(super) fn deployment_available(inner: &Arc<Inner>, namespace: &str, name: &str) -> bool {
    find(inner, "apps", "deployments", namespace, name)
        .is_some_and(|d| !is_deleting(&d) && d["status"]["availableReplicas"].as_i64().unwrap_or(0) > 0)
}

/// Whether the DaemonSet `namespace/name` has a ready pod.
pub(super) fn daemon_set_ready(inner: &Arc<Inner>, namespace: &str, name: &str) -> bool {
    find(inner, "apps", "daemonsets", namespace, name)
        .is_some_and(|d| !is_deleting(&d) && d["status"]["numberReady"].as_i64().unwrap_or(0) > 0)
}

/// The tag of the image of the first container of a workload's pod template.
pub(super) fn image_tag(workload: &Value) -> String {
    let image = workload["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap_or_default();
    image.rsplit_once(':').map(|(_, tag)| tag.to_string()).unwrap_or_default()
}

/// Creates `object` (cluster-scoped when it has no namespace) unless one of its name exists.
pub(super) fn ensure(inner: &Arc<Inner>, manager: &str, api: (&str, &str, &str), object: Value) {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or("").to_string();
    if find(inner, api.0, api.2, &namespace, name_of(&object)).is_none() {
        write(inner, manager, api, &namespace, None, object, false);
    }
}

/// Deletes the object `namespace/name` of `api` when it exists.
pub(super) fn remove(inner: &Arc<Inner>, api: (&str, &str, &str), namespace: &str, name: &str) {
    if find(inner, api.0, api.2, namespace, name).is_some() {
        super::delete(inner, api.0, api.2, namespace, name);
    }
}

/// Adds `finalizer` to `object` when it lacks it.
pub(super) fn add_finalizer(
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
    write(inner, manager, api, super::namespace_of(object), Some(name_of(object)), patch, false);
}

/// Removes `finalizer` from `object`.
pub(super) fn drop_finalizer(
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
pub(super) fn deployment(namespace: &str, name: &str, image: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": name, "image": image}]}}},
    })
}

/// A Service selecting `selector`, on `port`.
pub(super) fn service(namespace: &str, name: &str, selector: Value, port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector, "ports": [{"port": port, "targetPort": port, "protocol": "TCP"}]},
    })
}

/// An APIService backed by the Service `namespace/service`.
pub(super) fn api_service(group: &str, version: &str, namespace: &str, service: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}")},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": 1000, "versionPriority": 15,
                 "insecureSkipTLSVerify": true, "service": {"namespace": namespace, "name": service, "port": 443}},
    })
}

/// A webhook configuration (`ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`)
/// of one webhook, failing closed, called at the Service `namespace/service` for `rules`.
pub(super) fn webhook_configuration(
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
pub(super) fn serve_webhooks(inner: &Arc<Inner>, namespace: &str, name: &str, up: bool) {
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
pub(super) fn install_crds(inner: &Arc<Inner>, manager: &str, group: &str) {
    for crd in upstream_crds().iter().filter(|crd| crd["spec"]["group"] == group) {
        if find(inner, CRDS.0, CRDS.2, "", name_of(crd)).is_none() {
            write(inner, manager, CRDS, "", None, crd.clone(), false);
        }
    }
}

/// Deletes the upstream CRDs of `group` (the operator's own CRD comes from its manifest and stays).
pub(super) fn remove_crds(inner: &Arc<Inner>, group: &str) {
    for crd in upstream_crds().iter().filter(|crd| crd["spec"]["group"] == group) {
        remove(inner, CRDS, "", name_of(crd));
    }
}

pub(super) const CRDS: (&str, &str, &str) = ("apiextensions.k8s.io", "v1", "customresourcedefinitions");
pub(super) const DEPLOYMENTS: (&str, &str, &str) = ("apps", "v1", "deployments");
pub(super) const DAEMON_SETS: (&str, &str, &str) = ("apps", "v1", "daemonsets");
pub(super) const SERVICES: (&str, &str, &str) = ("", "v1", "services");
pub(super) const API_SERVICES: (&str, &str, &str) = ("apiregistration.k8s.io", "v1", "apiservices");
pub(super) const VALIDATING: (&str, &str, &str) =
    ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations");
pub(super) const MUTATING: (&str, &str, &str) = ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations");
