//! The API resources of the kinds Kite drives that have no Rust type here:
//! KubeVirt's and CDI's (objects of these kinds are plain JSON), and
//! Longhorn's nodes.

use kube::core::ApiResource;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// `kubevirt.io/v1` `VirtualMachine`.
pub fn kubevirt_virtual_machine() -> ApiResource {
    resource("kubevirt.io", "v1", "VirtualMachine", "virtualmachines")
}

/// `cdi.kubevirt.io/v1beta1` `DataVolume`.
pub fn data_volume() -> ApiResource {
    resource("cdi.kubevirt.io", "v1beta1", "DataVolume", "datavolumes")
}

/// `longhorn.io/v1beta2` `Node`: Longhorn's view of a node and its disks.
pub fn longhorn_node() -> ApiResource {
    resource("longhorn.io", "v1beta2", "Node", "nodes")
}

/// `kubevirt.io/v1` `VirtualMachineInstance`: a running machine.
pub fn kubevirt_virtual_machine_instance() -> ApiResource {
    resource("kubevirt.io", "v1", "VirtualMachineInstance", "virtualmachineinstances")
}
