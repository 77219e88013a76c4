//! What the operator's commands check, each finding a [`Check`] with its
//! evidence and its fix: before they act ([`preflight`]), and as
//! `kite doctor` ([`installed`], [`cluster`], [`consistency`], and from
//! outside the cluster [`outside`] and [`probe`]).

pub mod cluster;
pub mod consistency;
pub mod installed;
pub mod outside;
pub mod preflight;
pub mod probe;

use crate::operate::plan::Check;
use kite_core::api::{KitePlatform, PLATFORM_NAME};
use kube::Client;
use kube::api::Api;

/// Every check of `kite doctor` inside the cluster, in the order they are reported.
pub async fn doctor(client: &Client, namespace: &str) -> anyhow::Result<Vec<Check>> {
    let mut checks = vec![preflight::version(client).await?];
    checks.extend(installed::crds(client).await?);
    let platform = Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await.ok().flatten();
    checks.extend(installed::deployments(client, namespace, platform.as_ref()).await?);
    checks.extend(installed::platform(platform.as_ref()));
    checks.push(installed::admin(client, platform.as_ref()).await);
    checks.extend(cluster::namespaces(client).await?);
    checks.extend(cluster::api_services(client).await?);
    checks.extend(cluster::webhooks(client).await?);
    checks.extend(cluster::data_volumes(client).await);
    checks.push(preflight::storage_classes(client).await?);
    checks.extend(consistency::storage_class(platform.as_ref()));
    checks.push(consistency::children(client).await?);
    Ok(checks)
}
