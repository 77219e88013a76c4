//! Installing and upgrading the stack from its release files: what is
//! there already (and whether Kite put it there), whether going to the new
//! version is allowed, and the steps that apply each component and wait on
//! its own signal.

use super::release::{Release, image_tag};
use super::{STACK_LABEL, Upstream};
use crate::operate::objects::{self, Kinds};
use crate::operate::plan::change::compare;
use crate::operate::plan::owner::reference;
use crate::operate::plan::{Action, Check, Owner, Step, Wait};
use kube::Client;
use serde_json::{Value, json};

/// What `kite install` or `kite upgrade` may do to a component that is already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Install: a component Kite installed is re-applied at the same version only.
    Install,
    /// Upgrade: a newer version is applied; a downgrade or a skipped Longhorn minor version only when forced.
    Upgrade {
        /// `--force`.
        force: bool,
    },
}

/// A component as found in the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Whether `kite install` applied it (its CRD carries [`STACK_LABEL`]).
    pub by_kite: bool,
    /// The version its operator runs, when it runs.
    pub version: Option<String>,
}

/// What of `upstream` is installed: `None` when its marker CRD is not there.
pub async fn found(client: &Client, kinds: &mut Kinds, upstream: Upstream) -> anyhow::Result<Option<Found>> {
    let crd = json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                      "metadata": { "name": upstream.marker_crd } });
    let Some(crd) = objects::live(client, kinds, &crd).await? else { return Ok(None) };
    let (kind, name) = upstream.workload;
    let workload =
        json!({ "apiVersion": "apps/v1", "kind": kind, "metadata": { "name": name, "namespace": upstream.namespace } });
    let version = objects::live(client, kinds, &workload).await?.as_ref().and_then(image_tag);
    Ok(Some(Found { by_kite: Owner::Stack(upstream.name).owns(&crd), version }))
}

fn parse(version: &str) -> Option<semver::Version> {
    semver::Version::parse(version.trim_start_matches('v')).ok()
}

/// Whether moving `release`'s component from what is `found` is allowed in `mode`.
pub fn check(release: &Release, found: Option<&Found>, mode: Mode) -> Check {
    let title = release.upstream.name.title();
    let name = title.to_string();
    let new = &release.version;
    let Some(found) = found else {
        return Check::ok(name, format!("not installed: {title} {new} will be"));
    };
    if !found.by_kite {
        return Check::fail(
            name,
            format!(
                "installed ({} exists) but not by kite install: Kite never takes it over",
                release.upstream.marker_crd
            ),
            match mode {
                Mode::Install => "use it as it is: kite install --skip-stack".to_string(),
                Mode::Upgrade { .. } => {
                    format!("upgrade {title} as its project documents, and kite upgrade without --from")
                }
            },
        );
    }
    let old = found.version.clone().unwrap_or_else(|| "an unknown version (its operator is not running)".into());
    if old == *new {
        return Check::ok(
            name,
            format!("{title} {new} is installed by kite install: applied again, nothing should change"),
        );
    }
    let force = match mode {
        Mode::Install => {
            return Check::fail(
                name,
                format!("{title} {old} is installed by kite install; {new} would be an upgrade"),
                "kite upgrade --from DIR",
            );
        }
        Mode::Upgrade { force } => force,
    };
    let (Some(from), Some(to)) = (found.version.as_deref().and_then(parse), parse(new)) else {
        return Check::fail(
            name,
            format!("cannot compare {old} with {new}"),
            "start its operator, or pass release files with a tagged image",
        );
    };
    let refused = if to < from {
        Some(format!("{title} {old} → {new} is a downgrade, which its operator does not support"))
    } else if release.upstream.name == kite_core::api::StackName::Longhorn
        && (to.major != from.major || to.minor > from.minor + 1)
    {
        Some(format!(
            "Longhorn {old} → {new} skips a minor version: Longhorn upgrades one minor version at a time (to v{}.{}.x first)",
            from.major,
            from.minor + 1
        ))
    } else {
        None
    };
    match refused {
        None => Check::ok(name, format!("{title} {old} → {new}")),
        Some(why) if force => Check::warn(name, format!("{why}; forced"), "nothing: --force asked for it"),
        Some(why) => Check::fail(name, why, "use a release this step supports, or pass --force if you are sure"),
    }
}

/// `object` with [`STACK_LABEL`] set to `upstream`'s id.
fn labelled(mut object: Value, upstream: Upstream) -> Value {
    if !object["metadata"]["labels"].is_object() {
        object["metadata"]["labels"] = json!({});
    }
    object["metadata"]["labels"][STACK_LABEL] = json!(upstream.name.id());
    object
}

/// `release`'s objects as Kite applies them, labelled: its CRDs, the rest
/// of its operator's file, and its custom resources (with
/// `uninstallStrategy: BlockUninstallIfWorkloadsExist` unless the file sets
/// one) with the file they come from.
struct Applied {
    crds: Vec<Value>,
    rest: Vec<Value>,
    resources: Option<(&'static str, Vec<Value>)>,
}

impl Applied {
    fn of(release: &Release) -> Self {
        let upstream = release.upstream;
        let operator = release.files[0].objects.iter().cloned().map(|o| labelled(o, upstream));
        let (crds, rest): (Vec<Value>, Vec<Value>) = operator.partition(|o| o["kind"] == "CustomResourceDefinition");
        let resources = match (upstream.resource_file, release.files.get(1)) {
            (Some(file), Some(loaded)) => {
                let objects = loaded.objects.iter().cloned().map(|mut o| {
                    if o["spec"]["uninstallStrategy"].is_null() {
                        o["spec"]["uninstallStrategy"] = json!("BlockUninstallIfWorkloadsExist");
                    }
                    labelled(o, upstream)
                });
                Some((file, objects.collect()))
            }
            _ => None,
        };
        Self { crds, rest, resources }
    }
}

/// One release's component as found in the cluster, and the live object of
/// each object Kite would apply from it ([`Applied`]'s, in its order).
#[derive(Clone, Debug)]
pub struct Observed {
    found: Option<Found>,
    crds: Vec<Option<Value>>,
    rest: Vec<Option<Value>>,
    resources: Vec<Option<Value>>,
}

/// Reads what the cluster holds of each of `releases`.
pub async fn observe(client: &Client, releases: &[Release]) -> anyhow::Result<Vec<Observed>> {
    let mut kinds = Kinds::default();
    let mut observed = Vec::new();
    for release in releases {
        let found = found(client, &mut kinds, release.upstream).await?;
        let applied = Applied::of(release);
        let crds = objects::each_live(client, &mut kinds, &applied.crds).await?;
        let rest = objects::each_live(client, &mut kinds, &applied.rest).await?;
        let resources = match &applied.resources {
            Some((_, resources)) => objects::each_live(client, &mut kinds, resources).await?,
            None => Vec::new(),
        };
        observed.push(Observed { found, crds, rest, resources });
    }
    Ok(observed)
}

/// The steps that apply `release`, as `observed`: its CRDs (then
/// `Established`), its operator (then its workload ready), its custom
/// resource (then `Available` at the version). Also the objects of its
/// names that are not what Kite applied.
fn steps(release: &Release, observed: &Observed) -> (Vec<Step>, Vec<String>) {
    let upstream = release.upstream;
    let owner = Owner::Stack(upstream.name);
    let title = format!("{} {}", upstream.name.title(), release.version);
    let Applied { crds, rest, resources } = Applied::of(release);
    let mut theirs = Vec::new();
    let mut steps = Vec::new();
    let (changes, more) = compare(&crds, &observed.crds, owner);
    theirs.extend(more);
    steps.push(Step {
        title: format!("apply {title}'s CustomResourceDefinitions ({})", upstream.operator_file),
        changes,
        wait: Some(Wait::CrdsEstablished {
            names: crds.iter().filter_map(|c| c["metadata"]["name"].as_str().map(str::to_string)).collect(),
        }),
        action: Action::Apply(crds),
    });
    let (changes, more) = compare(&rest, &observed.rest, owner);
    theirs.extend(more);
    let (kind, name) = upstream.workload;
    let wait = if kind == "Deployment" {
        Wait::DeploymentsAvailable { namespace: upstream.namespace.into(), names: vec![name.into()] }
    } else {
        Wait::StackReady { name: upstream.name, version: release.version.clone(), resource: None }
    };
    steps.push(Step {
        title: format!("apply {title} ({})", upstream.operator_file),
        changes,
        action: Action::Apply(rest),
        wait: Some(wait),
    });
    if let Some((file, resources)) = resources {
        let (changes, more) = compare(&resources, &observed.resources, owner);
        theirs.extend(more);
        let resource = resources.first().map(reference);
        steps.push(Step {
            title: format!(
                "apply {}'s custom resource ({file}; uninstall blocked while workloads exist)",
                upstream.name.title()
            ),
            changes,
            action: Action::Apply(resources),
            wait: Some(Wait::StackReady { name: upstream.name, version: release.version.clone(), resource }),
        });
    }
    (steps, theirs)
}

/// The checks and steps for `releases` in `mode`, as `observed` (one per
/// release): each component checked against what is there, then applied
/// in order (Longhorn, KubeVirt, CDI).
pub fn plan(releases: &[Release], observed: &[Observed], mode: Mode) -> (Vec<Check>, Vec<Step>) {
    let mut checks = Vec::new();
    let mut steps = Vec::new();
    for (release, observed) in releases.iter().zip(observed) {
        let found = observed.found.as_ref();
        checks.push(check(release, found, mode));
        let (more, theirs) = self::steps(release, observed);
        steps.extend(more);
        // A component someone else installed has failed already, once: its objects are not listed again.
        let someone_elses = found.is_some_and(|f| !f.by_kite);
        for object in theirs.into_iter().filter(|_| !someone_elses) {
            checks.push(Check::fail(
                object.clone(),
                format!("exists and was not applied by kite install for {}", release.upstream.name.title()),
                format!("remove it, or install {} yourself and pass --skip-stack", release.upstream.name.title()),
            ));
        }
    }
    (checks, steps)
}
