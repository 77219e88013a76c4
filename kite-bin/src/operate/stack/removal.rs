//! Removing the stack (`kite uninstall --stack`), each component in the
//! order its project documents, and only what `kite install` applied:
//!
//! - CDI, then KubeVirt: their custom resource is deleted and waited on
//!   while their operator removes what it deployed (CRDs, webhooks,
//!   APIServices); if the operator is gone, nothing else would release
//!   the resource's finalizer, so Kite does. Then the webhook
//!   configurations and APIServices left calling their namespace, then
//!   what Kite applied (namespace, CRDs, RBAC), waited on until gone.
//! - Longhorn: its `deleting-confirmation-flag` set to `"true"` and its
//!   uninstall job run and waited on (as `uninstall/uninstall.yaml` of its
//!   release); if its manager is gone, the `longhorn.io` finalizers it
//!   would have released are released. Then its webhooks, then what Kite
//!   applied, `longhorn-system` last, waited on until gone.
//!
//! Before anything else, the webhook configurations and APIServices of the
//! components being removed whose Service is already gone are deleted:
//! while they stay, every namespace deletion stalls. One that calls a
//! Service of something else is reported and left alone.

use super::install::{Found, found};
use super::release::image_tag;
use super::{STACK_LABEL, Upstream, act};
use crate::operate::objects::{self, Kinds};
use crate::operate::plan::change::each as changes;
use crate::operate::plan::owner::describe;
use crate::operate::plan::{Action, Change, ChangeKind, Check, Owner, Release, Scope, Step, Wait};
use kite_core::api::StackName;
use kube::Client;
use serde_json::{Value, json};

/// The kinds Kite applies from a release that outlive its namespace.
const CLUSTER_KINDS: [(&str, &str); 4] = [
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
];

/// The plan of removing the stack: checks, the steps before Kite's own
/// (stale hooks), the steps after (each component), and the names of the
/// hooks it removes.
#[derive(Default)]
pub struct Removal {
    /// What was found.
    pub checks: Vec<Check>,
    /// Run before Kite is removed.
    pub before: Vec<Step>,
    /// Run after Kite is removed.
    pub after: Vec<Step>,
    /// `Kind name` of each stale hook the plan removes.
    pub removed_hooks: Vec<String>,
}

fn reference(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Value {
    let mut metadata = json!({ "name": name });
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata })
}

/// What the cluster holds of one component, as its removal needs it.
#[derive(Clone, Debug)]
struct Component {
    /// Which.
    upstream: Upstream,
    /// What of it is installed.
    found: Option<Found>,
    /// What Kite applied of it that is still there, when `kite install` installed it.
    remains: Option<Remains>,
}

/// What is left of a component Kite installed.
#[derive(Clone, Debug)]
struct Remains {
    /// KubeVirt's or CDI's custom resources (every one of their kind); none for Longhorn.
    resources: Vec<Value>,
    /// Longhorn's manager, when it is there; none for the others.
    manager: Option<Value>,
    /// Its namespace, when it is there.
    namespace: Option<Value>,
    /// Every object of the kinds that outlive the namespace ([`CLUSTER_KINDS`], in their order).
    cluster: Vec<Vec<Value>>,
}

/// What removing the stack depends on: each component (in the order
/// they are removed), and every webhook configuration and APIService.
#[derive(Clone, Debug)]
pub struct Observed {
    components: Vec<Component>,
    hooks: Vec<act::Hook>,
}

/// Reads what removing the components `kite install` installed depends on.
pub async fn observe(client: &Client) -> anyhow::Result<Observed> {
    let mut kinds = Kinds::default();
    let mut components = Vec::new();
    let mut all = Upstream::all();
    all.reverse();
    for upstream in all {
        let found = found(client, &mut kinds, upstream).await?;
        let remains = match &found {
            Some(found) if found.by_kite => Some(remains(client, &mut kinds, upstream).await?),
            _ => None,
        };
        components.push(Component { upstream, found, remains });
    }
    Ok(Observed { components, hooks: act::hooks(client).await? })
}

/// Reads what is left of `upstream`, which Kite installed.
async fn remains(client: &Client, kinds: &mut Kinds, upstream: Upstream) -> anyhow::Result<Remains> {
    let (resources, manager) = match upstream.name {
        StackName::Longhorn => {
            let (kind, name) = upstream.workload;
            let manager = reference("apps/v1", kind, Some(upstream.namespace), name);
            (Vec::new(), objects::live(client, kinds, &manager).await?)
        }
        _ => {
            let (api_version, kind) = custom_resource(upstream);
            (objects::all_of(client, kinds, api_version, kind).await?, None)
        }
    };
    let namespace = objects::live(client, kinds, &reference("v1", "Namespace", None, upstream.namespace)).await?;
    let mut cluster = Vec::new();
    for (api_version, kind) in CLUSTER_KINDS {
        cluster.push(objects::all_of(client, kinds, api_version, kind).await?);
    }
    Ok(Remains { resources, manager, namespace, cluster })
}

/// KubeVirt's or CDI's custom resource kind: (`apiVersion`, `kind`).
fn custom_resource(upstream: Upstream) -> (&'static str, &'static str) {
    match upstream.name {
        StackName::KubeVirt => ("kubevirt.io/v1", "KubeVirt"),
        _ => ("cdi.kubevirt.io/v1beta1", "CDI"),
    }
}

/// Plans removing the components `kite install` installed, as `observed`.
pub fn plan(observed: &Observed) -> Removal {
    let mut removal = Removal::default();
    let mut ours = Vec::new();
    for Component { upstream, found, remains } in &observed.components {
        let (upstream, title) = (*upstream, upstream.name.title());
        match (found, remains) {
            (None, _) => removal.checks.push(Check::ok(title, "not installed: nothing to remove")),
            (Some(found), Some(remains)) if found.by_kite => {
                removal.checks.push(Check::ok(
                    title,
                    format!(
                        "{} installed by kite install: removed",
                        found.version.as_deref().unwrap_or("a version whose operator is not running,")
                    ),
                ));
                ours.push(upstream.namespace.to_string());
                let steps = match upstream.name {
                    StackName::Longhorn => longhorn(upstream, remains.manager.as_ref()),
                    _ => operated(upstream, &remains.resources),
                };
                removal.after.extend(steps);
                removal.after.extend(remaining(upstream, remains));
            }
            (Some(_), _) => removal.checks.push(Check::warn(
                title,
                format!(
                    "installed, but not by kite install ({} has no {STACK_LABEL} label): left alone",
                    upstream.marker_crd
                ),
                format!("remove {title} as its project documents"),
            )),
        }
    }
    hooks(&mut removal, &observed.hooks, &ours);
    removal
}

/// The stale hooks of the components being removed (`ours`), deleted first; the others reported.
fn hooks(removal: &mut Removal, hooks: &[act::Hook], ours: &[String]) {
    let stale: Vec<&act::Hook> = act::of_namespaces(hooks, ours, true);
    for hook in hooks.iter().filter(|h| !h.service_exists && !stale.contains(h)) {
        removal.checks.push(Check::warn(
            format!("{} {}", hook.kind, hook.name),
            format!("{}: not of a component being removed, so left alone; while it stays, what it covers cannot be changed or cleaned", hook.describe()),
            format!("if its component was removed: kubectl delete {} {}", hook.kind.to_lowercase(), hook.name),
        ));
    }
    if !stale.is_empty() {
        removal.removed_hooks = stale.iter().map(|h| format!("{} {}", h.kind, h.name)).collect();
        removal.before.push(Step {
            title: "delete the stack's webhook configurations and APIServices whose Service is gone: they stall every namespace's deletion".into(),
            changes: stale.iter().map(|h| Change { change: ChangeKind::Delete, object: h.describe() }).collect(),
            action: Action::RemoveHooks { namespaces: ours.to_vec(), stale_only: true },
            wait: None,
        });
    }
}

/// KubeVirt's or CDI's custom resources, deleted and waited on while the
/// operator removes what it deployed; released when the operator is gone.
fn operated(upstream: Upstream, live: &[Value]) -> Vec<Step> {
    let (api_version, kind) = custom_resource(upstream);
    let resources: Vec<Value> = live
        .iter()
        .filter(|o| Owner::Stack(upstream.name).owns(o))
        .map(|o| {
            reference(
                api_version,
                kind,
                o["metadata"]["namespace"].as_str(),
                o["metadata"]["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let title = upstream.name.title();
    let (workload_kind, workload) = upstream.workload;
    let operator = reference("apps/v1", workload_kind, Some(upstream.namespace), workload);
    vec![
        Step {
            title: format!("delete {title}'s custom resource: {workload} removes what it deployed"),
            changes: changes(&resources, ChangeKind::Delete),
            action: Action::Delete { objects: resources.clone(), orphan: false, owner: Owner::Stack(upstream.name) },
            wait: None,
        },
        Step {
            title: format!(
                "wait for {workload} to finish (if it is not running, its finalizer {} is released: nothing else would)",
                upstream.finalizer
            ),
            changes: Vec::new(),
            action: Action::Release(Box::new(Release {
                scope: Scope::Objects(resources.clone()),
                finalizer: upstream.finalizer.into(),
                operator,
            })),
            wait: Some(Wait::Gone { objects: resources }),
        },
    ]
}

/// Longhorn's own uninstall: the confirmation flag, then its uninstall job
/// (only while its manager runs), then the finalizers a gone manager leaves.
fn longhorn(upstream: Upstream, manager: Option<&Value>) -> Vec<Step> {
    let namespace = upstream.namespace;
    let (kind, name) = upstream.workload;
    let manager_ref = reference("apps/v1", kind, Some(namespace), name);
    let running = manager.is_some_and(|m| m["metadata"]["deletionTimestamp"].is_null() && act::has_ready_pods(m));
    let mut steps = Vec::new();
    if let Some(manager) = manager.filter(|_| running) {
        let flag = json!({ "apiVersion": "longhorn.io/v1beta2", "kind": "Setting",
                           "metadata": { "name": "deleting-confirmation-flag", "namespace": namespace }, "value": "true" });
        steps.push(Step {
            title: "confirm Longhorn's uninstall: its setting deleting-confirmation-flag to \"true\"".into(),
            changes: vec![Change { change: ChangeKind::Update, object: describe(&flag) }],
            action: Action::Apply(vec![flag]),
            wait: None,
        });
        let image = manager["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap_or_default();
        let job = uninstall_job(namespace, image);
        let version = image_tag(manager).unwrap_or_default();
        steps.push(Step {
            title: format!("run Longhorn {version}'s uninstall job: it deletes Longhorn's volumes and objects, its webhooks, its StorageClass and its manager"),
            changes: changes(&job, ChangeKind::Create),
            action: Action::Apply(job),
            wait: Some(Wait::JobComplete { namespace: namespace.into(), name: UNINSTALL.into() }),
        });
    }
    steps.push(Step {
        title: if running {
            "release what Longhorn's manager left held (none, once its uninstall job has run)".into()
        } else {
            format!("Longhorn's manager is not running, so its uninstall job cannot run: release the {} finalizers it would have released", upstream.finalizer)
        },
        changes: Vec::new(),
        action: Action::Release(Box::new(Release {
            scope: Scope::Group { group: "longhorn.io".into(), namespace: namespace.into() },
            finalizer: upstream.finalizer.into(),
            operator: manager_ref,
        })),
        wait: None,
    });
    steps
}

/// The name of Longhorn's uninstall job and of its account and roles' prefix.
const UNINSTALL: &str = "longhorn-uninstall";

/// Longhorn's uninstall job with its account and roles, as `uninstall/uninstall.yaml` of its release, running `image`.
fn uninstall_job(namespace: &str, image: &str) -> Vec<Value> {
    let account = format!("{UNINSTALL}-service-account");
    let labels = json!({ STACK_LABEL: StackName::Longhorn.id() });
    vec![
        json!({ "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": { "name": account, "namespace": namespace, "labels": labels } }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": { "name": format!("{UNINSTALL}-role"), "labels": labels },
                "rules": [
                    { "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["*"] },
                    { "apiGroups": [""], "resources": ["pods", "persistentvolumes", "persistentvolumeclaims", "nodes", "configmaps", "secrets", "services", "endpoints"], "verbs": ["*"] },
                    { "apiGroups": ["apps"], "resources": ["daemonsets", "statefulsets", "deployments"], "verbs": ["*"] },
                    { "apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["*"] },
                    { "apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["*"] },
                    { "apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["watch", "list"] },
                    { "apiGroups": ["storage.k8s.io"], "resources": ["csidrivers", "storageclasses", "volumeattachments"], "verbs": ["*"] },
                    { "apiGroups": ["longhorn.io"], "resources": ["*"], "verbs": ["*"] },
                    { "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"] },
                    { "apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"], "verbs": ["get", "delete"] },
                ] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": format!("{UNINSTALL}-bind"), "labels": labels },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{UNINSTALL}-role") },
                "subjects": [{ "kind": "ServiceAccount", "name": account, "namespace": namespace }] }),
        json!({ "apiVersion": "batch/v1", "kind": "Job",
                "metadata": { "name": UNINSTALL, "namespace": namespace, "labels": labels },
                "spec": { "activeDeadlineSeconds": 900, "backoffLimit": 1,
                          "template": { "metadata": { "name": UNINSTALL },
                                        "spec": { "restartPolicy": "Never", "serviceAccountName": account,
                                                  "containers": [{ "name": UNINSTALL, "image": image, "imagePullPolicy": "IfNotPresent",
                                                                   "command": ["longhorn-manager", "uninstall", "--force"],
                                                                   "env": [{ "name": "LONGHORN_NAMESPACE", "value": namespace }] }] } } } }),
    ]
}

/// The component's webhooks and APIServices still calling its namespace,
/// then what Kite applied for it that outlives the namespace, and the
/// namespace, waited on until gone.
fn remaining(upstream: Upstream, remains: &Remains) -> Vec<Step> {
    let title = upstream.name.title();
    let owner = Owner::Stack(upstream.name);
    let namespace = reference("v1", "Namespace", None, upstream.namespace);
    let mut doomed = Vec::new();
    if remains.namespace.as_ref().is_some_and(|n| owner.owns(n)) {
        doomed.push(namespace);
    }
    for ((api_version, kind), live) in CLUSTER_KINDS.iter().zip(&remains.cluster) {
        for object in live {
            if owner.owns(object) {
                doomed.push(reference(
                    api_version,
                    kind,
                    None,
                    object["metadata"]["name"].as_str().unwrap_or_default(),
                ));
            }
        }
    }
    // Longhorn's uninstall role is made by this plan's own step: not there yet when planning.
    if upstream.name == StackName::Longhorn {
        for (kind, name) in
            [("ClusterRoleBinding", format!("{UNINSTALL}-bind")), ("ClusterRole", format!("{UNINSTALL}-role"))]
        {
            let object = reference("rbac.authorization.k8s.io/v1", kind, None, &name);
            if !doomed.contains(&object) {
                doomed.push(object);
            }
        }
    }
    vec![
        Step {
            title: format!(
                "delete the webhook configurations and APIServices still calling {title}'s namespace {}",
                upstream.namespace
            ),
            changes: Vec::new(),
            action: Action::RemoveHooks { namespaces: vec![upstream.namespace.into()], stale_only: false },
            wait: None,
        },
        Step {
            title: format!(
                "delete what kite install applied for {title} (its namespace, CRDs and roles) and wait until it is gone"
            ),
            changes: changes(&doomed, ChangeKind::Delete),
            action: Action::Delete { objects: doomed.clone(), orphan: false, owner },
            wait: Some(Wait::Gone { objects: doomed }),
        },
    ]
}
