//! CRDs created at run time: served at once (discovery included), objects
//! checked against their schema and CEL rules, defaults applied, unknown
//! fields pruned; the status subresource and metadata.generation.

mod common;

use common::{api_error, server};
use kite_core::api::KiteVirtualMachine;
use kube::CustomResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use serde_json::json;

fn vm(name: &str) -> KiteVirtualMachine {
    kite_testkit::fixtures::a_vm(name).sized(2, "4Gi").with_ssh_id("alice").in_namespace("default").build()
}

async fn with_kite_crds() -> kite_testkit::FakeApiServer {
    let server = server();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    server
}

#[tokio::test]
async fn a_created_crd_is_served_and_discovered() {
    let server = server();
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(server.client());
    crds.create(&PostParams::default(), &KiteVirtualMachine::crd()).await.unwrap();
    let established = crds.get("kitevirtualmachines.hy3ons.github.io").await.unwrap();
    let conditions = established.status.unwrap().conditions.unwrap();
    assert!(conditions.iter().any(|c| c.type_ == "Established" && c.status == "True"));
    let discovery = Discovery::new(server.client()).run().await.unwrap();
    assert!(discovery.groups().any(|g| g.name() == "hy3ons.github.io"));
    let vms: Api<KiteVirtualMachine> = Api::namespaced(server.client(), "default");
    vms.create(&PostParams::default(), &vm("web")).await.unwrap();
    // Deleting the CRD stops serving the kind and removes its objects.
    crds.delete("kitevirtualmachines.hy3ons.github.io", &Default::default()).await.unwrap();
    assert_eq!(api_error(vms.get("web").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn objects_are_checked_against_the_crd_schema_with_field_paths() {
    let server = with_kite_crds().await;
    let vms: Api<KiteVirtualMachine> = Api::namespaced(server.client(), "default");
    let mut bad = vm("bad");
    bad.spec.cpu = 0;
    bad.spec.ssh_id = "Not-Valid".into();
    let error = api_error(vms.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
    assert!(error.message.contains("spec.cpu") && error.message.contains("spec.sshId"), "{}", error.message);
}

#[tokio::test]
async fn cel_transition_rules_are_enforced() {
    let server = with_kite_crds().await;
    let vms: Api<KiteVirtualMachine> = Api::namespaced(server.client(), "default");
    vms.create(&PostParams::default(), &vm("web")).await.unwrap();
    let error = api_error(
        vms.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"sshId": "mallory"}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, 422);
    assert!(error.message.contains("sshId cannot be changed"), "{}", error.message);
    let error = api_error(
        vms.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"disk": "10Gi"}}))).await.unwrap_err(),
    );
    assert!(error.message.contains("disk can grow but cannot shrink"), "{}", error.message);
    vms.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"disk": "30Gi"}}))).await.unwrap();
}

#[tokio::test]
async fn defaults_are_applied_and_unknown_fields_pruned_or_refused() {
    let server = with_kite_crds().await;
    let vms: Api<kube::api::DynamicObject> =
        Api::namespaced_with(server.client(), "default", &kube::api::ApiResource::erase::<KiteVirtualMachine>(&()));
    let object: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "hy3ons.github.io/v1", "kind": "KiteVirtualMachine", "metadata": {"name": "web"},
        "spec": {"cpu": 1, "memory": "1Gi", "disk": "20Gi", "image": "ubuntu-22.04", "sshId": "bob", "typo": true}
    }))
    .unwrap();
    let created = vms.create(&PostParams::default(), &object).await.unwrap();
    assert_eq!(created.data["spec"]["powerState"], "Off", "the schema default is applied");
    assert_eq!(created.data["spec"]["delete"], false);
    assert!(created.data["spec"].get("typo").is_none(), "an unknown field is pruned");
    let strict = PatchParams { field_validation: Some(kube::api::ValidationDirective::Strict), ..Default::default() };
    let error = api_error(vms.patch("web", &strict, &Patch::Merge(json!({"spec": {"typo": true}}))).await.unwrap_err());
    assert_eq!(error.code, 400);
    assert!(error.message.contains("unknown field \"spec.typo\""), "{}", error.message);
}

#[tokio::test]
async fn the_status_subresource_separates_status_from_spec_and_generation_counts_spec_changes() {
    let server = with_kite_crds().await;
    let vms: Api<KiteVirtualMachine> = Api::namespaced(server.client(), "default");
    let mut with_status = vm("web");
    with_status.status =
        Some(kite_core::api::KiteVirtualMachineStatus { domain: Some("ignored.example".into()), ..Default::default() });
    let created = vms.create(&PostParams::default(), &with_status).await.unwrap();
    assert_eq!(created.status, None, "status is dropped on create");
    assert_eq!(created.metadata.generation, Some(1));

    let status_patch = json!({"status": {"domain": "web.example.com"}, "spec": {"cpu": 8}});
    let patched = vms.patch_status("web", &PatchParams::default(), &Patch::Merge(status_patch)).await.unwrap();
    assert_eq!(patched.status.unwrap().domain.as_deref(), Some("web.example.com"));
    assert_eq!(patched.spec.cpu, 2, "a status write does not change spec");
    assert_eq!(patched.metadata.generation, Some(1), "status changes do not count");

    let main_patch = json!({"status": {"domain": "other"}, "spec": {"cpu": 4}});
    let patched = vms.patch("web", &PatchParams::default(), &Patch::Merge(main_patch)).await.unwrap();
    assert_eq!(patched.status.unwrap().domain.as_deref(), Some("web.example.com"), "the main resource ignores status");
    assert_eq!(patched.metadata.generation, Some(2));
}

#[tokio::test]
async fn a_root_schema_that_preserves_unknown_fields_keeps_them() {
    // Longhorn's nodes are served with such a schema by the simulated cluster.
    let server = kite_testkit::FakeApiServer::new().unwrap();
    kite_testkit::sim::install(&server).unwrap();
    let node = json!({"apiVersion": "longhorn.io/v1beta2", "kind": "Node",
        "metadata": {"name": "node-1", "namespace": "default"},
        "spec": {"allowScheduling": true, "disks": {"d1": {"tags": ["kite"]}}}});
    let created = server.create("longhorn.io", "v1beta2", "nodes", Some("default"), node).unwrap();
    assert_eq!(created["spec"]["disks"]["d1"]["tags"], json!(["kite"]));
}
