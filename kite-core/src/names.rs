//! The names of the objects the controller creates for a `KiteVirtualMachine`,
//! from the machine's name.
//!
//! The controller, the SSH gateway and the API all derive names here, so
//! they agree. A machine read from the API server always has a name; get it
//! with [`Required::required_name`](crate::required::Required::required_name).

/// `<vm>-ssh-key`: the `kubernetes.io/ssh-auth` Secret with the gateway's key and the VM host key.
pub fn ssh_key_secret(vm: &str) -> String {
    format!("{vm}-ssh-key")
}

/// `<vm>-cloud-init-userdata`: the Secret with the VM's cloud-init user data.
pub fn cloud_init_secret(vm: &str) -> String {
    format!("{vm}-cloud-init-userdata")
}

/// `<vm>-gateway-access`: the Role and RoleBinding that let the gateway read `<vm>-ssh-key`, and nothing else.
pub fn gateway_access(vm: &str) -> String {
    format!("{vm}-gateway-access")
}

/// `<vm>-disk`: the DataVolume cloned from the golden image.
pub fn data_volume(vm: &str) -> String {
    format!("{vm}-disk")
}

/// `vps-access-<vm>`: the ClusterIP Service on port 22 the gateway connects to.
pub fn ssh_service(vm: &str) -> String {
    format!("vps-access-{vm}")
}

/// `vps-web-<vm>`: the ClusterIP Service on port 80 the machine's Ingress routes to.
pub fn web_service(vm: &str) -> String {
    format!("vps-web-{vm}")
}

/// `<vm>`: the Ingress for the machine's domain.
pub fn ingress(vm: &str) -> String {
    vm.to_string()
}

/// `<vm>-tls`: the machine's certificate (a copy of the platform's, or cert-manager's).
pub fn tls_secret(vm: &str) -> String {
    format!("{vm}-tls")
}
