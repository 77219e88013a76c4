//! The doctor's checks of Kite's own objects against what they should have
//! made: each `KiteUser` its namespace, each `KiteVirtualMachine` its
//! KubeVirt `VirtualMachine`, and the platform's StorageClass as declared
//! (the `StorageClassDrifted` condition the controller reports).

use crate::operate::plan::Check;
use anyhow::Context;
use k8s_openapi::api::core::v1::Namespace;
use kite_core::api::{
    ConditionStatus, KitePlatform, KiteUser, KiteVirtualMachine, VirtualMachinePhase, condition_types,
};
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};

/// Kite's objects whose children are missing; one check for all of them.
pub async fn children(client: &Client) -> anyhow::Result<Check> {
    let name = "Kite's objects";
    let users = match Api::<KiteUser>::all(client.clone()).list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            return Ok(Check::ok(name, "Kite's CRDs are not served"));
        }
        Err(error) => return Err(error).context("listing KiteUsers"),
    };
    let machines = Api::<KiteVirtualMachine>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing machines")?;
    let namespaces = Api::<Namespace>::all(client.clone());
    let mut missing = Vec::new();
    // Only what the controller has acted on (it wrote a status) and is not being deleted.
    for user in users.iter().filter(|u| u.metadata.deletion_timestamp.is_none() && u.status.is_some()) {
        let namespace = &user.spec.namespace;
        if namespaces.get_opt(namespace).await.with_context(|| format!("reading namespace {namespace}"))?.is_none() {
            missing.push(format!("KiteUser {} has no namespace {namespace}", user.name_any()));
        }
    }
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("kubevirt.io", "v1", "VirtualMachine"));
    // A machine past provisioning has its VirtualMachine, whether it runs or not.
    let made = |m: &&KiteVirtualMachine| {
        use VirtualMachinePhase::{Running, Starting, Stopped, Stopping};
        m.metadata.deletion_timestamp.is_none()
            && !m.spec.delete
            && matches!(m.status.as_ref().and_then(|s| s.phase), Some(Running | Starting | Stopping | Stopped))
    };
    for machine in machines.items.iter().filter(made) {
        let namespace = machine.namespace().unwrap_or_default();
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
        let found = match api.get_opt(&machine.name_any()).await {
            Ok(found) => found.is_some(),
            Err(kube::Error::Api(status)) if status.is_not_found() => false,
            Err(error) => return Err(error).context("reading a VirtualMachine"),
        };
        if !found {
            missing.push(format!("KiteVirtualMachine {namespace}/{} has no VirtualMachine", machine.name_any()));
        }
    }
    Ok(if missing.is_empty() {
        Check::ok(
            name,
            format!(
                "{} users and {} machines have their namespaces and VirtualMachines",
                users.len(),
                machines.items.len()
            ),
        )
    } else {
        Check::fail(
            name,
            missing.join("; "),
            "the controller makes them again on its next pass: check it runs (kubectl -n kite rollout status deployment kite-controller) and read its log for why it could not",
        )
    })
}

/// The platform's StorageClass as declared, as the controller observed it.
pub fn storage_class(platform: Option<&KitePlatform>) -> Option<Check> {
    let platform = platform?;
    let class = &platform.spec.vm_storage_class_name;
    let name = format!("StorageClass {class}");
    let drifted =
        platform.status.as_ref()?.conditions.iter().find(|c| c.type_ == condition_types::STORAGE_CLASS_DRIFTED)?;
    Some(if drifted.status == ConditionStatus::True {
        Check::fail(
            name,
            format!("differs from the platform's storage settings: {}", drifted.message.clone().unwrap_or_default()),
            format!(
                "its parameters cannot change in place: set spec.storage.recreateOnDrift: true in the KitePlatform, or kubectl delete storageclass {class}, and the controller creates it as declared"
            ),
        )
    } else {
        Check::ok(name, "as the platform declares it")
    })
}
