//! Deletion as the real API server reports it, seen with the real kubectl: a
//! namespace held by a finalizer says what remains and what holds it, and a
//! CustomResourceDefinition deletes its objects (waiting on their
//! finalizers) before it goes.

mod common;

use common::kubectl::{fresh, json, until};
use serde_json::Value;

fn condition<'a>(object: &'a Value, kind: &str) -> &'a Value {
    object["status"]["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == kind)).unwrap_or(&Value::Null)
}

const HELD_CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: team, finalizers: [example.org/hold]}
data: {a: b}
";

#[test]
fn a_terminating_namespace_says_what_remains_and_what_holds_it() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok_with(&["apply", "-f", "-"], Some(HELD_CONFIG_MAP));
    kubectl.ok(&["delete", "namespace", "team", "--wait=false"]);
    let namespace = until(&kubectl, &["get", "namespace", "team", "-o", "json"], "the finalizer reported", |ns| {
        condition(ns, "NamespaceFinalizersRemaining")["status"] == "True"
    });
    assert_eq!(namespace["status"]["phase"], "Terminating");
    let remaining = condition(&namespace, "NamespaceContentRemaining");
    assert_eq!(
        (remaining["status"].as_str(), remaining["reason"].as_str()),
        (Some("True"), Some("SomeResourcesRemain"))
    );
    assert_eq!(remaining["message"], "Some resources are remaining: configmaps. has 1 resource instances");
    let held = condition(&namespace, "NamespaceFinalizersRemaining");
    assert_eq!(held["reason"], "SomeFinalizersRemain");
    assert_eq!(
        held["message"],
        "Some content in the namespace has finalizers remaining: example.org/hold in 1 resource instances"
    );
    let discovered = condition(&namespace, "NamespaceDeletionDiscoveryFailure");
    assert_eq!(
        (discovered["status"].as_str(), discovered["reason"].as_str()),
        (Some("False"), Some("ResourcesDiscovered"))
    );
    let (ok, _, refused) = kubectl.run(&["create", "configmap", "late", "-n", "team"], None);
    assert!(!ok && refused.contains("because it is being terminated"), "{refused}");
    kubectl.ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    kubectl.ok(&["wait", "--for=delete", "namespace/team", "--timeout=10s"]);
}

const WIDGETS_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
";

#[test]
fn a_deleted_crd_waits_for_its_objects_and_their_finalizers() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok_with(&["apply", "-f", "-"], Some(WIDGETS_CRD));
    kubectl.ok(&["wait", "--for=condition=Established", "crd/widgets.example.org", "--timeout=10s"]);
    kubectl.ok(&["create", "namespace", "team"]);
    let widget = "apiVersion: example.org/v1alpha1\nkind: Widget\nmetadata: {name: held, namespace: team, finalizers: [example.org/hold]}\n";
    kubectl.ok_with(&["apply", "-f", "-"], Some(widget));
    kubectl.ok_with(
        &["apply", "-f", "-"],
        Some(&widget.replace("held", "free").replace(", finalizers: [example.org/hold]", "")),
    );
    kubectl.ok(&["delete", "crd", "widgets.example.org", "--wait=false"]);
    let crd = json(&kubectl.ok(&["get", "crd", "widgets.example.org", "-o", "json"]));
    let terminating = condition(&crd, "Terminating");
    assert_eq!(
        (terminating["status"].as_str(), terminating["reason"].as_str(), terminating["message"].as_str()),
        (Some("True"), Some("InstanceDeletionInProgress"), Some("CustomResource deletion is in progress"))
    );
    assert!(crd["metadata"]["finalizers"].to_string().contains("customresourcecleanup.apiextensions.k8s.io"), "{crd}");
    let widgets = kubectl.ok(&["get", "widgets", "-n", "team", "-o", "name"]);
    assert_eq!(widgets.trim(), "widget.example.org/held", "the free one is gone, the held one waits");
    let (ok, _, refused) = kubectl.run(&["apply", "-f", "-"], Some(&widget.replace("held", "new")));
    assert!(!ok && refused.contains("create not allowed while custom resource definition is terminating"), "{refused}");
    kubectl.ok(&["patch", "widget", "held", "-n", "team", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    kubectl.ok(&["wait", "--for=delete", "crd/widgets.example.org", "--timeout=10s"]);
    // kubectl's discovery cache still knows the kind; the server no longer serves it.
    let (ok, _, gone) = kubectl.run(&["get", "widgets", "-n", "team"], None);
    assert!(!ok && gone.contains("the server could not find the requested resource"), "{gone}");
}

#[test]
fn a_version_objects_were_stored_in_cannot_be_dropped() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok_with(&["apply", "-f", "-"], Some(WIDGETS_CRD));
    let both = WIDGETS_CRD.replace("storage: true\n", "storage: false\n")
        + "  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n";
    kubectl.ok_with(&["apply", "-f", "-"], Some(&both));
    let crd = json(&kubectl.ok(&["get", "crd", "widgets.example.org", "-o", "json"]));
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1alpha1", "v1"]), "stored versions add up");
    let only_v1 = both.replace("  - name: v1alpha1\n    served: true\n    storage: false\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n", "");
    assert!(!only_v1.contains("v1alpha1"), "{only_v1}");
    let (ok, _, refused) = kubectl.run(&["apply", "-f", "-"], Some(&only_v1));
    assert!(!ok);
    assert!(
        refused.contains("status.storedVersions[0]: Invalid value: \"v1alpha1\": must appear in spec.versions"),
        "{refused}"
    );
}
