//! `<vm>-gateway-access`: a Role and a RoleBinding in the machine's
//! namespace that let the SSH gateway's ServiceAccount `get` the machine's
//! `<vm>-ssh-key` Secret, and nothing else. So the gateway needs no right
//! to read Secrets across the cluster, and loses this one with the machine
//! (both are owned by it).

use super::desired::{meta, parent};
use crate::api::KiteVirtualMachine;
use crate::{Error, names};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};

/// The ServiceAccount the SSH gateway runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayAccount {
    /// Its namespace (the platform namespace).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// The Role: `get` on the Secret `<vm>-ssh-key` alone.
pub fn role(vm: &KiteVirtualMachine) -> Result<Role, Error> {
    let parent = parent(vm)?;
    Ok(Role {
        metadata: meta(&parent, names::gateway_access(parent.name)),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".into()]),
            resource_names: Some(vec![names::ssh_key_secret(parent.name)]),
            verbs: vec!["get".into()],
            ..PolicyRule::default()
        }]),
    })
}

/// The RoleBinding of [`role`] to the gateway's ServiceAccount.
pub fn binding(vm: &KiteVirtualMachine, gateway: &GatewayAccount) -> Result<RoleBinding, Error> {
    let parent = parent(vm)?;
    let name = names::gateway_access(parent.name);
    Ok(RoleBinding {
        metadata: meta(&parent, name.clone()),
        role_ref: RoleRef { api_group: Some("rbac.authorization.k8s.io".into()), kind: "Role".into(), name },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: gateway.name.clone(),
            namespace: Some(gateway.namespace.clone()),
            ..Subject::default()
        }]),
    })
}
