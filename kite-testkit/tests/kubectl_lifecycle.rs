//! Deletion as the real API server reports it, seen with the real kubectl: a
//! namespace held by a finalizer says what remains and what holds it, and a
//! CustomResourceDefinition deletes its objects (waiting on their
//! finalizers) before it goes, and one whose names another CRD of its group
//! holds is not accepted, and not served, until that one goes; an
//! aggregated API whose Service is gone fails discovery and stalls every
//! namespace deletion.

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

#[test]
fn a_crd_whose_kind_is_taken_in_its_group_is_not_accepted_until_the_other_goes() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok_with(&["apply", "-f", "-"], Some(WIDGETS_CRD));
    kubectl.ok(&["wait", "--for=condition=Established", "crd/widgets.example.org", "--timeout=10s"]);
    let gadgets = WIDGETS_CRD.replace("widgets.example.org", "gadgets.example.org").replace(
        "{plural: widgets, singular: widget, kind: Widget}",
        "{plural: gadgets, singular: gadget, kind: Widget, shortNames: [widget]}",
    );
    kubectl.ok_with(&["apply", "-f", "-"], Some(&gadgets));
    let crd = until(&kubectl, &["get", "crd", "gadgets.example.org", "-o", "json"], "the names refused", |crd| {
        condition(crd, "NamesAccepted")["status"] == "False"
    });
    let names = condition(&crd, "NamesAccepted");
    assert_eq!(
        (names["reason"].as_str(), names["message"].as_str()),
        (Some("ListKindConflict"), Some("\"WidgetList\" is already in use")),
        "the last conflict found is reported (the short name and the kind conflict too): {crd}"
    );
    let established = condition(&crd, "Established");
    assert_eq!(
        (established["status"].as_str(), established["reason"].as_str(), established["message"].as_str()),
        (Some("False"), Some("NotAccepted"), Some("not all names are accepted"))
    );
    assert_eq!(crd["status"]["acceptedNames"]["plural"], "gadgets", "free names are accepted: {crd}");
    assert!(crd["status"]["acceptedNames"]["kind"].is_null(), "{crd}");
    let (ok, _, refused) = kubectl.run(&["get", "gadgets", "-n", "default"], None);
    assert!(!ok && refused.contains("the server doesn't have a resource type \"gadgets\""), "not served: {refused}");

    kubectl.ok(&["delete", "crd", "widgets.example.org"]);
    kubectl.ok(&["wait", "--for=condition=Established", "crd/gadgets.example.org", "--timeout=10s"]);
    let crd = json(&kubectl.ok(&["get", "crd", "gadgets.example.org", "-o", "json"]));
    assert_eq!(condition(&crd, "NamesAccepted")["reason"], "NoConflicts");
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], serde_json::json!(["widget"]));
    kubectl.ok(&["get", "gadgets", "-n", "default"]);
}

const DISCOVERY_FAILED: &str = "unable to retrieve the complete list of server APIs: subresources.kubevirt.io/v1: the server is currently unable to handle the request";

#[test]
fn an_aggregated_api_without_its_service_fails_discovery_and_stalls_namespace_deletion() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "configmap", "settings", "-n", "team"]);
    kubectl.ok_with(&["apply", "-f", "-"], Some(kite_testkit::fixtures::KUBEVIRT_SUBRESOURCES_APISERVICE));
    let api = until(&kubectl, &["get", "apiservice", "v1.subresources.kubevirt.io", "-o", "json"], "Available", |a| {
        condition(a, "Available")["status"] == "False"
    });
    let available = condition(&api, "Available");
    assert_eq!(
        (available["reason"].as_str(), available["message"].as_str()),
        (Some("ServiceNotFound"), Some("service/virt-api in \"kubevirt\" is not present"))
    );
    kubectl.ok(&["create", "namespace", "kubevirt"]);
    kubectl.ok(&["create", "service", "clusterip", "virt-api", "-n", "kubevirt", "--tcp=443:8443"]);
    let api = until(&kubectl, &["get", "apiservice", "v1.subresources.kubevirt.io", "-o", "json"], "a reason", |a| {
        condition(a, "Available")["reason"] == "MissingEndpoints"
    });
    assert_eq!(
        condition(&api, "Available")["message"],
        "endpoints for service/virt-api in \"kubevirt\" have no addresses with port name \"\""
    );

    // Every client's discovery meets the 503; kubectl still answers for the other groups.
    let (ok, _, error) = kubectl.run(&["api-resources"], None);
    assert!(!ok && error.trim_end().ends_with(&format!("error: {DISCOVERY_FAILED}")), "{error}");
    let (ok, listed, error) = kubectl.run(&["get", "configmaps", "-n", "team", "-o", "name"], None);
    assert!(ok && listed.contains("configmap/settings"), "{error}");

    // The namespace controller cannot call a namespace empty without discovering every type.
    kubectl.ok(&["delete", "namespace", "team", "--wait=false"]);
    let namespace = until(&kubectl, &["get", "namespace", "team", "-o", "json"], "the discovery failure", |ns| {
        condition(ns, "NamespaceDeletionDiscoveryFailure")["status"] == "True"
            && condition(ns, "NamespaceContentRemaining")["status"] == "False"
    });
    let failure = condition(&namespace, "NamespaceDeletionDiscoveryFailure");
    assert_eq!(failure["reason"], "DiscoveryFailed");
    assert_eq!(failure["message"], format!("Discovery failed for some groups, 1 failing: {DISCOVERY_FAILED}").as_str());
    std::thread::sleep(std::time::Duration::from_millis(500));
    let namespace = json(&kubectl.ok(&["get", "namespace", "team", "-o", "json"]));
    assert_eq!(namespace["status"]["phase"], "Terminating", "emptied, and still stalled: {namespace}");

    // The usual way out: delete the APIService that outlived its Service.
    kubectl.ok(&["delete", "apiservice", "v1.subresources.kubevirt.io"]);
    kubectl.ok(&["wait", "--for=delete", "namespace/team", "--timeout=10s"]);
}
