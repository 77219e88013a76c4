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

use super::objects::{self, Kinds};
use super::plan::{Action, Change, ChangeKind, Check, Plan, Step, Wait};
use super::run::{self, RunOptions};
use crate::manifests::ManifestArgs;
use k8s_openapi::api::apps::v1::Deployment;
use kite_core::api::GROUP;
use kube::{Api, Client};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The options of `kite uninstall`.
#[derive(clap::Args, Debug, Clone)]
pub struct UninstallArgs {
    /// The kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
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

/// `kite uninstall`.
pub async fn run(args: UninstallArgs) -> anyhow::Result<()> {
    let client = crate::cluster::connect(args.kubeconfig.as_ref()).await?;
    let plan = plan(&client, &args).await?;
    run::execute(&client, &plan, &args.run).await?;
    if !args.run.plan {
        args.run.output.finished("uninstall", "Kite is removed; what was kept is listed in the plan above");
    }
    Ok(())
}

fn kite_kind(kind: &str) -> (String, String) {
    (format!("{GROUP}/v1"), kind.to_string())
}

fn changes(objects: &[Value], change: ChangeKind) -> Vec<Change> {
    objects.iter().map(|o| Change { change, object: objects::describe(o) }).collect()
}

/// The checks and steps of removing Kite from what `client` reaches.
pub async fn plan(client: &Client, args: &UninstallArgs) -> anyhow::Result<Plan> {
    let mut kinds = Kinds::default();
    let mut checks = Vec::new();
    let namespaces = args.manifests.namespaces();
    let (vm_version, vm_kind) = kite_kind("KiteVirtualMachine");
    let machines = objects::all_of(client, &mut kinds, &vm_version, &vm_kind).await?;
    let (user_version, user_kind) = kite_kind("KiteUser");
    let users = objects::all_of(client, &mut kinds, &user_version, &user_kind).await?;
    let (offer_version, offer_kind) = kite_kind("KiteVirtualMachineOffer");
    let offers = objects::all_of(client, &mut kinds, &offer_version, &offer_kind).await?;
    let names = |list: &[Value]| list.iter().map(objects::describe).collect::<Vec<_>>().join(", ");
    if !machines.is_empty() {
        checks.push(if args.delete_machines {
            Check::warn(
                "machines",
                format!("{} will be deleted with their disks: {}", machines.len(), names(&machines)),
                "nothing, if that is meant: --delete-machines asked for it",
            )
        } else {
            Check::fail(
                "machines",
                format!("{} exist: {}", machines.len(), names(&machines)),
                "delete them from the web UI, or pass --delete-machines to delete them and their disks",
            )
        });
    }
    let removal = if args.stack { super::stack::removal::plan(client).await? } else { Default::default() };
    if args.stack && !args.delete_images {
        checks.push(Check::fail(
            "golden images",
            "--stack removes Longhorn, and every volume with it: the golden images cannot be kept",
            "pass --delete-images too, or uninstall without --stack",
        ));
    }
    checks.extend(removal.checks);
    // An aggregated API that is down stalls the deletion of every namespace; unless the stack's removal
    // takes it away, it is not Kite's to remove.
    for mut check in super::doctor::api_services(client).await? {
        if removal.removed_hooks.contains(&check.name) {
            continue;
        }
        check.outcome = super::plan::Outcome::Warn;
        check.observed = format!(
            "{}; the namespaces this uninstall deletes will stay Terminating until it is Available or removed, and it is not Kite's, so it is left alone",
            check.observed
        );
        checks.push(check);
    }
    if !(machines.is_empty() && users.is_empty()) {
        let controller = Api::<Deployment>::namespaced(client.clone(), &namespaces.platform)
            .get_opt("kite-controller")
            .await
            .ok()
            .flatten();
        let available = controller.as_ref().is_some_and(|d| super::observe::deployment_state(d).0);
        if !available {
            checks.push(Check::warn(
                "controller",
                "kite-controller is not Available: the machines' and users' finalizers are the controller's, so their deletion will wait",
                format!("kubectl -n {} rollout status deployment kite-controller", namespaces.platform),
            ));
        }
    }

    let mut steps = removal.before;
    steps.push(Step {
        title: "delete the machines; the controller releases their disks".into(),
        changes: changes(&machines, ChangeKind::Delete),
        action: Action::DeleteAll { api_version: vm_version.clone(), kind: vm_kind.clone() },
        wait: Some(Wait::NoneLeft { api_version: vm_version, kind: vm_kind }),
    });
    steps.push(Step {
        title: "delete the offers".into(),
        changes: changes(&offers, ChangeKind::Delete),
        action: Action::DeleteAll { api_version: offer_version.clone(), kind: offer_kind.clone() },
        wait: Some(Wait::NoneLeft { api_version: offer_version, kind: offer_kind }),
    });
    steps.push(Step {
        title: "delete the users; the controller deletes their namespaces".into(),
        changes: changes(&users, ChangeKind::Delete),
        action: Action::DeleteAll { api_version: user_version.clone(), kind: user_kind.clone() },
        wait: Some(Wait::NoneLeft { api_version: user_version, kind: user_kind }),
    });
    let tenant_namespaces: Vec<Value> = users
        .iter()
        .filter_map(|u| u["spec"]["namespace"].as_str())
        .map(|name| json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } }))
        .collect();
    if !tenant_namespaces.is_empty() {
        steps.push(Step {
            title: "wait for the users' namespaces to be gone".into(),
            changes: Vec::new(),
            action: Action::Nothing,
            wait: Some(Wait::Gone { objects: tenant_namespaces }),
        });
    }

    let platform = json!({ "apiVersion": format!("{GROUP}/v1"), "kind": "KitePlatform", "metadata": { "name": kite_core::api::PLATFORM_NAME } });
    let platform_there = objects::live(client, &mut kinds, &platform).await?.is_some();
    steps.push(Step {
        title: if args.delete_images {
            "delete the KitePlatform, its golden images and Kite's StorageClass".into()
        } else {
            "delete the KitePlatform; keep its golden images, Kite's StorageClass and the cloner RBAC (--delete-images removes them)".into()
        },
        changes: if platform_there { changes(std::slice::from_ref(&platform), ChangeKind::Delete) } else { Vec::new() },
        action: Action::Delete { objects: vec![platform.clone()], orphan: !args.delete_images, owner: objects::Owner::Kite },
        wait: Some(Wait::Gone { objects: vec![platform] }),
    });

    let all = crate::manifests::objects(&args.manifests)?;
    let (crds, rest): (Vec<Value>, Vec<Value>) =
        all.iter().map(objects::reference).partition(|o| o["kind"] == "CustomResourceDefinition");
    let (namespace_objects, mut components): (Vec<Value>, Vec<Value>) =
        rest.into_iter().partition(|o| o["kind"] == "Namespace");
    components.reverse();
    let mut present = Vec::new();
    let mut ours = Vec::new();
    for object in components {
        if let Some(live) = objects::live(client, &mut kinds, &object).await? {
            if objects::is_kites(&live) {
                present.push(Change { change: ChangeKind::Delete, object: objects::describe(&object) });
                ours.push(object);
            } else {
                present.push(Change {
                    change: ChangeKind::Keep,
                    object: format!("{} (not Kite's)", objects::describe(&object)),
                });
            }
        }
    }
    steps.push(Step {
        title: format!("delete Kite's components in namespace {} and their cluster-wide RBAC", namespaces.platform),
        changes: present,
        action: Action::Delete { objects: ours.clone(), orphan: false, owner: objects::Owner::Kite },
        wait: Some(Wait::Gone { objects: ours }),
    });

    let keeps_images = !args.delete_images;
    let mut doomed = Vec::new();
    let mut kept = Vec::new();
    let mut candidates = namespace_objects;
    if namespaces.golden_images != namespaces.platform {
        candidates
            .push(json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": namespaces.golden_images } }));
    }
    for namespace in candidates {
        let holds_images = namespace["metadata"]["name"] == namespaces.golden_images.as_str();
        if objects::live(client, &mut kinds, &namespace).await?.is_none() {
            continue;
        }
        if holds_images && keeps_images {
            kept.push(namespace);
        } else {
            doomed.push(namespace);
        }
    }
    let mut namespace_changes = changes(&doomed, ChangeKind::Delete);
    namespace_changes.extend(kept.iter().map(|n| Change {
        change: ChangeKind::Keep,
        object: format!("{} (it holds the golden images)", objects::describe(n)),
    }));
    steps.push(Step {
        title: "delete Kite's namespaces".into(),
        changes: namespace_changes,
        action: Action::Delete { objects: doomed.clone(), orphan: false, owner: objects::Owner::Kite },
        wait: (!doomed.is_empty()).then_some(Wait::Gone { objects: doomed }),
    });
    steps.push(Step {
        title: "delete Kite's CustomResourceDefinitions".into(),
        changes: {
            let mut present = Vec::new();
            for crd in &crds {
                if objects::live(client, &mut kinds, crd).await?.is_some() {
                    present.push(Change { change: ChangeKind::Delete, object: objects::describe(crd) });
                }
            }
            present
        },
        action: Action::Delete { objects: crds.clone(), orphan: false, owner: objects::Owner::Kite },
        wait: Some(Wait::Gone { objects: crds }),
    });
    steps.extend(removal.after);
    Ok(Plan { operation: "uninstall".into(), checks, steps })
}
