//! The doctor's checks of Kite as installed: its CRDs, its Deployments,
//! the `KitePlatform` (its recorded installation, images and exposure) and
//! whether anyone can become its admin.

use crate::manifests::rbac::Component;
use crate::operate::plan::Check;
use crate::operate::plan::state::{deployment_state, platform_state};
use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kite_core::api::{AccessLevel, KitePlatform, KiteUser};
use kite_core::reconcile::apply::contains;
use kube::Client;
use kube::api::{Api, ListParams};

/// Each of Kite's CRDs: present, `Established`, and as this binary defines it.
pub async fn crds(client: &Client) -> anyhow::Result<Vec<Check>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut checks = Vec::new();
    for desired in kite_core::api::crds() {
        let name = desired.metadata.name.clone().unwrap_or_default();
        let what = format!("CRD {name}");
        let Some(live) = api.get_opt(&name).await.with_context(|| format!("reading {what}"))? else {
            checks.push(Check::fail(what, "missing", "kite install (or: kite crds | kubectl apply -f -)"));
            continue;
        };
        let established = live
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"));
        let same = contains(
            &serde_json::to_value(&live.spec).context("reading a CRD")?,
            &serde_json::to_value(&desired.spec).context("rendering a CRD")?,
        );
        checks.push(match (established, same) {
            (false, _) => Check::fail(what, "not Established", format!("kubectl describe crd {name} says why")),
            (true, false) => Check::warn(
                what,
                format!(
                    "differs from kite {}'s: the cluster runs another version of Kite's API",
                    env!("CARGO_PKG_VERSION")
                ),
                "kite install with this version applies it (or run the doctor of the version that is installed)",
            ),
            (true, true) => Check::ok(what, "Established, as this version defines it"),
        });
    }
    Ok(checks)
}

/// Each component's Deployment: `Available`, running the image the installation recorded, of this binary's version.
pub async fn deployments(
    client: &Client,
    namespace: &str,
    platform: Option<&KitePlatform>,
) -> anyhow::Result<Vec<Check>> {
    // Each component runs as the Deployment of its name.
    let names = Component::ALL.iter().map(|c| c.name());
    let recorded = platform.and_then(|p| p.status.as_ref()).and_then(|s| s.installation.as_ref());
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let mut checks = Vec::new();
    for name in names {
        let what = format!("Deployment {namespace}/{name}");
        let Some(deployment) = api.get_opt(name).await.with_context(|| format!("reading {what}"))? else {
            checks.push(Check::fail(what, "missing", "kite install"));
            continue;
        };
        let (available, state) = deployment_state(&deployment);
        let image = deployment
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        let version = deployment
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app.kubernetes.io/version"))
            .cloned()
            .unwrap_or_default();
        checks.push(if !available {
            Check::fail(
                what,
                state,
                format!("kubectl -n {namespace} describe deployment {name}; the pods' events say why"),
            )
        } else if recorded.is_some_and(|r| r.image != image) {
            Check::warn(
                what,
                format!(
                    "runs {image}, but the installation recorded {}",
                    recorded.map(|r| r.image.as_str()).unwrap_or_default()
                ),
                "someone changed the image by hand: kite install --image <the image you want> records it",
            )
        } else if version != env!("CARGO_PKG_VERSION") {
            Check::warn(
                what,
                format!("{state}; it is Kite {version}, this doctor is {}", env!("CARGO_PKG_VERSION")),
                "use the kite binary of the installed version, or upgrade",
            )
        } else {
            Check::ok(what, format!("{state}, {image}"))
        });
    }
    Ok(checks)
}

/// Each stack component as recorded: `KubeVirt v1.9.0 (installed by kite install from
/// kubevirt-operator.yaml sha256:d7bbd58903f0…, unpinned)`.
fn stack_provenance(stack: &[kite_core::api::StackComponent]) -> String {
    let parts: Vec<String> = stack
        .iter()
        .map(|c| {
            let version = c.version.as_deref().unwrap_or("version not reported");
            let origin = if c.installed_by_kite {
                let files: Vec<String> = c
                    .manifests
                    .iter()
                    .map(|f| {
                        let short = f.sha256.get(..12).unwrap_or(&f.sha256);
                        format!("{} sha256:{short}…{}", f.file, if f.pinned { ", pinned" } else { ", unpinned" })
                    })
                    .collect();
                format!("installed by kite install from {}", files.join(", "))
            } else {
                "not installed by Kite".to_string()
            };
            format!("{} {version} ({origin})", c.name.title())
        })
        .collect();
    if parts.is_empty() { "not recorded".into() } else { parts.join("; ") }
}

/// The `KitePlatform`: its recorded installation, then its golden images and exposure.
pub fn platform(platform: Option<&KitePlatform>) -> Vec<Check> {
    let Some(platform) = platform else {
        return vec![Check::fail("KitePlatform", "missing", "kite install --platform platform.yaml")];
    };
    let installation = match platform.status.as_ref().and_then(|s| s.installation.as_ref()) {
        Some(i) => Check::ok(
            "installation",
            format!(
                "Kite {} from {}, by {} at {} ({:?}); stack: {}",
                i.kite_version,
                i.image,
                i.installed_by,
                i.completed_at.0,
                i.operation,
                stack_provenance(&i.stack)
            ),
        ),
        None => Check::warn(
            "installation",
            "not recorded: Kite was not installed with kite install",
            "kite install --skip-stack records it without changing what runs",
        ),
    };
    let (ready, state) = platform_state(platform);
    let images = if ready {
        Check::ok("KitePlatform", state)
    } else {
        Check::fail(
            "KitePlatform",
            state,
            "kubectl get kiteplatform kite -o yaml shows each image's import and the exposure",
        )
    };
    vec![installation, images]
}

/// Whether the platform has an admin, or names the email of its first one:
/// without either, the API takes no sign-up at all.
pub async fn admin(client: &Client, platform: Option<&KitePlatform>) -> Check {
    let users = match Api::<KiteUser>::all(client.clone()).list(&ListParams::default()).await {
        Ok(users) => users,
        Err(error) => {
            return Check::warn(
                "admin",
                format!("not checked: the KiteUsers could not be listed ({error})"),
                "kite install (the CRDs), then kite doctor again",
            );
        }
    };
    let admins = users.items.iter().filter(|u| u.spec.access_level == AccessLevel::Admin).count();
    let named = platform.and_then(|p| p.spec.signup.admin_email.clone());
    match (admins, named) {
        (0, Some(email)) => Check::warn(
            "admin",
            format!("none yet: sign-up waits for {email} to sign up first"),
            "sign up with that email on the web page",
        ),
        (0, None) => Check::warn(
            "admin",
            "none, and KitePlatform spec.signup.adminEmail names none: nobody can sign up",
            r#"kubectl patch kiteplatform kite --type merge -p '{"spec":{"signup":{"adminEmail":"you@example.org"}}}'"#,
        ),
        (count, _) => Check::ok("admin", format!("{count} admin account(s)")),
    }
}
