//! `kite uninstall`: plans first (what is deleted, in which order, what is
//! kept), then deletes Kite from the cluster, each step waiting until what it
//! deleted is gone:
//!
//! 1. the `KiteVirtualMachine`s (refused unless `--delete-machines`), waiting
//!    for the controller to finish their finalizers, so their disks are
//!    released by what knows them; then the offers;
//! 2. the `KiteUser`s, waiting for them and for their namespaces to be gone;
//! 3. the `KitePlatform`: its golden images, StorageClass and cloner RBAC are
//!    kept (orphaned) unless `--delete-images`;
//! 4. the deployment's objects (what `kite manifests` makes), then the
//!    platform namespace, unless it holds the golden images that are kept,
//!    waiting until it is gone (NotFound) and showing its deletion
//!    conditions meanwhile;
//! 5. the CRDs.
//!
//! Only what carries Kite's labels (or is of Kite's API group) is deleted.
//! Nothing on the hosts is touched. With `--stack`, KubeVirt, CDI and
//! Longhorn (what `kite install` installed of them) are removed after Kite,
//! as [`super::stack::removal`] plans it; their webhooks and APIServices
//! left without a Service are removed first, since they stall every
//! namespace's deletion.

use super::checks::cluster::api_services;
use super::objects::{self, Kinds};
use super::plan::change::each as changes;
use super::plan::owner::{describe, is_kites, reference};
use super::plan::state::deployment_state;
use super::plan::{Action, Change, ChangeKind, Check, Outcome, Owner, Plan, Step, Wait};
use super::run::{self, RunOptions};
use super::stack::removal::{self, Removal};
use super::target::ClusterArgs;
use crate::manifests::ManifestArgs;
use k8s_openapi::api::apps::v1::Deployment;
use kite_core::api::GROUP;
use kube::{Api, Client};
use serde_json::{Value, json};

/// The options of `kite uninstall`.
#[derive(clap::Args, Debug, Clone)]
pub struct UninstallArgs {
    /// Which cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Delete the users' machines, and with them their disks: without it, the uninstall refuses while machines exist.
    #[arg(long)]
    pub delete_machines: bool,
    /// Delete the golden images (and Kite's StorageClass) too: without it, they are kept.
    #[arg(long)]
    pub delete_images: bool,
    /// Remove KubeVirt, CDI and Longhorn too (what kite install installed of them);
    /// Longhorn's volumes go with it, so it needs --delete-images.
    #[arg(long)]
    pub stack: bool,
    /// Where Kite is: the options `kite install` was given.
    #[command(flatten)]
    pub manifests: ManifestArgs,
    /// How the plan is carried out.
    #[command(flatten)]
    pub run: RunOptions,
}

/// `kite uninstall`: observes, plans, then carries the plan out.
pub async fn run(args: UninstallArgs) -> anyhow::Result<()> {
    let client = args.cluster.connect().await?;
    let observed = observe(&client, &args).await?;
    let plan = plan(&observed, &args);
    run::execute(&client, &plan, &args.run).await?;
    if !args.run.plan {
        args.run.output.finished("uninstall", "Kite is removed; what was kept is listed in the plan above");
    }
    Ok(())
}

/// `apiVersion` and `kind` of one of Kite's own kinds.
fn kite_kind(kind: &str) -> (String, String) {
    (format!("{GROUP}/v1"), kind.to_string())
}

/// The `KitePlatform`, as a reference.
fn platform() -> Value {
    json!({ "apiVersion": format!("{GROUP}/v1"), "kind": "KitePlatform", "metadata": { "name": kite_core::api::PLATFORM_NAME } })
}

/// A namespace, as a reference.
fn namespace(name: &str) -> Value {
    json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } })
}

/// What an uninstall reads of the cluster before it plans.
pub struct Observed {
    /// Every `KiteVirtualMachine`.
    machines: Vec<Value>,
    /// Every `KiteUser`.
    users: Vec<Value>,
    /// Every `KiteVirtualMachineOffer`.
    offers: Vec<Value>,
    /// What the stack's removal depends on, with `--stack`.
    stack: Option<removal::Observed>,
    /// The APIServices that are not Available.
    api_services: Vec<Check>,
    /// Whether `kite-controller` is Available, when there are machines or users for it to finalize.
    controller_available: Option<bool>,
    /// Whether the `KitePlatform` exists.
    platform_there: bool,
    /// Kite's components, in the order they are deleted, each with its live object.
    components: Vec<(Value, Option<Value>)>,
    /// Kite's namespaces that exist.
    namespaces: Vec<Value>,
    /// Kite's CRDs, each with whether it exists.
    crds: Vec<(Value, bool)>,
}

/// Reads what removing Kite from what `client` reaches depends on.
pub async fn observe(client: &Client, args: &UninstallArgs) -> anyhow::Result<Observed> {
    let mut kinds = Kinds::default();
    let namespaces = args.manifests.namespaces();
    let mut all_of = async |kind: &str| {
        let (api_version, kind) = kite_kind(kind);
        objects::all_of(client, &mut kinds, &api_version, &kind).await
    };
    let machines = all_of("KiteVirtualMachine").await?;
    let users = all_of("KiteUser").await?;
    let offers = all_of("KiteVirtualMachineOffer").await?;
    let stack = if args.stack { Some(removal::observe(client).await?) } else { None };
    let api_services = api_services(client).await?;
    let controller_available = if machines.is_empty() && users.is_empty() {
        None
    } else {
        let controller = Api::<Deployment>::namespaced(client.clone(), &namespaces.platform)
            .get_opt("kite-controller")
            .await
            .ok()
            .flatten();
        Some(controller.as_ref().is_some_and(|d| deployment_state(d).0))
    };
    let platform_there = objects::live(client, &mut kinds, &platform()).await?.is_some();
    let (crds, mut components, namespace_objects) = desired(&args.manifests)?;
    components.reverse();
    let live = objects::each_live(client, &mut kinds, &components).await?;
    let components = components.into_iter().zip(live).filter(|(_, live)| live.is_some()).collect();
    let mut candidates = namespace_objects;
    if namespaces.golden_images != namespaces.platform {
        candidates.push(namespace(&namespaces.golden_images));
    }
    let live = objects::each_live(client, &mut kinds, &candidates).await?;
    let namespaces = candidates.into_iter().zip(live).filter(|(_, live)| live.is_some()).map(|(n, _)| n).collect();
    let live = objects::each_live(client, &mut kinds, &crds).await?;
    let crds = crds.into_iter().zip(live).map(|(crd, live)| (crd, live.is_some())).collect();
    Ok(Observed {
        machines,
        users,
        offers,
        stack,
        api_services,
        controller_available,
        platform_there,
        components,
        namespaces,
        crds,
    })
}

/// What `kite manifests` makes, as references: its CRDs, its components, its namespaces.
fn desired(options: &ManifestArgs) -> anyhow::Result<(Vec<Value>, Vec<Value>, Vec<Value>)> {
    let all = crate::manifests::objects(options)?;
    let (crds, rest): (Vec<Value>, Vec<Value>) =
        all.iter().map(reference).partition(|o| o["kind"] == "CustomResourceDefinition");
    let (namespaces, components): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(|o| o["kind"] == "Namespace");
    Ok((crds, components, namespaces))
}

/// The checks and steps of removing Kite, from what was `observed`.
pub fn plan(observed: &Observed, args: &UninstallArgs) -> Plan {
    let removal = observed.stack.as_ref().map(removal::plan).unwrap_or_default();
    let checks = checks(observed, &removal, args);
    let mut steps = removal.before;
    steps.extend(object_steps(observed));
    steps.push(platform_step(observed, args));
    steps.push(component_step(observed, args));
    steps.push(namespace_step(observed, args));
    steps.push(crd_step(observed));
    steps.extend(removal.after);
    Plan { operation: "uninstall".into(), checks, steps }
}

/// What stops the uninstall or is worth knowing first: machines, the
/// stack's removal, aggregated APIs that are down, the controller.
fn checks(observed: &Observed, removal: &Removal, args: &UninstallArgs) -> Vec<Check> {
    let mut checks = Vec::new();
    let machines = &observed.machines;
    let names = |list: &[Value]| list.iter().map(describe).collect::<Vec<_>>().join(", ");
    if !machines.is_empty() {
        checks.push(if args.delete_machines {
            Check::warn(
                "machines",
                format!("{} will be deleted with their disks: {}", machines.len(), names(machines)),
                "nothing, if that is meant: --delete-machines asked for it",
            )
        } else {
            Check::fail(
                "machines",
                format!("{} exist: {}", machines.len(), names(machines)),
                "delete them from the web UI, or pass --delete-machines to delete them and their disks",
            )
        });
    }
    if args.stack && !args.delete_images {
        checks.push(Check::fail(
            "golden images",
            "--stack removes Longhorn, and every volume with it: the golden images cannot be kept",
            "pass --delete-images too, or uninstall without --stack",
        ));
    }
    checks.extend(removal.checks.iter().cloned());
    // An aggregated API that is down stalls the deletion of every namespace; unless the stack's removal
    // takes it away, it is not Kite's to remove.
    for check in observed.api_services.iter().filter(|c| !removal.removed_hooks.contains(&c.name)) {
        let mut check = check.clone();
        check.outcome = Outcome::Warn;
        check.observed = format!(
            "{}; the namespaces this uninstall deletes will stay Terminating until it is Available or removed, and it is not Kite's, so it is left alone",
            check.observed
        );
        checks.push(check);
    }
    if observed.controller_available == Some(false) {
        checks.push(Check::warn(
            "controller",
            "kite-controller is not Available: the machines' and users' finalizers are the controller's, so their deletion will wait",
            format!("kubectl -n {} rollout status deployment kite-controller", args.manifests.namespaces().platform),
        ));
    }
    checks
}

/// Deleting every object of one of Kite's kinds, and waiting until none is left.
fn delete_all(title: &str, kind: &str, objects: &[Value]) -> Step {
    let (api_version, kind) = kite_kind(kind);
    Step {
        title: title.into(),
        changes: changes(objects, ChangeKind::Delete),
        action: Action::DeleteAll { api_version: api_version.clone(), kind: kind.clone() },
        wait: Some(Wait::NoneLeft { api_version, kind }),
    }
}

/// The machines, the offers and the users, then the users' namespaces.
fn object_steps(observed: &Observed) -> Vec<Step> {
    let mut steps = vec![
        delete_all(
            "delete the machines; the controller releases their disks",
            "KiteVirtualMachine",
            &observed.machines,
        ),
        delete_all("delete the offers", "KiteVirtualMachineOffer", &observed.offers),
        delete_all("delete the users; the controller deletes their namespaces", "KiteUser", &observed.users),
    ];
    let tenant_namespaces: Vec<Value> =
        observed.users.iter().filter_map(|u| u["spec"]["namespace"].as_str()).map(namespace).collect();
    if !tenant_namespaces.is_empty() {
        steps.push(Step {
            title: "wait for the users' namespaces to be gone".into(),
            changes: Vec::new(),
            action: Action::Nothing,
            wait: Some(Wait::Gone { objects: tenant_namespaces }),
        });
    }
    steps
}

/// The `KitePlatform`; its golden images, StorageClass and cloner RBAC kept unless `--delete-images`.
fn platform_step(observed: &Observed, args: &UninstallArgs) -> Step {
    let platform = platform();
    Step {
        title: if args.delete_images {
            "delete the KitePlatform, its golden images and Kite's StorageClass".into()
        } else {
            "delete the KitePlatform; keep its golden images, Kite's StorageClass and the cloner RBAC (--delete-images removes them)".into()
        },
        changes: if observed.platform_there {
            changes(std::slice::from_ref(&platform), ChangeKind::Delete)
        } else {
            Vec::new()
        },
        action: Action::Delete { objects: vec![platform.clone()], orphan: !args.delete_images, owner: Owner::Kite },
        wait: Some(Wait::Gone { objects: vec![platform] }),
    }
}

/// Kite's components that are Kite's; those of their names that are not are kept.
fn component_step(observed: &Observed, args: &UninstallArgs) -> Step {
    let mut present = Vec::new();
    let mut ours = Vec::new();
    for (object, live) in &observed.components {
        if live.as_ref().is_some_and(is_kites) {
            present.push(Change { change: ChangeKind::Delete, object: describe(object) });
            ours.push(object.clone());
        } else {
            present.push(Change { change: ChangeKind::Keep, object: format!("{} (not Kite's)", describe(object)) });
        }
    }
    Step {
        title: format!(
            "delete Kite's components in namespace {} and their cluster-wide RBAC",
            args.manifests.namespaces().platform
        ),
        changes: present,
        action: Action::Delete { objects: ours.clone(), orphan: false, owner: Owner::Kite },
        wait: Some(Wait::Gone { objects: ours }),
    }
}

/// Kite's namespaces, but the one holding the golden images when they are kept.
fn namespace_step(observed: &Observed, args: &UninstallArgs) -> Step {
    let golden_images = args.manifests.namespaces().golden_images;
    let holds_images = |n: &&Value| n["metadata"]["name"] == golden_images.as_str();
    let (kept, doomed): (Vec<Value>, Vec<Value>) =
        observed.namespaces.iter().cloned().partition(|n| holds_images(&n) && !args.delete_images);
    let mut namespace_changes = changes(&doomed, ChangeKind::Delete);
    namespace_changes.extend(
        kept.iter().map(|n| Change {
            change: ChangeKind::Keep,
            object: format!("{} (it holds the golden images)", describe(n)),
        }),
    );
    Step {
        title: "delete Kite's namespaces".into(),
        changes: namespace_changes,
        action: Action::Delete { objects: doomed.clone(), orphan: false, owner: Owner::Kite },
        wait: (!doomed.is_empty()).then_some(Wait::Gone { objects: doomed }),
    }
}

/// Kite's CustomResourceDefinitions.
fn crd_step(observed: &Observed) -> Step {
    let crds: Vec<Value> = observed.crds.iter().map(|(crd, _)| crd.clone()).collect();
    let present: Vec<Value> = observed.crds.iter().filter(|(_, there)| *there).map(|(crd, _)| crd.clone()).collect();
    Step {
        title: "delete Kite's CustomResourceDefinitions".into(),
        changes: changes(&present, ChangeKind::Delete),
        action: Action::Delete { objects: crds.clone(), orphan: false, owner: Owner::Kite },
        wait: Some(Wait::Gone { objects: crds }),
    }
}
