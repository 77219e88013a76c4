//! The simulated runtime moves DataVolumes and VirtualMachines through the
//! upstream CDI and KubeVirt phases, and fails on demand.

mod common;

use common::{api_error, eventually, server};
use futures::StreamExt;
use kite_testkit::sim::{self, FAIL_ANNOTATION, STUCK_ANNOTATION, SimulationConfig};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn dvs(client: kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client, "default", &resource("cdi.kubevirt.io", "v1beta1", "DataVolume", "datavolumes"))
}

fn vms(client: kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client, "default", &resource("kubevirt.io", "v1", "VirtualMachine", "virtualmachines"))
}

fn vmis(client: kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client,
        "default",
        &resource("kubevirt.io", "v1", "VirtualMachineInstance", "virtualmachineinstances"),
    )
}

fn dynamic(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn import(name: &str) -> DynamicObject {
    dynamic(json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": {"name": name},
        "spec": {"source": {"http": {"url": "https://cloud-images.ubuntu.com/jammy/current/jammy-server-cloudimg-amd64.img"}},
                 "storage": {"resources": {"requests": {"storage": "4Gi"}}}}
    }))
}

fn clone_of(name: &str, source: &str) -> DynamicObject {
    dynamic(json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": {"name": name},
        "spec": {"source": {"pvc": {"name": source, "namespace": "default"}},
                 "storage": {"resources": {"requests": {"storage": "25Gi"}}}}
    }))
}

fn machine(name: &str, strategy: &str, disk: &str) -> DynamicObject {
    dynamic(json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": name},
        "spec": {"runStrategy": strategy, "template": {
            "metadata": {"labels": {"hy3ons.github.io/kite-vm": name}},
            "spec": {
                "domain": {"devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}],
                                       "interfaces": [{"name": "default", "masquerade": {}}]},
                           "resources": {"requests": {"memory": "1Gi"}}},
                "networks": [{"name": "default", "pod": {}}],
                "volumes": [{"name": "root", "dataVolume": {"name": disk}}]
            }}}
    }))
}

/// Records every value of `field` (a JSON pointer) a watch sees on `name`.
fn record(
    api: Api<DynamicObject>,
    name: &'static str,
    field: &'static str,
) -> (Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    let task = tokio::spawn(async move {
        let mut stream = watcher(api, watcher::Config::default()).applied_objects().boxed();
        while let Some(Ok(object)) = stream.next().await {
            if object.metadata.name.as_deref() == Some(name) {
                let value = serde_json::to_value(&object).unwrap();
                if let Some(v) = value.pointer(field).and_then(Value::as_str) {
                    let mut seen = sink.lock().unwrap();
                    if seen.last().map(String::as_str) != Some(v) {
                        seen.push(v.to_string());
                    }
                }
            }
        }
    });
    (seen, task)
}

fn in_order(seen: &[String], expected: &[&str]) -> bool {
    let mut it = seen.iter();
    expected.iter().all(|e| it.any(|s| s == e))
}

#[tokio::test]
async fn an_import_goes_through_the_cdi_phases_with_progress_and_gets_a_bound_pvc() {
    let server = server();
    let _sim = sim::start(&server, SimulationConfig::default()).unwrap();
    let (phases, task) = record(dvs(server.client()), "golden", "/status/phase");
    let (progress, progress_task) = record(dvs(server.client()), "golden", "/status/progress");
    dvs(server.client()).create(&PostParams::default(), &import("golden")).await.unwrap();
    eventually("the import to succeed", || async {
        phases.lock().unwrap().last().map(String::as_str) == Some("Succeeded")
    })
    .await;
    let seen = phases.lock().unwrap().clone();
    assert!(in_order(&seen, &["Pending", "ImportScheduled", "ImportInProgress", "Succeeded"]), "{seen:?}");
    let progress = progress.lock().unwrap().clone();
    assert!(progress.len() >= 3 && progress.last().map(String::as_str) == Some("100.0%"), "{progress:?}");
    let pvcs: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> = Api::namespaced(server.client(), "default");
    let pvc = pvcs.get("golden").await.unwrap();
    assert_eq!(pvc.status.unwrap().phase.as_deref(), Some("Bound"));
    assert_eq!(pvc.metadata.owner_references.unwrap()[0].kind, "DataVolume");
    task.abort();
    progress_task.abort();
}

#[tokio::test]
async fn a_clone_waits_for_its_source_then_goes_through_the_clone_phases() {
    let server = server();
    let _sim = sim::start(&server, SimulationConfig::default()).unwrap();
    let api = dvs(server.client());
    let (phases, task) = record(api.clone(), "disk", "/status/phase");
    api.create(&PostParams::default(), &clone_of("disk", "golden")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let waiting = api.get("disk").await.unwrap();
    assert_eq!(waiting.data["status"]["phase"], "Pending", "no source yet");
    let reason = &waiting.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Running")
        .unwrap()["reason"];
    assert_eq!(reason, "CloneWithoutSource");
    api.create(&PostParams::default(), &import("golden")).await.unwrap();
    eventually("the clone to succeed", || async {
        phases.lock().unwrap().last().map(String::as_str) == Some("Succeeded")
    })
    .await;
    let seen = phases.lock().unwrap().clone();
    assert!(in_order(&seen, &["Pending", "CloneScheduled", "CloneInProgress", "Succeeded"]), "{seen:?}");
    task.abort();
}

#[tokio::test]
async fn a_vm_provisions_starts_runs_and_stops_as_kubevirt_reports_it() {
    let server = server();
    let _sim = sim::start(&server, SimulationConfig::default()).unwrap();
    let (printable, task) = record(vms(server.client()), "web", "/status/printableStatus");
    dvs(server.client()).create(&PostParams::default(), &import("web-disk")).await.unwrap();
    vms(server.client()).create(&PostParams::default(), &machine("web", "Always", "web-disk")).await.unwrap();
    eventually("the VM to run", || async { printable.lock().unwrap().last().map(String::as_str) == Some("Running") })
        .await;
    let seen = printable.lock().unwrap().clone();
    assert!(in_order(&seen, &["Provisioning", "Starting", "Running"]), "{seen:?}");
    let vmi = vmis(server.client()).get("web").await.unwrap();
    assert_eq!(vmi.data["status"]["phase"], "Running");
    assert_eq!(vmi.data["status"]["nodeName"], "kite-node-1");
    assert_eq!(
        vmi.metadata.labels.unwrap()["hy3ons.github.io/kite-vm"],
        "web",
        "the VMI carries the template's labels"
    );

    vms(server.client())
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"runStrategy": "Halted"}})))
        .await
        .unwrap();
    eventually("the VM to stop", || async { printable.lock().unwrap().last().map(String::as_str) == Some("Stopped") })
        .await;
    assert_eq!(api_error(vmis(server.client()).get("web").await.unwrap_err()).code, 404);
    task.abort();
}

#[tokio::test]
async fn a_deleted_vm_takes_its_vmi_with_it() {
    let server = server();
    let _sim = sim::start(&server, SimulationConfig::default()).unwrap();
    dvs(server.client()).create(&PostParams::default(), &import("web-disk")).await.unwrap();
    vms(server.client()).create(&PostParams::default(), &machine("web", "Always", "web-disk")).await.unwrap();
    eventually("the VMI to exist", || async { vmis(server.client()).get("web").await.is_ok() }).await;
    vms(server.client()).delete("web", &Default::default()).await.unwrap();
    eventually("the VMI to be collected", || async { vmis(server.client()).get("web").await.is_err() }).await;
}

#[tokio::test]
async fn failures_happen_on_demand() {
    let server = server();
    let sim = sim::start(&server, SimulationConfig::default()).unwrap();
    let mut failing = import("broken");
    failing.metadata.annotations =
        Some([(FAIL_ANNOTATION.to_string(), "unable to download the image".to_string())].into());
    dvs(server.client()).create(&PostParams::default(), &failing).await.unwrap();
    sim.fail_data_volume("default", "also-broken", "disk full");
    dvs(server.client()).create(&PostParams::default(), &import("also-broken")).await.unwrap();
    for (name, message) in [("broken", "unable to download the image"), ("also-broken", "disk full")] {
        eventually("the DataVolume to fail", || async {
            let dv = dvs(server.client()).get(name).await.unwrap();
            dv.data["status"]["phase"] == "Failed"
                && dv.data["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["message"] == message))
        })
        .await;
    }

    dvs(server.client()).create(&PostParams::default(), &import("slow-disk")).await.unwrap();
    let mut stuck = machine("slow", "Always", "slow-disk");
    stuck.metadata.annotations = Some([(STUCK_ANNOTATION.to_string(), "true".to_string())].into());
    vms(server.client()).create(&PostParams::default(), &stuck).await.unwrap();
    eventually("the VM to be starting", || async {
        vms(server.client()).get("slow").await.unwrap().data["status"]["printableStatus"] == "Starting"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        vms(server.client()).get("slow").await.unwrap().data["status"]["printableStatus"],
        "Starting",
        "it stays starting"
    );
}
