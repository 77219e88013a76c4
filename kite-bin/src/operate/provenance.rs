//! Records what was installed in the `KitePlatform`'s status, and reads the
//! facts that go in it: who is acting, and which stack versions run.

use super::objects::FIELD_MANAGER;
use anyhow::Context;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kite_core::api::{Installation, KitePlatform, PLATFORM_NAME, StackComponent, StackName};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, discovery};
use serde_json::json;

/// Writes `installation` into the platform's status, server-side under
/// [`FIELD_MANAGER`], beside what the controller reports, with who
/// acted, the stack's versions and the time as observed now.
pub async fn record(client: &Client, installation: &Installation, longhorn_namespace: &str) -> anyhow::Result<()> {
    let api: Api<KitePlatform> = Api::all(client.clone());
    let previous = api.get_opt(PLATFORM_NAME).await.ok().flatten().and_then(|p| p.status).and_then(|s| s.installation);
    let observed = stack(client, longhorn_namespace).await;
    let installation = Installation {
        installed_by: acting_user(client).await,
        stack: merge(observed, &installation.stack, previous.as_ref().map_or(&[][..], |p| &p.stack[..])),
        completed_at: Time(jiff::Timestamp::now()),
        ..installation.clone()
    };
    let body = json!({
        "apiVersion": format!("{}/v1", kite_core::api::GROUP),
        "kind": "KitePlatform",
        "metadata": { "name": PLATFORM_NAME },
        "status": { "installation": installation },
    });
    api.patch_status(PLATFORM_NAME, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body))
        .await
        .context("recording the installation in the KitePlatform's status")?;
    Ok(())
}

/// The stack as `observed`, with what Kite knows of where each component
/// came from: the release files this run `applied`, or else those the
/// `previous` record names for the same version.
fn merge(
    observed: Vec<StackComponent>,
    applied: &[StackComponent],
    previous: &[StackComponent],
) -> Vec<StackComponent> {
    observed
        .into_iter()
        .map(|mut seen| {
            let known = applied
                .iter()
                .find(|a| a.name == seen.name)
                .or_else(|| previous.iter().find(|p| p.name == seen.name && p.version == seen.version));
            if let Some(known) = known {
                seen.manifests = known.manifests.clone();
                seen.installed_by_kite = known.installed_by_kite;
            }
            seen
        })
        .collect()
}

/// The user the API server authenticates this client as; `unknown` when it will not say.
async fn acting_user(client: &Client) -> String {
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    match api.create(&PostParams::default(), &SelfSubjectReview::default()).await {
        Ok(review) => {
            review.status.and_then(|s| s.user_info).and_then(|u| u.username).unwrap_or_else(|| "unknown".into())
        }
        Err(error) => {
            tracing::warn!(%error, "the API server did not say who this is (SelfSubjectReview)");
            "unknown".into()
        }
    }
}

/// The first object of a kind, when the kind is served and one exists.
async fn first(client: &Client, group: &str, version: &str, kind: &str) -> Option<DynamicObject> {
    let (resource, _): (ApiResource, _) =
        discovery::pinned_kind(client, &GroupVersionKind::gvk(group, version, kind)).await.ok()?;
    Api::<DynamicObject>::all_with(client.clone(), &resource)
        .list(&Default::default())
        .await
        .ok()?
        .items
        .into_iter()
        .next()
}

/// KubeVirt, CDI and Longhorn as they report themselves (the `KubeVirt` and
/// `CDI` resources' observed versions; Longhorn's `current-longhorn-version` setting).
async fn stack(client: &Client, longhorn_namespace: &str) -> Vec<StackComponent> {
    let version = |object: Option<DynamicObject>, path: &str| {
        object.and_then(|o| o.data.pointer(path).and_then(|v| v.as_str()).map(str::to_string))
    };
    let kubevirt = version(first(client, "kubevirt.io", "v1", "KubeVirt").await, "/status/observedKubeVirtVersion");
    let cdi = version(first(client, "cdi.kubevirt.io", "v1beta1", "CDI").await, "/status/observedVersion");
    let longhorn =
        match discovery::pinned_kind(client, &GroupVersionKind::gvk("longhorn.io", "v1beta2", "Setting")).await {
            Ok((resource, _)) => Api::<DynamicObject>::namespaced_with(client.clone(), longhorn_namespace, &resource)
                .get_opt("current-longhorn-version")
                .await
                .ok()
                .flatten()
                .and_then(|s| s.data.get("value").and_then(|v| v.as_str()).map(str::to_string)),
            Err(_) => None,
        };
    [(StackName::KubeVirt, kubevirt), (StackName::Cdi, cdi), (StackName::Longhorn, longhorn)]
        .into_iter()
        .map(|(name, version)| StackComponent { name, version, manifests: Vec::new(), installed_by_kite: false })
        .collect()
}
