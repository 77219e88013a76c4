//! KubeVirt's part: VirtualMachines get a VirtualMachineInstance when they
//! should run, and report `printableStatus` as KubeVirt does.

use super::config::SimulationConfig;
use super::object_fields::{condition, name_of, namespace_of, owner_reference};
use super::rules::{Rules, STUCK_ANNOTATION};
use super::store_io::{delete, find, objects_where, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

const VM: (&str, &str, &str) = ("kubevirt.io", "v1", "virtualmachines");
const VMI: (&str, &str, &str) = ("kubevirt.io", "v1", "virtualmachineinstances");

pub(super) fn step(inner: &Arc<Inner>, config: &SimulationConfig, rules: &Rules) {
    let unsettled =
        |store: &crate::store::Store, vm: &Value| vm["metadata"]["deletionTimestamp"].is_null() && !settled(store, vm);
    for vm in objects_where(inner, VM.0, VM.2, unsettled) {
        reconcile(inner, config, rules, &vm);
    }
}

/// Whether [`reconcile`] would leave `vm` as it is: it reports, for the
/// generation it has, that it runs with its instance Running, or that it
/// is stopped without one.
fn settled(store: &crate::store::Store, vm: &Value) -> bool {
    let status = &vm["status"];
    if status["observedGeneration"] != vm["metadata"]["generation"]
        || status["runStrategy"] != vm["spec"]["runStrategy"]
    {
        return false;
    }
    let key = crate::registry::ResourceKey { group: VMI.0.into(), plural: VMI.2.into() };
    let vmi = store.get(&key, &(namespace_of(vm).to_string(), name_of(vm).to_string()));
    match (wants_running(vm), vmi) {
        (true, Some(vmi)) => {
            status["printableStatus"] == "Running"
                && vmi["status"]["phase"] == "Running"
                && vmi["metadata"]["deletionTimestamp"].is_null()
        }
        (false, None) => status["printableStatus"] == "Stopped",
        _ => false,
    }
}

fn wants_running(vm: &Value) -> bool {
    match vm["spec"]["runStrategy"].as_str() {
        Some("Always" | "RerunOnFailure" | "Once") => true,
        Some(_) => false,
        None => vm["spec"]["running"] == json!(true),
    }
}

/// The DataVolumes the VM's volumes use, and whether any failed.
fn volumes_state(inner: &Arc<Inner>, vm: &Value) -> (bool, bool) {
    let namespace = namespace_of(vm);
    let mut ready = true;
    let mut failed = false;
    for volume in vm["spec"]["template"]["spec"]["volumes"].as_array().into_iter().flatten() {
        if let Some(dv_name) = volume["dataVolume"]["name"].as_str() {
            match find(inner, "cdi.kubevirt.io", "datavolumes", namespace, dv_name) {
                Some(dv) if dv["status"]["phase"] == "Succeeded" => {}
                Some(dv) if dv["status"]["phase"] == "Failed" => failed = true,
                _ => ready = false,
            }
        }
    }
    (ready && !failed, failed)
}

fn reconcile(inner: &Arc<Inner>, config: &SimulationConfig, rules: &Rules, vm: &Value) {
    let (namespace, name) = (namespace_of(vm).to_string(), name_of(vm).to_string());
    let vmi = find(inner, VMI.0, VMI.2, &namespace, &name);
    let previous = &vm["status"]["conditions"];
    let stuck = vm["metadata"]["annotations"][STUCK_ANNOTATION] == "true"
        || rules.stuck_machines.iter().any(|(ns, n)| *ns == namespace && *n == name);
    let ready_condition = |ready: bool, reason: &str, message: &str| {
        json!([condition(previous, "Ready", ready, reason, message, &[("lastProbeTime", Value::Null)])])
    };
    let status = if wants_running(vm) {
        let (volumes_ready, volumes_failed) = volumes_state(inner, vm);
        match &vmi {
            _ if volumes_failed => {
                json!({"printableStatus": "DataVolumeError", "ready": false, "created": vmi.is_some(),
                                          "conditions": ready_condition(false, "DataVolumeError", "a DataVolume of the VM failed")})
            }
            None if !volumes_ready => json!({"printableStatus": "Provisioning", "ready": false, "created": false,
                                             "conditions": ready_condition(false, "Provisioning", "waiting for the DataVolumes")}),
            None => {
                create_vmi(inner, vm);
                json!({"printableStatus": "Starting", "ready": false, "created": true,
                       "conditions": ready_condition(false, "GuestNotRunning", "Guest VM is not reported as running")})
            }
            Some(vmi) => {
                let phase = vmi["status"]["phase"].as_str().unwrap_or("Pending");
                let next = match phase {
                    "Pending" => Some("Scheduling"),
                    "Scheduling" => Some("Scheduled"),
                    "Scheduled" if !stuck => Some("Running"),
                    _ => None,
                };
                if let Some(next) = next {
                    advance_vmi(inner, config, vmi, next);
                }
                if phase == "Running" {
                    json!({"printableStatus": "Running", "ready": true, "created": true, "conditions": ready_condition(true, "", "")})
                } else {
                    json!({"printableStatus": "Starting", "ready": false, "created": true,
                           "conditions": ready_condition(false, "GuestNotRunning", "Guest VM is not reported as running")})
                }
            }
        }
    } else {
        match &vmi {
            Some(vmi) => {
                if vmi["metadata"]["deletionTimestamp"].is_null() {
                    delete(inner, VMI.0, VMI.2, &namespace, &name);
                }
                json!({"printableStatus": "Stopping", "ready": false, "created": true,
                       "conditions": ready_condition(false, "GuestNotRunning", "Guest VM is stopping")})
            }
            None => json!({"printableStatus": "Stopped", "ready": false, "created": false,
                           "conditions": ready_condition(false, "VMINotExists", "VMI does not exist")}),
        }
    };
    let mut status = status;
    status["observedGeneration"] = vm["metadata"]["generation"].clone();
    if let Some(strategy) = vm["spec"]["runStrategy"].as_str() {
        status["runStrategy"] = json!(strategy);
    }
    if vm["status"] != status {
        write(inner, "virt-controller", VM, &namespace, Some(&name), json!({"status": status}), true);
    }
}

fn create_vmi(inner: &Arc<Inner>, vm: &Value) {
    let template = &vm["spec"]["template"];
    let mut labels = template["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels["kubevirt.io/vm"] = vm["metadata"]["name"].clone();
    let vmi = json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": vm["metadata"]["name"], "namespace": vm["metadata"]["namespace"], "labels": labels,
                     "ownerReferences": [owner_reference(vm, "kubevirt.io/v1", "VirtualMachine")]},
        "spec": template["spec"],
        "status": {"phase": "Pending"},
    });
    write(inner, "virt-controller", VMI, namespace_of(vm), None, vmi, false);
}

fn advance_vmi(inner: &Arc<Inner>, config: &SimulationConfig, vmi: &Value, phase: &str) {
    let mut status = json!({"phase": phase});
    if matches!(phase, "Scheduled" | "Running") {
        status["nodeName"] = json!(config.node_name);
    }
    if phase == "Running" {
        status["interfaces"] = json!([{"name": "default", "ipAddress": "10.42.0.10", "ipAddresses": ["10.42.0.10"]}]);
        status["conditions"] = json!([{"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": crate::meta::now()}]);
    }
    write(inner, "virt-handler", VMI, namespace_of(vmi), Some(name_of(vmi)), json!({"status": status}), false);
}
