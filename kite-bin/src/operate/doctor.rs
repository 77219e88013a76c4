//! `kite doctor`: reads what an operator would check by hand and reports
//! each finding with its evidence and the command that fixes it. Exit
//! status 0 only when nothing failed.
//!
//! It checks the Kubernetes version; Kite's CRDs (present, `Established`,
//! the same as this binary's); Kite's Deployments (`Available`, running the
//! image the installation recorded, of this binary's version); the
//! `KitePlatform` (its recorded installation, its golden images, the
//! gateway's exposure); namespaces stuck Terminating and the conditions that
//! say why; APIServices that are not Available; webhook configurations whose
//! Service is gone; failed DataVolumes; and the default StorageClasses.
//! From outside the cluster, as a user meets Kite: `--public-url` answers
//! `/api/v1/health`, `--ssh-address` presents the gateway's host key, and
//! `--probe-machine` signs in to a machine through it with a key.

use super::observe::{deployment_state, platform_state, termination};
use super::plan::{Check, Outcome};
use super::report::Output;
use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kite_core::api::{AccessLevel, KitePlatform, KiteUser, PLATFORM_NAME};
use kite_core::reconcile::apply::contains;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::{Client, discovery};
use serde_json::json;
use std::path::PathBuf;

/// The options of `kite doctor`.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// The kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The platform namespace.
    #[arg(long, default_value = "kite")]
    pub namespace: String,
    /// Check from outside that this URL (the UI and API's public address) answers `/api/v1/health`.
    #[arg(long)]
    pub public_url: Option<String>,
    /// Check from outside that this SSH address (`host:port`, as users connect) presents the gateway's host key.
    #[arg(long)]
    pub ssh_address: Option<String>,
    /// With --ssh-address: sign in to the machine with this `sshId`, as its user would, and run a command.
    #[arg(long, requires_all = ["ssh_address", "probe_key"])]
    pub probe_machine: Option<String>,
    /// With --probe-machine: the private key (OpenSSH, unencrypted) whose public half the machine's owner added.
    #[arg(long, requires = "probe_machine")]
    pub probe_key: Option<PathBuf>,
    /// `text` for people, `json` for machines.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// `kite doctor`: fails when a check failed.
pub async fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let client = crate::cluster::connect(args.kubeconfig.as_ref()).await?;
    let mut checks = checks(&client, &args.namespace).await?;
    if let Some(url) = &args.public_url {
        checks.push(super::outside::public_url(url).await);
    }
    if let Some(address) = &args.ssh_address {
        checks.push(super::outside::ssh_address(&client, &args.namespace, address).await);
        if let (Some(ssh_id), Some(key)) = (&args.probe_machine, &args.probe_key) {
            checks.push(super::probe::machine_login(address, ssh_id, key).await);
        }
    }
    let failed = checks.iter().filter(|c| c.outcome == Outcome::Fail).count();
    let warned = checks.iter().filter(|c| c.outcome == Outcome::Warn).count();
    let summary = format!("{} checks: {failed} failed, {warned} warnings", checks.len());
    match args.output {
        Output::Text => println!("{}{summary}", Output::checks_text(&checks)),
        Output::Json => println!("{}", json!({ "healthy": failed == 0, "checks": checks, "summary": summary })),
    }
    if failed > 0 {
        bail!("the cluster is not healthy: {failed} checks failed (each with its fix above)");
    }
    Ok(())
}

/// Every check, in the order they are reported.
pub async fn checks(client: &Client, namespace: &str) -> anyhow::Result<Vec<Check>> {
    let mut checks = vec![super::preflight::version(client).await?];
    checks.extend(crds(client).await?);
    let platform = Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await.ok().flatten();
    checks.extend(deployments(client, namespace, platform.as_ref()).await?);
    checks.extend(platform_checks(platform.as_ref()));
    checks.push(admin(client, platform.as_ref()).await);
    checks.extend(namespaces(client).await?);
    checks.extend(api_services(client).await?);
    checks.extend(webhooks(client).await?);
    checks.extend(data_volumes(client).await);
    checks.push(super::preflight::storage_classes(client).await?);
    checks.extend(super::consistency::storage_class(platform.as_ref()));
    checks.push(super::consistency::children(client).await?);
    Ok(checks)
}

async fn crds(client: &Client) -> anyhow::Result<Vec<Check>> {
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

async fn deployments(client: &Client, namespace: &str, platform: Option<&KitePlatform>) -> anyhow::Result<Vec<Check>> {
    // Each component runs as the Deployment of its name.
    let names = crate::manifests::rbac::Component::ALL.iter().map(|c| c.name());
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

fn platform_checks(platform: Option<&KitePlatform>) -> Vec<Check> {
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
async fn admin(client: &Client, platform: Option<&KitePlatform>) -> Check {
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

async fn namespaces(client: &Client) -> anyhow::Result<Vec<Check>> {
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

pub(super) async fn api_services(client: &Client) -> anyhow::Result<Vec<Check>> {
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
async fn webhooks(client: &Client) -> anyhow::Result<Vec<Check>> {
    let hooks = super::stack::act::hooks(client).await?;
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

async fn data_volumes(client: &Client) -> Vec<Check> {
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
