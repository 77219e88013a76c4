//! `kite install`: checks the cluster, then applies Kite's CRDs (waiting
//! until they are `Established`), its deployment (waiting until the
//! Deployments are `Available`) and the `KitePlatform` (waiting until its
//! golden images and the gateway's exposure are Ready), and records what was
//! installed in the platform's status. It first waits for namespaces of a
//! previous install that are still Terminating to go, never racing them.
//!
//! KubeVirt, CDI and Longhorn come first, from their release files in
//! `--from DIR` (see [`super::stack`]), each waited on by its own signal;
//! `--skip-stack` instead checks that their APIs are served and goes on.

use super::checks::preflight;
use super::deployment;
use super::plan::state::termination;
use super::plan::{Action, Check, Plan, Step, Wait};
use super::run::{self, RunOptions};
use super::stack::{self, release::Release};
use super::target::ClusterArgs;
use crate::manifests::ManifestArgs;
use anyhow::Context;
use k8s_openapi::api::core::v1::Namespace;
use kite_core::api::{InstallOperation, KitePlatform, PLATFORM_NAME};
use kube::Client;
use kube::api::Api;
use serde_json::Value;
use std::path::PathBuf;

/// The options of `kite install`.
#[derive(clap::Args, Debug, Clone)]
pub struct InstallArgs {
    /// Which cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// A `KitePlatform` to apply (YAML): golden images, storage, the gateway's exposure.
    /// Needed when the cluster has none yet.
    #[arg(long)]
    pub platform: Option<PathBuf>,
    /// KubeVirt, CDI and Longhorn are already installed: check that their APIs are served and go on.
    #[arg(long, conflicts_with = "from")]
    pub skip_stack: bool,
    /// A directory with the stack's release files, as their projects publish them
    /// (kubevirt-operator.yaml, kubevirt-cr.yaml, cdi-operator.yaml, cdi-cr.yaml, longhorn.yaml): installed first.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Install release files this build pins no SHA-256 for, recording their hashes unverified.
    #[arg(long)]
    pub allow_unpinned: bool,
    /// What is deployed: the options of `kite manifests`.
    #[command(flatten)]
    pub manifests: ManifestArgs,
    /// How the plan is carried out.
    #[command(flatten)]
    pub run: RunOptions,
}

/// `kite install`: observes, plans, then carries the plan out.
pub async fn run(args: InstallArgs) -> anyhow::Result<()> {
    let client = args.cluster.connect().await?;
    let observed = observe(&client, &args).await?;
    let plan = plan(&observed, &args);
    run::execute(&client, &plan, &args.run).await?;
    if !args.run.plan {
        args.run.output.finished("install", "Kite is installed and what was installed is recorded in the KitePlatform's status; `kite doctor` checks it");
    }
    Ok(())
}

/// What an install reads of the cluster (and of its files) before it plans.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The cluster's version, nodes and StorageClasses, then the stack's
    /// checks: its APIs served (`--skip-stack`), or its release files
    /// (`--from`), or where they come from.
    preflight: Vec<Check>,
    /// The stack's releases, as read from `--from`.
    releases: Vec<Release>,
    /// What the cluster holds of each release's component.
    stack: Vec<stack::install::Observed>,
    /// Kite's namespaces still Terminating, with what holds them.
    terminating: Vec<(String, String)>,
    /// Whether there is a platform to keep or one to apply.
    platform: Check,
    /// The external SSH port the platform would expose, when it exposes one.
    ssh_port: Option<Check>,
    /// Kite's objects beside what the cluster holds of them.
    kite: deployment::Observed,
}

/// Reads what an install onto what `client` reaches depends on.
pub async fn observe(client: &Client, args: &InstallArgs) -> anyhow::Result<Observed> {
    let mut checks = vec![
        preflight::version(client).await?,
        preflight::nodes(client).await?,
        preflight::storage_classes(client).await?,
    ];
    let mut releases = Vec::new();
    let mut stack = Vec::new();
    if args.skip_stack {
        checks.extend(preflight::stack(client).await?);
        checks.push(preflight::schedulable(client).await?);
    } else if let Some(dir) = &args.from {
        let (loaded, release_checks) = stack::release::load(dir, args.allow_unpinned);
        checks.extend(release_checks);
        stack = stack::install::observe(client, &loaded).await?;
        releases = loaded;
    } else {
        checks.push(preflight::no_release());
    }
    let namespaces = args.manifests.namespaces();
    let mut ours = vec![namespaces.platform.clone()];
    if namespaces.golden_images != namespaces.platform {
        ours.push(namespaces.golden_images.clone());
    }
    let terminating = terminating(client, &ours).await?;
    let (platform, platform_check) = platform(client, args.platform.as_ref()).await?;
    let spec = match &platform {
        Some(given) => serde_json::from_value::<KitePlatform>(given.clone()).ok().map(|p| p.spec),
        None => Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await.ok().flatten().map(|p| p.spec),
    };
    let ssh_port = match spec {
        Some(spec) => preflight::ssh_port(client, &spec).await?,
        None => None,
    };
    let kite = deployment::observe(client, &args.manifests, platform).await?;
    Ok(Observed { preflight: checks, releases, stack, terminating, platform: platform_check, ssh_port, kite })
}

/// The checks and steps of an install, from what was `observed`.
pub fn plan(observed: &Observed, args: &InstallArgs) -> Plan {
    let mut checks = observed.preflight.clone();
    let (stack_checks, stack_steps) =
        stack::install::plan(&observed.releases, &observed.stack, stack::install::Mode::Install);
    checks.extend(stack_checks);
    for (name, state) in &observed.terminating {
        checks.push(Check::warn(
            format!("namespace {name}"),
            format!("still Terminating from an earlier uninstall: {state}"),
            "nothing: the install waits for it to be gone before it creates it again",
        ));
    }
    checks.push(observed.platform.clone());
    checks.extend(observed.ssh_port.clone());
    let (kite_steps, theirs) =
        deployment::steps(&observed.kite, &args.manifests, InstallOperation::Install, &observed.releases);
    for object in theirs {
        checks.push(Check::fail(
            object.clone(),
            "exists and is not Kite's (no app.kubernetes.io/part-of=kite label), so the install will not take it over",
            format!("remove it, or label it app.kubernetes.io/part-of=kite to hand it to Kite, or install into another --namespace ({object})"),
        ));
    }
    let mut steps = Vec::new();
    if !observed.terminating.is_empty() {
        steps.push(Step {
            title: "wait for the namespaces of an earlier install to be gone".into(),
            changes: Vec::new(),
            action: Action::Nothing,
            wait: Some(Wait::NamespacesGone {
                names: observed.terminating.iter().map(|(name, _)| name.clone()).collect(),
            }),
        });
    }
    steps.extend(stack_steps);
    steps.extend(kite_steps);
    Plan { operation: "install".into(), checks, steps }
}

/// Which of `names` are Terminating, with what holds them.
async fn terminating(client: &Client, names: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut found = Vec::new();
    for name in names {
        if let Some(namespace) = api.get_opt(name).await.with_context(|| format!("reading namespace {name}"))?
            && namespace.metadata.deletion_timestamp.is_some()
        {
            found.push((name.clone(), termination(&namespace)));
        }
    }
    Ok(found)
}

/// The platform to apply, from `--platform`, and its check: failed when
/// there is none in the cluster and none given, or the file is not a KitePlatform.
async fn platform(client: &Client, path: Option<&PathBuf>) -> anyhow::Result<(Option<Value>, Check)> {
    let name = "KitePlatform";
    let Some(path) = path else {
        let existing = match Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await {
            Ok(existing) => existing,
            // Not served yet: the CRDs are not installed.
            Err(kube::Error::Api(status)) if status.is_not_found() => None,
            Err(error) => return Err(error).context("reading the KitePlatform"),
        };
        let check = match existing {
            Some(_) => Check::ok(name, "kept as it is (no --platform given)"),
            None => Check::fail(
                name,
                "the cluster has none and no --platform was given",
                "write one (see the book's Operating Kite) and pass it: kite install --platform platform.yaml",
            ),
        };
        return Ok((None, check));
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match serde_saphyr::from_str::<KitePlatform>(&text) {
        Ok(platform) if platform.metadata.name.as_deref() == Some(PLATFORM_NAME) => {
            let check = Check::ok(name, format!("from {}", path.display()));
            let mut value = serde_json::to_value(&platform).context("rendering the KitePlatform")?;
            if let Some(object) = value.as_object_mut() {
                object.remove("status");
            }
            Ok((Some(value), check))
        }
        Ok(_) => {
            let check = Check::fail(
                name,
                format!("{} names a KitePlatform other than {PLATFORM_NAME}", path.display()),
                format!("the platform is a singleton: set metadata.name: {PLATFORM_NAME}"),
            );
            Ok((None, check))
        }
        Err(error) => {
            let check = Check::fail(
                name,
                format!("{} is not a KitePlatform: {error}", path.display()),
                "fix the file: `kubectl explain kiteplatform.spec` lists the fields",
            );
            Ok((None, check))
        }
    }
}
