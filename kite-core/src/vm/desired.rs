//! The children of a `KiteVirtualMachine`, as pure functions: the object in,
//! the desired objects out, tested without any API server. The VM
//! reconciler applies them with server-side apply.
//!
//! KubeVirt and CDI objects are plain JSON (`serde_json::Value`); tests check
//! each against the strict upstream schemas.

use super::keys::KeyPair;
use crate::api::{KitePlatformSpec, KiteVirtualMachine, PowerState};
use crate::required::Required;
use crate::{Error, labels, names, ssh_secret};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The label on the VM's pod template that the SSH Service and the
/// NetworkPolicies select: the `KiteVirtualMachine`'s name.
pub const VM_POD_LABEL: &str = "hy3ons.github.io/kite-vm";

/// What every child needs of its `KiteVirtualMachine`.
pub(super) struct Parent<'a> {
    pub(super) name: &'a str,
    pub(super) namespace: &'a str,
    owner: OwnerReference,
}

pub(super) fn parent(vm: &KiteVirtualMachine) -> Result<Parent<'_>, Error> {
    Ok(Parent { name: vm.required_name()?, namespace: vm.required_namespace()?, owner: vm.required_owner()? })
}

pub(super) fn meta(parent: &Parent<'_>, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(parent.namespace.to_string()),
        labels: Some(labels::vm_child_labels(parent.name, parent.namespace)),
        owner_references: Some(vec![parent.owner.clone()]),
        ..ObjectMeta::default()
    }
}

fn meta_json(parent: &Parent<'_>, name: String) -> Value {
    // ObjectMeta serializes with only the fields set.
    serde_json::to_value(meta(parent, name)).unwrap_or(Value::Null)
}

/// `<vm>-disk`: a CDI DataVolume cloned from the golden image's PVC in the
/// platform's golden-image namespace, on the platform's StorageClass.
pub fn data_volume(vm: &KiteVirtualMachine, platform: &KitePlatformSpec) -> Result<Value, Error> {
    let parent = parent(vm)?;
    let name = names::data_volume(parent.name);
    Ok(json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": meta_json(&parent, name),
        "spec": {
            "source": {"pvc": {"name": vm.spec.image, "namespace": platform.golden_image_namespace}},
            "storage": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": platform.vm_storage_class_name,
                "resources": {"requests": {"storage": vm.spec.disk.0}}
            }
        }
    }))
}

/// `<vm>`: the KubeVirt VirtualMachine, `runStrategy` from `powerState`
/// (never the deprecated `running`), its root disk from the DataVolume,
/// cloud-init from its Secret, and an explicit masquerade pod interface.
pub fn virtual_machine(vm: &KiteVirtualMachine) -> Result<Value, Error> {
    let parent = parent(vm)?;
    let disk = names::data_volume(parent.name);
    let cloud_init = names::cloud_init_secret(parent.name);
    let run_strategy = match vm.spec.power_state {
        PowerState::On => "Always",
        PowerState::Off => "Halted",
    };
    let mut template_labels = labels::vm_child_labels(parent.name, parent.namespace);
    template_labels.insert(VM_POD_LABEL.to_string(), parent.name.to_string());
    Ok(json!({
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": meta_json(&parent, parent.name.to_string()),
        "spec": {
            "runStrategy": run_strategy,
            "template": {
                "metadata": {"labels": template_labels},
                "spec": {
                    "domain": {
                        "cpu": {"cores": vm.spec.cpu},
                        "resources": {"requests": {"memory": vm.spec.memory.0}},
                        "devices": {
                            "disks": [
                                {"name": "rootdisk", "disk": {"bus": "virtio"}},
                                {"name": "cloudinitdisk", "disk": {"bus": "virtio"}}
                            ],
                            "interfaces": [{"name": "default", "masquerade": {}}]
                        }
                    },
                    "networks": [{"name": "default", "pod": {}}],
                    "volumes": [
                        {"name": "rootdisk", "dataVolume": {"name": disk}},
                        {"name": "cloudinitdisk", "cloudInitNoCloud": {"secretRef": {"name": cloud_init}}}
                    ]
                }
            }
        }
    }))
}

/// `vps-access-<vm>`: a ClusterIP Service on port 22 to the VM's pod, which
/// the SSH gateway connects to. No NodePort per VM.
pub fn ssh_service(vm: &KiteVirtualMachine) -> Result<Service, Error> {
    port_service(vm, names::ssh_service, "ssh", 22)
}

/// A ClusterIP Service named by `name` that selects the machine's pod, on `port`.
pub(super) fn port_service(
    vm: &KiteVirtualMachine,
    name: fn(&str) -> String,
    port_name: &str,
    port: i32,
) -> Result<Service, Error> {
    let parent = parent(vm)?;
    let name = name(parent.name);
    Ok(Service {
        metadata: meta(&parent, name),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(BTreeMap::from([(VM_POD_LABEL.to_string(), parent.name.to_string())])),
            ports: Some(vec![ServicePort {
                name: Some(port_name.into()),
                port,
                target_port: Some(IntOrString::Int(port)),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}

/// `<vm>-ssh-key`: a `kubernetes.io/ssh-auth` Secret with the key pair the
/// gateway logs in with and the VM's host key pair, under the key names of
/// [`ssh_secret`](crate::ssh_secret), which the gateway reads.
pub fn ssh_key_secret(vm: &KiteVirtualMachine, login: &KeyPair, host: &KeyPair) -> Result<Secret, Error> {
    let parent = parent(vm)?;
    let name = names::ssh_key_secret(parent.name);
    let data = [
        (ssh_secret::PRIVATE_KEY, &login.private_openssh),
        (ssh_secret::PUBLIC_KEY, &login.public_openssh),
        (ssh_secret::HOST_PRIVATE_KEY, &host.private_openssh),
        (ssh_secret::HOST_PUBLIC_KEY, &host.public_openssh),
    ];
    Ok(Secret {
        metadata: meta(&parent, name),
        type_: Some(ssh_secret::SECRET_TYPE.into()),
        data: Some(data.into_iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Secret::default()
    })
}

/// `<vm>-cloud-init-userdata`: the rendered user data under the key
/// `userdata`, which KubeVirt's `cloudInitNoCloud.secretRef` reads.
pub fn cloud_init_secret(vm: &KiteVirtualMachine, user_data: &str) -> Result<Secret, Error> {
    let parent = parent(vm)?;
    let name = names::cloud_init_secret(parent.name);
    Ok(Secret {
        metadata: meta(&parent, name),
        type_: Some("Opaque".into()),
        data: Some([("userdata".to_string(), ByteString(user_data.as_bytes().to_vec()))].into()),
        ..Secret::default()
    })
}
