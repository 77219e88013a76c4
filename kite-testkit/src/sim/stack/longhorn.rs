//! Longhorn's manager (`longhorn-manager`) and its uninstall job
//! (`longhorn-manager uninstall`, `controller/uninstall_controller.go`).

use super::objects::{
    DAEMON_SETS, MUTATING, VALIDATING, add_finalizer, daemon_set_ready, ensure, image_tag, remove, serve_webhooks,
    webhook_configuration,
};
use crate::sim::object_fields::{condition, name_of, namespace_of};
use crate::sim::store_io::{find, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const NAMESPACE: &str = "longhorn-system";
const MANAGER: &str = "longhorn-manager";
const NODES: (&str, &str, &str) = ("longhorn.io", "v1beta2", "nodes");
const SETTINGS: (&str, &str, &str) = ("longhorn.io", "v1beta2", "settings");
const STORAGE_CLASSES: (&str, &str, &str) = ("storage.k8s.io", "v1", "storageclasses");
/// The finalizer Longhorn's manager puts on its objects.
pub const FINALIZER: &str = "longhorn.io";
/// The setting Longhorn's uninstall job requires to be `"true"`.
pub const CONFIRMATION: &str = "deleting-confirmation-flag";
/// The uninstall job's name.
pub const UNINSTALL_JOB: &str = "longhorn-uninstall";
/// The Service Longhorn's webhooks are served at.
const WEBHOOK_SERVICE: &str = "longhorn-admission-webhook";
/// The kinds of Longhorn's objects the simulation makes.
const KINDS: [(&str, &str, &str); 2] = [NODES, SETTINGS];

pub(super) fn step(inner: &Arc<Inner>, rules: &crate::sim::rules::Rules) {
    uninstall_job(inner, rules);
    let running = daemon_set_ready(inner, NAMESPACE, MANAGER);
    serve_webhooks(inner, NAMESPACE, WEBHOOK_SERVICE, running);
    let Some(manager) = find(inner, "apps", "daemonsets", NAMESPACE, MANAGER).filter(|_| running) else { return };
    if inner.registry().find(NODES.0, NODES.1, NODES.2).is_none() {
        return;
    }
    let version = image_tag(&manager);
    for node in objects(inner, "", "nodes") {
        manage_node(inner, name_of(&node));
    }
    for (name, value) in [(CONFIRMATION, "false".to_string()), ("current-longhorn-version", version.clone())] {
        let setting = json!({"apiVersion": "longhorn.io/v1beta2", "kind": "Setting",
                             "metadata": {"name": name, "namespace": NAMESPACE}, "value": value});
        ensure(inner, MANAGER, SETTINGS, setting);
        if name == "current-longhorn-version"
            && let Some(current) = find(inner, SETTINGS.0, SETTINGS.2, NAMESPACE, name)
            && current["value"] != value.as_str()
        {
            write(inner, MANAGER, SETTINGS, NAMESPACE, Some(name), json!({"value": value}), false);
        }
    }
    if let Some(class) = find(inner, "", "configmaps", NAMESPACE, "longhorn-storageclass")
        .and_then(|c| c["data"]["storageclass.yaml"].as_str().map(str::to_string))
        .and_then(|text| serde_saphyr::from_str::<Value>(&text).ok())
    {
        ensure(inner, MANAGER, STORAGE_CLASSES, class);
    }
    let rules = json!([{"apiGroups": ["longhorn.io"], "apiVersions": ["v1beta2"], "operations": ["CREATE", "UPDATE"],
                         "resources": ["nodes", "settings", "volumes"]}]);
    for (api, kind, name, webhook) in [
        (VALIDATING, "ValidatingWebhookConfiguration", "longhorn-webhook-validator", "validator.longhorn.io"),
        (MUTATING, "MutatingWebhookConfiguration", "longhorn-webhook-mutator", "mutator.longhorn.io"),
    ] {
        ensure(
            inner,
            MANAGER,
            api,
            webhook_configuration(kind, name, webhook, NAMESPACE, WEBHOOK_SERVICE, rules.clone()),
        );
    }
}

/// The `nodes.longhorn.io` of a node: held by [`FINALIZER`], `Ready` and `Schedulable`.
fn manage_node(inner: &Arc<Inner>, node: &str) {
    let object = json!({"apiVersion": "longhorn.io/v1beta2", "kind": "Node",
                        "metadata": {"name": node, "namespace": NAMESPACE},
                        "spec": {"allowScheduling": true, "disks": {}, "tags": []}});
    ensure(inner, MANAGER, NODES, object);
    let Some(current) = find(inner, NODES.0, NODES.2, NAMESPACE, node) else { return };
    add_finalizer(inner, MANAGER, NODES, &current, FINALIZER);
    let previous = &current["status"]["conditions"];
    let conditions = json!([
        condition(previous, "Ready", true, "", "", &[]),
        condition(previous, "Schedulable", true, "", "", &[]),
        condition(previous, "MountPropagation", true, "", "", &[]),
    ]);
    if current["status"]["conditions"] != conditions {
        write(inner, MANAGER, NODES, NAMESPACE, Some(node), json!({"status": {"conditions": conditions}}), true);
    }
}

/// The uninstall job: its pods fail unless the confirmation flag is
/// `"true"`; otherwise Longhorn's objects (their finalizers released), its
/// webhooks unless the rules say to leave them, its StorageClass and its
/// manager are removed, and the job completes.
fn uninstall_job(inner: &Arc<Inner>, rules: &crate::sim::rules::Rules) {
    let Some(job) = find(inner, "batch", "jobs", NAMESPACE, UNINSTALL_JOB) else { return };
    if !job["metadata"]["deletionTimestamp"].is_null() {
        return;
    }
    // The job checks the flag before it starts; once it has removed Longhorn (the manager gone), it only finishes.
    let uninstalled = find(inner, "apps", "daemonsets", NAMESPACE, MANAGER).is_none();
    if uninstalled {
        return;
    }
    let confirmed = find(inner, SETTINGS.0, SETTINGS.2, NAMESPACE, CONFIRMATION).is_some_and(|s| s["value"] == "true");
    if !confirmed {
        // Its pods fail (before they finish: annotated while still pending or running).
        let pods = objects(inner, "", "pods").into_iter().filter(|p| {
            namespace_of(p) == NAMESPACE
                && p["metadata"]["labels"]["job-name"] == UNINSTALL_JOB
                && !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
                && p["metadata"]["annotations"][crate::sim::workloads::CRASH_ANNOTATION].is_null()
        });
        for pod in pods {
            let crash = json!({"metadata": {"annotations": {crate::sim::workloads::CRASH_ANNOTATION: "true"}}});
            write(inner, UNINSTALL_JOB, ("", "v1", "pods"), NAMESPACE, Some(name_of(&pod)), crash, false);
        }
        return;
    }
    for api in KINDS {
        for object in objects(inner, api.0, api.2).into_iter().filter(|o| namespace_of(o) == NAMESPACE) {
            super::objects::drop_finalizer(inner, UNINSTALL_JOB, api, &object, FINALIZER);
            remove(inner, api, NAMESPACE, name_of(&object));
        }
    }
    remove(inner, DAEMON_SETS, NAMESPACE, MANAGER);
    if !rules.longhorn_leaves_webhooks {
        remove(inner, VALIDATING, "", "longhorn-webhook-validator");
        remove(inner, MUTATING, "", "longhorn-webhook-mutator");
    }
    remove(inner, STORAGE_CLASSES, "", "longhorn");
}
