//! `kite upgrade`: the install's plan and apply for this version of Kite
//! (a new image, new manifests, new CRDs) over a recorded installation.
//!
//! Before acting it refuses what a misread setting or a skipped step would
//! break: a downgrade (this binary older than the recorded installation)
//! unless `--force`; a CRD version that objects are still stored in and that
//! this version no longer serves; an installation that was never recorded.
//! A field that cannot change in place (a Deployment's `spec.selector`) is
//! planned as a replacement: the object is deleted, waited on until gone,
//! and created again. Each rollout is waited on (every replica updated and
//! `Available`) before the next step, and the upgrade is recorded as the
//! installation. With `--from DIR`, KubeVirt, CDI and Longhorn (those
//! `kite install` installed) are upgraded first to the releases there,
//! refusing a downgrade or a skipped Longhorn minor version unless `--force`.

use super::deployment;
use super::plan::change::each;
use super::plan::state::termination;
use super::plan::{Action, ChangeKind, Check, Owner, Plan, Step, Wait};
use super::run::{self, RunOptions};
use super::stack::{self, release::Release};
use super::target::ClusterArgs;
use crate::manifests::ManifestArgs;
use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kite_core::api::{InstallOperation, Installation, KitePlatform, PLATFORM_NAME};
use kube::{Api, Client};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The options of `kite upgrade`.
#[derive(clap::Args, Debug, Clone)]
pub struct UpgradeArgs {
    /// Which cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Go on with a downgrade (this binary older than what is installed, or a
    /// stack release older than what runs) or a skipped Longhorn minor version.
    #[arg(long)]
    pub force: bool,
    /// A directory with the stack's release files to upgrade KubeVirt, CDI and Longhorn to
    /// (those kite install installed); without it, only Kite is upgraded.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Apply release files this build pins no SHA-256 for, recording their hashes unverified.
    #[arg(long)]
    pub allow_unpinned: bool,
    /// What is deployed: the options of `kite manifests`, as for `kite install`.
    #[command(flatten)]
    pub manifests: ManifestArgs,
    /// How the plan is carried out.
    #[command(flatten)]
    pub run: RunOptions,
}

/// `kite upgrade`: observes, plans, then carries the plan out.
pub async fn run(args: UpgradeArgs) -> anyhow::Result<()> {
    let client = args.cluster.connect().await?;
    let observed = observe(&client, &args).await?;
    let plan = plan(&observed, &args);
    run::execute(&client, &plan, &args.run).await?;
    if !args.run.plan {
        args.run
            .output
            .finished("upgrade", "Kite is upgraded, and the upgrade is recorded in the KitePlatform's status");
    }
    Ok(())
}

/// Whether going from `installed` to this binary's version is an upgrade; a check either way.
pub fn version_check(installed: &str, force: bool) -> Check {
    let this = env!("CARGO_PKG_VERSION");
    let name = "version";
    let (Ok(from), Ok(to)) = (semver::Version::parse(installed), semver::Version::parse(this)) else {
        return Check::fail(
            name,
            format!("the recorded version {installed:?} is not a version"),
            "kite install --skip-stack records this version over it",
        );
    };
    if to >= from {
        Check::ok(name, format!("from {from} to {to}"))
    } else if force {
        Check::warn(name, format!("a downgrade from {from} to {to}, forced"), "nothing: --force asked for it")
    } else {
        Check::fail(
            name,
            format!("a downgrade from {from} to {to} is refused: an older Kite may not read what a newer one wrote"),
            format!("use kite {from} or later, or pass --force if you are sure"),
        )
    }
}

/// What an upgrade reads of the cluster (and of its files) before it plans.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The Kubernetes version's check.
    version: Check,
    /// Whether there is a `KitePlatform`.
    platform: bool,
    /// The installation it records.
    installed: Option<Installation>,
    /// What holds the platform namespace, when it is being deleted.
    terminating: Option<String>,
    /// The CRD versions objects are stored in that this version no longer serves.
    stored_versions: Vec<Check>,
    /// The Deployments to replace (their selector cannot change in place), and their checks.
    replaced: (Vec<Value>, Vec<Check>),
    /// The checks of the stack's release files.
    release_checks: Vec<Check>,
    /// The stack's releases, as read from `--from`.
    releases: Vec<Release>,
    /// What the cluster holds of each release's component.
    stack: Vec<stack::install::Observed>,
    /// Kite's objects beside what the cluster holds of them.
    kite: deployment::Observed,
}

/// Reads what an upgrade of what `client` reaches depends on.
pub async fn observe(client: &Client, args: &UpgradeArgs) -> anyhow::Result<Observed> {
    let version = super::checks::preflight::version(client).await?;
    let platform = Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await.ok().flatten();
    let installed = platform.as_ref().and_then(|p| p.status.as_ref()).and_then(|s| s.installation.clone());
    let options = &args.manifests;
    let namespace = options.namespaces().platform;
    let terminating = Api::<Namespace>::all(client.clone())
        .get_opt(&namespace)
        .await
        .context("reading the namespace")?
        .filter(|live| live.metadata.deletion_timestamp.is_some())
        .map(|live| termination(&live));
    let stored_versions = stored_versions(client).await?;
    let replaced = replacements(client, options).await?;
    let (mut release_checks, mut releases, mut stack) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(dir) = &args.from {
        let (loaded, checks) = stack::release::load(dir, args.allow_unpinned);
        release_checks = checks;
        stack = stack::install::observe(client, &loaded).await?;
        releases = loaded;
    }
    let kite = deployment::observe(client, options, None).await?;
    Ok(Observed {
        version,
        platform: platform.is_some(),
        installed,
        terminating,
        stored_versions,
        replaced,
        release_checks,
        releases,
        stack,
        kite,
    })
}

/// The checks of the recorded installation: there is one, and this version is not older.
fn installation_checks(observed: &Observed, force: bool) -> Vec<Check> {
    match (observed.platform, &observed.installed) {
        (false, _) => vec![Check::fail("installation", "there is no KitePlatform", "kite install")],
        (true, None) => vec![Check::fail(
            "installation",
            "none is recorded: Kite was not installed by kite install, so what runs is not known",
            "kite install --skip-stack --image <the image that runs> records it",
        )],
        (true, Some(installed)) => vec![
            Check::ok(
                "installation",
                format!("Kite {} from {}, by {}", installed.kite_version, installed.image, installed.installed_by),
            ),
            version_check(&installed.kite_version, force),
        ],
    }
}

/// The checks and steps of an upgrade, from what was `observed`.
pub fn plan(observed: &Observed, args: &UpgradeArgs) -> Plan {
    let mut checks = vec![observed.version.clone()];
    checks.extend(installation_checks(observed, args.force));
    if let Some(state) = &observed.terminating {
        checks.push(Check::fail(
            format!("namespace {}", args.manifests.namespaces().platform),
            format!("is being deleted: {state}"),
            "wait for it to be gone, then kite install",
        ));
    }
    checks.extend(observed.stored_versions.iter().cloned());
    let (replaced, replace_checks) = &observed.replaced;
    checks.extend(replace_checks.iter().cloned());
    checks.extend(observed.release_checks.iter().cloned());
    let mode = stack::install::Mode::Upgrade { force: args.force };
    let (stack_checks, stack_steps) = stack::install::plan(&observed.releases, &observed.stack, mode);
    checks.extend(stack_checks);
    let (mut steps, theirs) =
        deployment::steps(&observed.kite, &args.manifests, InstallOperation::Upgrade, &observed.releases);
    for object in theirs {
        checks.push(Check::fail(object.clone(), "exists and is not Kite's", format!("remove it ({object})")));
    }
    if !replaced.is_empty() {
        steps.insert(
            1,
            Step {
                title: "replace what cannot change in place: delete it and wait until it is gone (it is created again next)"
                    .into(),
                changes: each(replaced, ChangeKind::Delete),
                action: Action::Delete { objects: replaced.clone(), orphan: false, owner: Owner::Kite },
                wait: Some(Wait::Gone { objects: replaced.clone() }),
            },
        );
    }
    let mut all = stack_steps;
    all.extend(steps);
    Plan { operation: "upgrade".into(), checks, steps: all }
}

/// A CRD version that objects are stored in must stay served.
async fn stored_versions(client: &Client) -> anyhow::Result<Vec<Check>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut checks = Vec::new();
    for desired in kite_core::api::crds() {
        let name = desired.metadata.name.clone().unwrap_or_default();
        let Some(live) = api.get_opt(&name).await.with_context(|| format!("reading CRD {name}"))? else { continue };
        let kept: Vec<&str> = desired.spec.versions.iter().map(|v| v.name.as_str()).collect();
        let dropped: Vec<String> = live
            .status
            .and_then(|s| s.stored_versions)
            .unwrap_or_default()
            .into_iter()
            .filter(|v| !kept.contains(&v.as_str()))
            .collect();
        if !dropped.is_empty() {
            checks.push(Check::fail(
                format!("CRD {name}"),
                format!("objects are stored as {}, which this version no longer serves", dropped.join(", ")),
                "migrate the stored objects to a served version and remove the old one from status.storedVersions first",
            ));
        }
    }
    Ok(checks)
}

/// The Deployments whose selector differs from this version's: a selector cannot change in place.
async fn replacements(client: &Client, options: &ManifestArgs) -> anyhow::Result<(Vec<Value>, Vec<Check>)> {
    let namespace = options.namespaces().platform;
    let api: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let mut replaced = Vec::new();
    let mut checks = Vec::new();
    for desired in crate::manifests::objects(options)?.into_iter().filter(|o| o["kind"] == "Deployment") {
        let name = desired["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let Some(live) = api.get_opt(&name).await.with_context(|| format!("reading Deployment {namespace}/{name}"))?
        else {
            continue;
        };
        let selector = serde_json::to_value(&live.spec.selector).context("reading a selector")?;
        if selector != desired["spec"]["selector"] {
            checks.push(Check::warn(
                format!("Deployment {namespace}/{name}"),
                format!(
                    "its spec.selector {selector} becomes {}, which cannot change in place: it is replaced, and down meanwhile",
                    desired["spec"]["selector"]
                ),
                "nothing: the plan deletes it and creates it again",
            ));
            replaced.push(json!({ "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": name, "namespace": namespace } }));
        }
    }
    Ok((replaced, checks))
}
