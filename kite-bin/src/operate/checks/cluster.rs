//! The doctor's checks of what in the cluster stalls Kite: namespaces
//! stuck Terminating, APIServices that are not Available, webhook
//! configurations whose Service is gone, and DataVolumes that failed.

use crate::operate::plan::Check;
use crate::operate::plan::state::termination;
use crate::operate::stack::act;
use anyhow::Context;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::{Client, discovery};

/// Each namespace stuck Terminating, with the conditions that say why.
pub async fn namespaces(client: &Client) -> anyhow::Result<Vec<Check>> {
    let all = Api::<Namespace>::all(client.clone()).list(&ListParams::default()).await.context("listing namespaces")?;
    Ok(all
        .items
        .iter()
        .filter(|n| n.metadata.deletion_timestamp.is_some())
        .map(|n| {
            let name = n.metadata.name.clone().unwrap_or_default();
            Check::fail(
                format!("namespace {name}"),
                termination(n),
                "the condition names what holds it: an unavailable APIService or a webhook without its Service (below) is removed with kubectl delete; remaining content with a finalizer needs its controller",
            )
        })
        .collect())
}

/// Each APIService that is not Available: while one is down, no namespace can finish deleting.
pub async fn api_services(client: &Client) -> anyhow::Result<Vec<Check>> {
    let all =
        Api::<APIService>::all(client.clone()).list(&ListParams::default()).await.context("listing APIServices")?;
    Ok(all
        .items
        .iter()
        .filter_map(|service| {
            let name = service.metadata.name.clone().unwrap_or_default();
            let condition = service
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == "Available"))?;
            if condition.status == "True" {
                return None;
            }
            let backend = service
                .spec
                .as_ref()
                .and_then(|s| s.service.as_ref())
                .map(|s| {
                    format!(
                        "Service {}/{}",
                        s.namespace.clone().unwrap_or_default(),
                        s.name.clone().unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| "no Service".into());
            Some(Check::fail(
                format!("APIService {name}"),
                format!(
                    "not Available ({}: {}); backed by {backend}. While it is down, no namespace can finish deleting",
                    condition.reason.clone().unwrap_or_default(),
                    condition.message.clone().unwrap_or_default()
                ),
                format!("if its component was removed: kubectl delete apiservice {name}; otherwise repair {backend}"),
            ))
        })
        .collect())
}

/// Webhook configurations whose Service is gone.
pub async fn webhooks(client: &Client) -> anyhow::Result<Vec<Check>> {
    let hooks = act::hooks(client).await?;
    Ok(hooks
        .iter()
        .filter(|h| h.kind != "APIService" && !h.service_exists)
        .map(|h| {
            let (kind, (namespace, service)) = (h.kind.to_lowercase(), &h.service);
            Check::fail(
                format!("{kind} {}", h.name),
                format!("calls Service {namespace}/{service}, which does not exist: every request it matches fails, and namespaces it covers cannot be cleaned"),
                format!("if its component was removed: kubectl delete {kind} {}", h.name),
            )
        })
        .collect())
}

/// The DataVolumes (machines' disks and golden images) that failed.
pub async fn data_volumes(client: &Client) -> Vec<Check> {
    let gvk = GroupVersionKind::gvk("cdi.kubevirt.io", "v1beta1", "DataVolume");
    let Ok((resource, _)) = discovery::pinned_kind(client, &gvk).await else {
        return vec![Check::warn(
            "DataVolumes",
            "cdi.kubevirt.io is not served",
            "install CDI: machines' disks are DataVolumes",
        )];
    };
    let list = match Api::<DynamicObject>::all_with(client.clone(), &resource).list(&ListParams::default()).await {
        Ok(list) => list,
        Err(error) => {
            return vec![Check::warn(
                "DataVolumes",
                format!("cannot list them: {error}"),
                "give this account list on datavolumes",
            )];
        }
    };
    let failed: Vec<String> = list
        .items
        .iter()
        .filter(|dv| dv.data.pointer("/status/phase").and_then(|p| p.as_str()) == Some("Failed"))
        .map(kite_core::key::object_key)
        .collect();
    if failed.is_empty() {
        vec![Check::ok("DataVolumes", format!("{} and none Failed", list.items.len()))]
    } else {
        vec![Check::fail(
            "DataVolumes",
            format!("Failed: {}", failed.join(", ")),
            "kubectl describe datavolume -n <namespace> <name> says why; delete the machine to release it",
        )]
    }
}
