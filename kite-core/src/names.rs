//! The names of the objects the controller creates for a `KiteVirtualMachine`.
//!
//! The controller, the SSH gateway and the API all derive names here, so
//! they agree. Each function returns `None` for an object without a name.

use crate::api::KiteVirtualMachine;

fn derived(vm: &KiteVirtualMachine, make: impl FnOnce(&str) -> String) -> Option<String> {
    vm.metadata.name.as_deref().map(make)
}

/// `<vm>-ssh-key`: the `kubernetes.io/ssh-auth` Secret with the gateway's key and the VM host key.
pub fn ssh_key_secret(vm: &KiteVirtualMachine) -> Option<String> {
    derived(vm, |n| format!("{n}-ssh-key"))
}

/// `<vm>-cloud-init-userdata`: the Secret with the VM's cloud-init user data.
pub fn cloud_init_secret(vm: &KiteVirtualMachine) -> Option<String> {
    derived(vm, |n| format!("{n}-cloud-init-userdata"))
}

/// `<vm>-disk`: the DataVolume cloned from the golden image.
pub fn data_volume(vm: &KiteVirtualMachine) -> Option<String> {
    derived(vm, |n| format!("{n}-disk"))
}

/// `vps-access-<vm>`: the ClusterIP Service on port 22 the gateway connects to.
pub fn ssh_service(vm: &KiteVirtualMachine) -> Option<String> {
    derived(vm, |n| format!("vps-access-{n}"))
}
