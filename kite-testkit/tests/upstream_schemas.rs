//! KubeVirt and CDI objects are checked against the real upstream schemas,
//! strictly; the vendored copies are those of the shared schema folder.

mod common;

use common::{api_error, server};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use std::path::PathBuf;

fn vm_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("kubevirt.io", "v1", "VirtualMachine"),
        "virtualmachines",
    )
}

fn dv_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("cdi.kubevirt.io", "v1beta1", "DataVolume"),
        "datavolumes",
    )
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn kubevirt_vm(extra_spec: Value) -> DynamicObject {
    let mut vm = json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "web"},
        "spec": {
            "runStrategy": "Always",
            "template": {"spec": {
                "domain": {"devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}],
                                       "interfaces": [{"name": "default", "masquerade": {}}]},
                           "resources": {"requests": {"memory": "4Gi"}}, "cpu": {"cores": 2}},
                "networks": [{"name": "default", "pod": {}}],
                "volumes": [{"name": "root", "dataVolume": {"name": "web-disk"}}]
            }}
        }
    });
    vm["spec"].as_object_mut().unwrap().extend(extra_spec.as_object().unwrap().clone());
    object(vm)
}

#[tokio::test]
async fn a_valid_kubevirt_vm_and_datavolume_are_accepted() {
    let server = server();
    kite_testkit::sim::install(&server).unwrap();
    let vms: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &vm_resource());
    vms.create(&PostParams::default(), &kubevirt_vm(json!({}))).await.unwrap();
    let dvs: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &dv_resource());
    let dv = object(json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": {"name": "web-disk"},
        "spec": {"source": {"pvc": {"name": "ubuntu-22.04", "namespace": "kite"}},
                 "storage": {"resources": {"requests": {"storage": "25Gi"}}, "storageClassName": "kite-vm-storage"}}
    }));
    dvs.create(&PostParams::default(), &dv).await.unwrap();
}

#[tokio::test]
async fn an_unknown_field_in_a_kubevirt_vm_is_refused_with_its_path() {
    let server = server();
    kite_testkit::sim::install(&server).unwrap();
    let vms: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &vm_resource());
    let error = api_error(vms.create(&PostParams::default(), &kubevirt_vm(json!({"runing": true}))).await.unwrap_err());
    assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
    assert!(error.message.contains("runing"), "{}", error.message);
}

#[tokio::test]
async fn a_datavolume_with_a_wrong_type_is_refused() {
    let server = server();
    kite_testkit::sim::install(&server).unwrap();
    let dvs: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &dv_resource());
    let dv = object(json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": {"name": "bad"},
        "spec": {"source": {"http": {"url": 42}}, "storage": {}}
    }));
    let error = api_error(dvs.create(&PostParams::default(), &dv).await.unwrap_err());
    assert_eq!(error.code, 422);
    assert!(error.message.contains("spec.source.http.url"), "{}", error.message);
}

#[test]
fn the_vendored_schemas_match_the_shared_ones() {
    let vendored = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/schemas");
    assert!(
        shared.is_dir(),
        "the shared schema folder {} is missing: it holds the upstream KubeVirt and CDI schemas this test compares the vendored copies with",
        shared.display()
    );
    let mut compared = 0;
    for entry in std::fs::read_dir(&vendored).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path.file_name().unwrap();
            let original = std::fs::read(shared.join(name))
                .unwrap_or_else(|e| panic!("{name:?} is not in the shared folder: {e}"));
            assert!(std::fs::read(&path).unwrap() == original, "{name:?} differs from the shared copy");
            compared += 1;
        }
    }
    assert_eq!(compared, 5);
}
