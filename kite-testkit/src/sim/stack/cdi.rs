//! CDI's cdi-operator (`pkg/operator`): deploys CDI for the cluster-scoped
//! `CDI` resource, reports `phase` and the `Available` condition, and
//! removes what it deployed when the resource is deleted.

use super::objects::{
    API_SERVICES, DEPLOYMENTS, SERVICES, VALIDATING, add_finalizer, api_service, deployment, deployment_available,
    drop_finalizer, ensure, image_tag, install_crds, is_deleting, remove, remove_crds, serve_webhooks, service,
    webhook_configuration,
};
use crate::sim::object_fields::{condition, name_of};
use crate::sim::store_io::{objects, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const CDI: (&str, &str, &str) = ("cdi.kubevirt.io", "v1beta1", "cdis");
/// The finalizer cdi-operator puts on its `CDI`.
pub const FINALIZER: &str = "operator.cdi.kubevirt.io";
const MANAGER: &str = "cdi-operator";
const COMPONENTS: [&str; 3] = ["cdi-apiserver", "cdi-deployment", "cdi-uploadproxy"];

pub(super) fn step(inner: &Arc<Inner>) {
    let operators: Vec<Value> = objects(inner, "apps", "deployments")
        .into_iter()
        .filter(|d| {
            name_of(d) == "cdi-operator"
                && deployment_available(inner, crate::sim::object_fields::namespace_of(d), "cdi-operator")
        })
        .collect();
    for cdi in objects(inner, CDI.0, CDI.2) {
        let Some(operator) = operators.first() else {
            serve_webhooks(inner, "cdi", "cdi-api", false);
            continue;
        };
        let namespace = crate::sim::object_fields::namespace_of(operator).to_string();
        if is_deleting(&cdi) {
            uninstall(inner, &cdi, &namespace);
        } else {
            deploy(inner, &cdi, &namespace, &image_tag(operator));
        }
    }
}

fn deploy(inner: &Arc<Inner>, cdi: &Value, namespace: &str, version: &str) {
    add_finalizer(inner, MANAGER, CDI, cdi, FINALIZER);
    install_crds(inner, MANAGER, "cdi.kubevirt.io");
    for name in COMPONENTS {
        let image = format!("quay.io/kubevirt/{name}:{version}");
        ensure(inner, MANAGER, DEPLOYMENTS, deployment(namespace, name, &image, json!({"cdi.kubevirt.io": name})));
    }
    ensure(inner, MANAGER, SERVICES, service(namespace, "cdi-api", json!({"cdi.kubevirt.io": "cdi-apiserver"}), 443));
    ensure(inner, MANAGER, API_SERVICES, api_service("upload.cdi.kubevirt.io", "v1beta1", namespace, "cdi-api"));
    let rules = json!([{"apiGroups": ["cdi.kubevirt.io"], "apiVersions": ["v1beta1"], "operations": ["CREATE", "UPDATE"],
                         "resources": ["dataimportcrons"]}]);
    let validator = webhook_configuration(
        "ValidatingWebhookConfiguration",
        "cdi-api-dataimportcron-validate",
        "dataimportcron-validate.cdi.kubevirt.io",
        namespace,
        "cdi-api",
        rules,
    );
    ensure(inner, MANAGER, VALIDATING, validator);
    serve_webhooks(inner, namespace, "cdi-api", deployment_available(inner, namespace, "cdi-apiserver"));
    let available = COMPONENTS.iter().all(|name| deployment_available(inner, namespace, name));
    report(inner, cdi, if available { "Deployed" } else { "Deploying" }, available, version);
}

fn uninstall(inner: &Arc<Inner>, cdi: &Value, namespace: &str) {
    let blocked = cdi["spec"]["uninstallStrategy"] == "BlockUninstallIfWorkloadsExist"
        && !objects(inner, "cdi.kubevirt.io", "datavolumes").is_empty();
    if blocked {
        report(inner, cdi, "Deleting", false, cdi["status"]["observedVersion"].as_str().unwrap_or(""));
        return;
    }
    remove_crds(inner, "cdi.kubevirt.io");
    for name in COMPONENTS {
        remove(inner, DEPLOYMENTS, namespace, name);
    }
    remove(inner, VALIDATING, "", "cdi-api-dataimportcron-validate");
    remove(inner, API_SERVICES, "", "v1beta1.upload.cdi.kubevirt.io");
    remove(inner, SERVICES, namespace, "cdi-api");
    serve_webhooks(inner, namespace, "cdi-api", false);
    drop_finalizer(inner, MANAGER, CDI, cdi, FINALIZER);
}

fn report(inner: &Arc<Inner>, cdi: &Value, phase: &str, available: bool, version: &str) {
    let previous = &cdi["status"]["conditions"];
    let (reason, message) = if available { ("", "") } else { ("DeployInProgress", "Started Deployment") };
    let status = json!({
        "phase": phase,
        "observedVersion": version,
        "targetVersion": version,
        "operatorVersion": version,
        "conditions": [
            condition(previous, "Available", available, reason, message, &[]),
            condition(previous, "Progressing", !available, reason, message, &[]),
            condition(previous, "Degraded", false, reason, message, &[]),
        ],
    });
    if cdi["status"] != status {
        write(inner, MANAGER, CDI, "", Some(name_of(cdi)), json!({"status": status}), true);
    }
}
