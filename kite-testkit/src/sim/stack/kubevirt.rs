//! KubeVirt's virt-operator (`pkg/virt-operator`): deploys KubeVirt for a
//! `KubeVirt` resource, reports `phase` and the `Available` condition, and
//! removes what it deployed when the resource is deleted.

use super::objects::{
    API_SERVICES, DAEMON_SETS, DEPLOYMENTS, SERVICES, VALIDATING, add_finalizer, api_service, daemon_set_ready,
    deployment, deployment_available, drop_finalizer, ensure, image_tag, install_crds, is_deleting, remove,
    remove_crds, serve_webhooks, service, webhook_configuration,
};
use crate::sim::object_fields::{condition, name_of, namespace_of};
use crate::sim::store_io::{find, objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const KUBEVIRT: (&str, &str, &str) = ("kubevirt.io", "v1", "kubevirts");
/// The finalizer virt-operator puts on its `KubeVirt`.
pub const FINALIZER: &str = "kubevirt.io/foregroundDeleteKubeVirt";
const MANAGER: &str = "virt-operator";
/// The label virt-handler puts on the nodes it runs on.
const SCHEDULABLE: &str = "kubevirt.io/schedulable";

pub(super) fn step(inner: &Arc<Inner>, node: &str) {
    for kubevirt in objects(inner, KUBEVIRT.0, KUBEVIRT.2) {
        let namespace = namespace_of(&kubevirt).to_string();
        let operator = find(inner, "apps", "deployments", &namespace, "virt-operator");
        // Without its operator, nothing acts on the resource (a deleted one stays, held by its finalizer).
        let Some(operator) = operator.filter(|_| deployment_available(inner, &namespace, "virt-operator")) else {
            serve_webhooks(inner, &namespace, "virt-api", false);
            continue;
        };
        if is_deleting(&kubevirt) {
            uninstall(inner, &kubevirt, node);
        } else {
            deploy(inner, &kubevirt, &image_tag(&operator), node);
        }
    }
}

fn deploy(inner: &Arc<Inner>, kubevirt: &Value, version: &str, node: &str) {
    let namespace = namespace_of(kubevirt);
    add_finalizer(inner, MANAGER, KUBEVIRT, kubevirt, FINALIZER);
    install_crds(inner, MANAGER, "kubevirt.io");
    let image = |name: &str| format!("quay.io/kubevirt/{name}:{version}");
    ensure(inner, MANAGER, SERVICES, service(namespace, "virt-api", json!({"kubevirt.io": "virt-api"}), 443));
    for name in ["virt-api", "virt-controller"] {
        ensure(inner, MANAGER, DEPLOYMENTS, deployment(namespace, name, &image(name), json!({"kubevirt.io": name})));
    }
    let mut handler =
        deployment(namespace, "virt-handler", &image("virt-handler"), json!({"kubevirt.io": "virt-handler"}));
    handler["kind"] = json!("DaemonSet");
    if let Some(spec) = handler["spec"].as_object_mut() {
        spec.remove("replicas");
    }
    ensure(inner, MANAGER, DAEMON_SETS, handler);
    ensure(inner, MANAGER, API_SERVICES, api_service("subresources.kubevirt.io", "v1", namespace, "virt-api"));
    let rules = json!([{"apiGroups": ["kubevirt.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                         "resources": ["virtualmachineinstancemigrations"]}]);
    let validator = webhook_configuration(
        "ValidatingWebhookConfiguration",
        "virt-api-validator",
        "migration-create-validator.kubevirt.io",
        namespace,
        "virt-api",
        rules,
    );
    ensure(inner, MANAGER, VALIDATING, validator);
    let api = deployment_available(inner, namespace, "virt-api");
    serve_webhooks(inner, namespace, "virt-api", api);
    let handler = daemon_set_ready(inner, namespace, "virt-handler");
    if handler {
        label_node(inner, node, Some("true"));
    }
    let available = api && handler && deployment_available(inner, namespace, "virt-controller");
    report(inner, kubevirt, if available { "Deployed" } else { "Deploying" }, available, version);
}

fn uninstall(inner: &Arc<Inner>, kubevirt: &Value, node: &str) {
    let namespace = namespace_of(kubevirt);
    let blocked = kubevirt["spec"]["uninstallStrategy"] == "BlockUninstallIfWorkloadsExist"
        && !objects(inner, "kubevirt.io", "virtualmachineinstances").is_empty();
    if blocked {
        report(
            inner,
            kubevirt,
            "Deleting",
            false,
            kubevirt["status"]["observedKubeVirtVersion"].as_str().unwrap_or(""),
        );
        return;
    }
    // As virt-operator's DeleteAll: the CRDs first, then the workloads, webhooks, APIServices and Services.
    remove_crds(inner, "kubevirt.io");
    remove(inner, DAEMON_SETS, namespace, "virt-handler");
    for name in ["virt-api", "virt-controller"] {
        remove(inner, DEPLOYMENTS, namespace, name);
    }
    remove(inner, VALIDATING, "", "virt-api-validator");
    remove(inner, API_SERVICES, "", "v1.subresources.kubevirt.io");
    remove(inner, SERVICES, namespace, "virt-api");
    serve_webhooks(inner, namespace, "virt-api", false);
    label_node(inner, node, None);
    drop_finalizer(inner, MANAGER, KUBEVIRT, kubevirt, FINALIZER);
}

fn label_node(inner: &Arc<Inner>, node: &str, value: Option<&str>) {
    let Some(current) = find(inner, "", "nodes", "", node) else { return };
    if current["metadata"]["labels"][SCHEDULABLE].as_str() == value {
        return;
    }
    let patch = json!({"metadata": {"labels": {SCHEDULABLE: value}}});
    write(inner, "virt-handler", ("", "v1", "nodes"), "", Some(node), patch, false);
}

fn report(inner: &Arc<Inner>, kubevirt: &Value, phase: &str, available: bool, version: &str) {
    let previous = &kubevirt["status"]["conditions"];
    let (reason, message) = if available {
        ("AllResourcesCreated", "All components are ready.")
    } else {
        ("DeploymentInProgress", "Deploying version with registry quay.io/kubevirt")
    };
    let status = json!({
        "phase": phase,
        "observedKubeVirtVersion": version,
        "targetKubeVirtVersion": version,
        "observedGeneration": kubevirt["metadata"]["generation"],
        "conditions": [
            condition(previous, "Available", available, reason, message, &[]),
            condition(previous, "Progressing", !available, reason, message, &[]),
            condition(previous, "Degraded", false, reason, message, &[]),
        ],
    });
    if kubevirt["status"] != status {
        write(
            inner,
            MANAGER,
            KUBEVIRT,
            namespace_of(kubevirt),
            Some(name_of(kubevirt)),
            json!({"status": status}),
            true,
        );
    }
}
