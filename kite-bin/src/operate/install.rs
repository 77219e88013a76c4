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

use super::objects::{self, Kinds};
use super::plan::{Action, Check, Plan, Step, Wait};
use super::preflight;
use super::run::{self, RunOptions};
use crate::manifests::ManifestArgs;
use anyhow::Context;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kite_core::api::{InstallOperation, Installation, KitePlatform, PLATFORM_NAME, StackComponent};
use kube::Client;
use kube::api::Api;
use serde_json::Value;
use std::path::PathBuf;

/// The options of `kite install`.
#[derive(clap::Args, Debug, Clone)]
pub struct InstallArgs {
    /// The kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
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

/// `kite install`.
pub async fn run(args: InstallArgs) -> anyhow::Result<()> {
    let client = crate::cluster::connect(args.kubeconfig.as_ref()).await?;
    let plan = plan(&client, &args).await?;
    run::execute(&client, &plan, &args.run).await?;
    if !args.run.plan {
        args.run.output.finished("install", "Kite is installed and what was installed is recorded in the KitePlatform's status; `kite doctor` checks it");
    }
    Ok(())
}

/// The checks and steps of an install onto what `client` reaches.
pub async fn plan(client: &Client, args: &InstallArgs) -> anyhow::Result<Plan> {
    let mut checks = vec![
        preflight::version(client).await?,
        preflight::nodes(client).await?,
        preflight::storage_classes(client).await?,
    ];
    let mut stack_steps = Vec::new();
    let mut releases = Vec::new();
    if args.skip_stack {
        checks.extend(preflight::stack(client).await?);
        checks.push(preflight::schedulable(client).await?);
    } else if let Some(dir) = &args.from {
        let (loaded, release_checks) = super::stack::release::load(dir, args.allow_unpinned);
        checks.extend(release_checks);
        let (more, steps) = super::stack::install::plan(client, &loaded, super::stack::install::Mode::Install).await?;
        checks.extend(more);
        stack_steps = steps;
        releases = loaded;
    } else {
        checks.push(preflight::no_release());
    }

    let options = &args.manifests;
    let namespaces = options.namespaces();
    let mut ours = vec![namespaces.platform.clone()];
    if namespaces.golden_images != namespaces.platform {
        ours.push(namespaces.golden_images.clone());
    }
    let terminating = terminating(client, &ours).await?;
    for (name, state) in &terminating {
        checks.push(Check::warn(
            format!("namespace {name}"),
            format!("still Terminating from an earlier uninstall: {state}"),
            "nothing: the install waits for it to be gone before it creates it again",
        ));
    }

    let platform = platform(client, args.platform.as_ref(), &mut checks).await?;
    let spec = match &platform {
        Some(given) => serde_json::from_value::<KitePlatform>(given.clone()).ok().map(|p| p.spec),
        None => Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await.ok().flatten().map(|p| p.spec),
    };
    if let Some(spec) = spec
        && let Some(check) = preflight::ssh_port(client, &spec).await?
    {
        checks.push(check);
    }
    let (kite_steps, theirs) = apply_steps(client, options, platform, InstallOperation::Install, &releases).await?;
    for object in theirs {
        checks.push(Check::fail(
            object.clone(),
            "exists and is not Kite's (no app.kubernetes.io/part-of=kite label), so the install will not take it over",
            format!("remove it, or label it app.kubernetes.io/part-of=kite to hand it to Kite, or install into another --namespace ({object})"),
        ));
    }
    let mut steps = Vec::new();
    if !terminating.is_empty() {
        steps.push(Step {
            title: "wait for the namespaces of an earlier install to be gone".into(),
            changes: Vec::new(),
            action: Action::Nothing,
            wait: Some(Wait::NamespacesGone { names: terminating.into_iter().map(|(name, _)| name).collect() }),
        });
    }
    steps.extend(stack_steps);
    steps.extend(kite_steps);
    Ok(Plan { operation: "install".into(), checks, steps })
}

/// Which of `names` are Terminating, with what holds them.
async fn terminating(client: &Client, names: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut found = Vec::new();
    for name in names {
        if let Some(namespace) = api.get_opt(name).await.with_context(|| format!("reading namespace {name}"))?
            && namespace.metadata.deletion_timestamp.is_some()
        {
            found.push((name.clone(), super::observe::termination(&namespace)));
        }
    }
    Ok(found)
}

/// The platform to apply, from `--platform`; a failed check when there is
/// none in the cluster and none given, or the file is not a KitePlatform.
async fn platform(client: &Client, path: Option<&PathBuf>, checks: &mut Vec<Check>) -> anyhow::Result<Option<Value>> {
    let name = "KitePlatform";
    let Some(path) = path else {
        let existing = match Api::<KitePlatform>::all(client.clone()).get_opt(PLATFORM_NAME).await {
            Ok(existing) => existing,
            // Not served yet: the CRDs are not installed.
            Err(kube::Error::Api(status)) if status.is_not_found() => None,
            Err(error) => return Err(error).context("reading the KitePlatform"),
        };
        checks.push(match existing {
            Some(_) => Check::ok(name, "kept as it is (no --platform given)"),
            None => Check::fail(
                name,
                "the cluster has none and no --platform was given",
                "write one (see the book's Operating Kite) and pass it: kite install --platform platform.yaml",
            ),
        });
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    match serde_saphyr::from_str::<KitePlatform>(&text) {
        Ok(platform) if platform.metadata.name.as_deref() == Some(PLATFORM_NAME) => {
            checks.push(Check::ok(name, format!("from {}", path.display())));
            let mut value = serde_json::to_value(&platform).context("rendering the KitePlatform")?;
            if let Some(object) = value.as_object_mut() {
                object.remove("status");
            }
            Ok(Some(value))
        }
        Ok(_) => {
            checks.push(Check::fail(
                name,
                format!("{} names a KitePlatform other than {PLATFORM_NAME}", path.display()),
                format!("the platform is a singleton: set metadata.name: {PLATFORM_NAME}"),
            ));
            Ok(None)
        }
        Err(error) => {
            checks.push(Check::fail(
                name,
                format!("{} is not a KitePlatform: {error}", path.display()),
                "fix the file: `kubectl explain kiteplatform.spec` lists the fields",
            ));
            Ok(None)
        }
    }
}

/// The steps that make the cluster hold this version of Kite: the CRDs
/// (then `Established`), the deployment (then `Available`, every replica
/// updated), the platform when one is given (then Ready), and the record of
/// `operation` with the stack `releases` applied before. Also the objects
/// of Kite's names that are not Kite's.
pub(super) async fn apply_steps(
    client: &Client,
    options: &ManifestArgs,
    platform: Option<Value>,
    operation: InstallOperation,
    releases: &[super::stack::release::Release],
) -> anyhow::Result<(Vec<Step>, Vec<String>)> {
    let namespaces = options.namespaces();
    let all = crate::manifests::objects(options)?;
    let (crds, rest): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|o| o["kind"] == "CustomResourceDefinition");
    let mut kinds = Kinds::default();
    let (crd_changes, mut theirs) = objects::plan(client, &mut kinds, &crds).await?;
    let (changes, more) = objects::plan(client, &mut kinds, &rest).await?;
    theirs.extend(more);
    let platform_changes = match &platform {
        Some(platform) => {
            let (changes, more) = objects::plan(client, &mut kinds, std::slice::from_ref(platform)).await?;
            theirs.extend(more);
            changes
        }
        None => Vec::new(),
    };
    let mut steps = Vec::new();
    let crd_names = crds.iter().filter_map(|c| c["metadata"]["name"].as_str().map(str::to_string)).collect();
    steps.push(Step {
        title: "apply Kite's CustomResourceDefinitions".into(),
        changes: crd_changes,
        action: Action::Apply(crds),
        wait: Some(Wait::CrdsEstablished { names: crd_names }),
    });
    let deployments = rest
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    steps.push(Step {
        title: format!("apply Kite's deployment in namespace {} (image {})", namespaces.platform, options.image),
        changes,
        action: Action::Apply(rest),
        wait: Some(Wait::DeploymentsAvailable { namespace: namespaces.platform.clone(), names: deployments }),
    });
    steps.push(Step {
        title: if platform.is_some() {
            "apply the KitePlatform".into()
        } else {
            "keep the KitePlatform as it is".into()
        },
        changes: platform_changes,
        action: platform.map_or(Action::Nothing, |p| Action::Apply(vec![p])),
        wait: Some(Wait::PlatformReady),
    });
    let done = match operation {
        InstallOperation::Install => "installed",
        InstallOperation::Upgrade => "upgraded",
    };
    let installation = Installation {
        operation,
        kite_version: env!("CARGO_PKG_VERSION").into(),
        image: options.image.clone(),
        image_digest: options.image.split_once('@').map(|(_, digest)| digest.to_string()),
        installed_by: String::new(),
        completed_at: Time(jiff::Timestamp::now()),
        stack: releases
            .iter()
            .map(|r| StackComponent {
                name: r.upstream.name,
                version: Some(r.version.clone()),
                manifests: r.records(),
                installed_by_kite: true,
            })
            .collect(),
    };
    steps.push(Step {
        title: format!("record Kite {} as {done} in the KitePlatform's status", installation.kite_version),
        changes: Vec::new(),
        action: Action::Record {
            installation: Box::new(installation),
            longhorn_namespace: namespaces.longhorn.clone(),
        },
        wait: None,
    });
    Ok((steps, theirs))
}
