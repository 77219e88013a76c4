//! What the operator's commands check before they act: the cluster's
//! version and nodes, its StorageClasses, the stack Kite runs on, and the
//! SSH port the platform would expose.

use crate::operate::plan::Check;
use anyhow::Context;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::storage::v1::StorageClass;
use kite_core::api::KitePlatformSpec;
use kube::api::{Api, ListParams};
use kube::{Client, discovery};

/// The oldest Kubernetes that runs Kite: its CRDs' CEL rules need 1.30.
pub const MINIMUM_MINOR: u32 = 30;

/// Kubernetes 1.30 or later.
pub async fn version(client: &Client) -> anyhow::Result<Check> {
    let info = client.apiserver_version().await.context("asking the API server for its version")?;
    let minor: u32 = info.minor.trim_end_matches('+').parse().unwrap_or(0);
    let name = "Kubernetes version";
    Ok(if info.major == "1" && minor >= MINIMUM_MINOR {
        Check::ok(name, format!("{} (1.{MINIMUM_MINOR} or later)", info.git_version))
    } else {
        Check::fail(
            name,
            format!("{}: Kite's CRDs need 1.{MINIMUM_MINOR} or later for their validation rules", info.git_version),
            "upgrade the cluster (for K3s, rerun its installer with INSTALL_K3S_VERSION)",
        )
    })
}

/// At least one node is Ready.
pub async fn nodes(client: &Client) -> anyhow::Result<Check> {
    let nodes = Api::<Node>::all(client.clone()).list(&ListParams::default()).await.context("listing the nodes")?;
    let ready = |node: &Node| {
        node.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let names: Vec<String> = nodes.items.iter().filter(|n| ready(n)).filter_map(|n| n.metadata.name.clone()).collect();
    Ok(if names.is_empty() {
        Check::fail(
            "nodes",
            format!("none of {} nodes is Ready", nodes.items.len()),
            "`kubectl describe nodes` says why",
        )
    } else {
        Check::ok("nodes", format!("{} of {} Ready ({})", names.len(), nodes.items.len(), names.join(", ")))
    })
}

/// One default StorageClass, Longhorn's.
pub async fn storage_classes(client: &Client) -> anyhow::Result<Check> {
    let classes = Api::<StorageClass>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing StorageClasses")?;
    let defaults: Vec<&StorageClass> = classes
        .items
        .iter()
        .filter(|c| {
            c.metadata.annotations.as_ref().and_then(|a| a.get("storageclass.kubernetes.io/is-default-class"))
                == Some(&"true".to_string())
        })
        .collect();
    let names: Vec<String> = defaults.iter().filter_map(|c| c.metadata.name.clone()).collect();
    let name = "default StorageClass";
    Ok(match defaults.as_slice() {
        [] => Check::ok(name, "none (Kite names its own StorageClass on every disk)"),
        [_] => Check::ok(name, format!("{} only", names.join(", "))),
        _ => Check::warn(
            name,
            format!("{} are all default: a claim without a class lands on any of them", names.join(", ")),
            "keep one: kubectl patch storageclass local-path -p '{\"metadata\":{\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"false\"}}}'",
        ),
    })
}

/// Neither `--from DIR` nor `--skip-stack`: where the release files come from.
pub fn no_release() -> Check {
    let files: Vec<String> = crate::operate::stack::Upstream::all()
        .iter()
        .flat_map(|u| u.files().into_iter().map(move |f| u.url(u.recommended, f)))
        .collect();
    Check::fail(
        "KubeVirt, CDI and Longhorn",
        "kite install applies them from their release files in a directory, and no --from DIR was given (it downloads nothing itself)",
        format!(
            "download {} into a directory and pass --from DIR; or, if they are installed already, pass --skip-stack",
            files.join(", ")
        ),
    )
}

/// The kinds of KubeVirt and CDI Kite uses, and Longhorn's provisioner.
pub async fn stack(client: &Client) -> anyhow::Result<Vec<Check>> {
    let mut checks = Vec::new();
    for (group, version, kinds, component) in [
        ("kubevirt.io", "v1", &["VirtualMachine", "VirtualMachineInstance"][..], "KubeVirt"),
        ("cdi.kubevirt.io", "v1beta1", &["DataVolume"][..], "CDI"),
    ] {
        let served = discovery::group(client, group).await.ok();
        let missing: Vec<&str> = kinds
            .iter()
            .copied()
            .filter(|kind| {
                !served
                    .as_ref()
                    .is_some_and(|g| g.versioned_resources(version).iter().any(|(resource, _)| resource.kind == *kind))
            })
            .collect();
        checks.push(if missing.is_empty() {
            Check::ok(component, format!("{group}/{version} serves {}", kinds.join(", ")))
        } else {
            Check::fail(
                component,
                format!("{group}/{version} does not serve {}", missing.join(", ")),
                format!("install {component} (its operator and its custom resource), or drop --skip-stack"),
            )
        });
    }
    let classes = Api::<StorageClass>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing StorageClasses")?;
    let longhorn = discovery::group(client, "longhorn.io").await.is_ok()
        || classes.items.iter().any(|c| c.provisioner == kite_storage::storage_class::LONGHORN_PROVISIONER);
    checks.push(if longhorn {
        Check::ok("Longhorn", "longhorn.io is served")
    } else {
        Check::warn(
            "Longhorn",
            format!(
                "neither longhorn.io nor a {} StorageClass was found",
                kite_storage::storage_class::LONGHORN_PROVISIONER
            ),
            "install Longhorn before creating machines: their disks are Longhorn volumes",
        )
    });
    Ok(checks)
}

/// Nodes KubeVirt can run machines on: virt-handler labels them `kubevirt.io/schedulable=true`.
pub async fn schedulable(client: &Client) -> anyhow::Result<Check> {
    let params = ListParams::default().labels("kubevirt.io/schedulable=true");
    let nodes = Api::<Node>::all(client.clone()).list(&params).await.context("listing the nodes")?;
    let names: Vec<String> = nodes.items.iter().filter_map(|n| n.metadata.name.clone()).collect();
    let name = "nodes for machines";
    Ok(if names.is_empty() {
        Check::warn(
            name,
            "no node is labelled kubevirt.io/schedulable=true: machines cannot start",
            "KubeVirt's virt-handler labels the nodes it runs on: kubectl -n kubevirt get daemonset virt-handler",
        )
    } else {
        Check::ok(name, format!("{} (kubevirt.io/schedulable)", names.join(", ")))
    })
}

/// The external SSH port of `spec`: never 22 (the nodes' own sshd), and
/// free of every other LoadBalancer Service (K3s' ServiceLB binds each such
/// port on every node).
pub async fn ssh_port(client: &Client, spec: &KitePlatformSpec) -> anyhow::Result<Option<Check>> {
    let gateway = &spec.ssh_gateway;
    let Some(port) = gateway.external_port.filter(|_| gateway.external_enabled) else { return Ok(None) };
    let name = format!("external SSH port {port}");
    if port == 22 {
        return Ok(Some(Check::fail(
            name,
            "22 is the nodes' own sshd: Kite never takes it over",
            "choose another sshGateway.externalPort in the platform (2222, say) and tell users to connect there",
        )));
    }
    let services =
        Api::<Service>::all(client.clone()).list(&ListParams::default()).await.context("listing Services")?;
    let holders: Vec<String> = services
        .items
        .iter()
        .filter(|s| s.metadata.name.as_deref() != Some(kite_core::gateway::desired::EXTERNAL_SERVICE))
        .filter(|s| s.spec.as_ref().and_then(|spec| spec.type_.as_deref()) == Some("LoadBalancer"))
        .filter(|s| {
            s.spec
                .as_ref()
                .and_then(|spec| spec.ports.as_ref())
                .is_some_and(|ports| ports.iter().any(|p| p.port == i32::from(port)))
        })
        .map(kite_core::key::object_key)
        .collect();
    Ok(Some(if holders.is_empty() {
        Check::ok(name, "no other LoadBalancer Service holds it")
    } else {
        Check::fail(
            name,
            format!(
                "already held by the LoadBalancer Service {}: ServiceLB binds it on every node",
                holders.join(", ")
            ),
            "choose another sshGateway.externalPort in the platform",
        )
    }))
}
