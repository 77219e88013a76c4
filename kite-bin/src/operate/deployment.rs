//! Kite's own objects as a plan's steps, shared by `kite install` and
//! `kite upgrade`: observed first (each desired object beside what the
//! cluster holds of it), then planned: the CRDs (then `Established`), the
//! deployment (then `Available`, every replica updated), the platform when
//! one is given (then Ready), and the record of what was installed.

use super::objects::{self, Kinds};
use super::plan::change::compare;
use super::plan::{Action, Change, Owner, Step, Wait};
use super::stack::release::Release;
use crate::manifests::ManifestArgs;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kite_core::api::{InstallOperation, Installation, StackComponent};
use kube::Client;
use serde_json::Value;

/// Kite's objects as this version makes them, each beside what the cluster holds of it.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The CRDs, and the live object of each.
    crds: (Vec<Value>, Vec<Option<Value>>),
    /// The rest of the deployment, and the live object of each.
    rest: (Vec<Value>, Vec<Option<Value>>),
    /// The platform to apply, when one is given (else none), and its live object.
    platform: (Vec<Value>, Vec<Option<Value>>),
}

/// Reads what the cluster holds of the objects `options` make, and of `platform`.
pub async fn observe(client: &Client, options: &ManifestArgs, platform: Option<Value>) -> anyhow::Result<Observed> {
    let all = crate::manifests::objects(options)?;
    let (crds, rest): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|o| o["kind"] == "CustomResourceDefinition");
    let mut kinds = Kinds::default();
    let crds_live = objects::each_live(client, &mut kinds, &crds).await?;
    let rest_live = objects::each_live(client, &mut kinds, &rest).await?;
    let platform: Vec<Value> = platform.into_iter().collect();
    let platform_live = objects::each_live(client, &mut kinds, &platform).await?;
    Ok(Observed { crds: (crds, crds_live), rest: (rest, rest_live), platform: (platform, platform_live) })
}

/// What applying `objects` beside their `live` objects changes, and the ones that are not Kite's.
fn changes((objects, live): &(Vec<Value>, Vec<Option<Value>>), theirs: &mut Vec<String>) -> Vec<Change> {
    let (changes, more) = compare(objects, live, Owner::Kite);
    theirs.extend(more);
    changes
}

/// The steps that make the cluster hold this version of Kite, as
/// [`observe`] found it: the CRDs, the deployment, the platform, and the
/// record of `operation` with the stack `releases` applied before. Also
/// the objects of Kite's names that are not Kite's.
pub fn steps(
    observed: &Observed,
    options: &ManifestArgs,
    operation: InstallOperation,
    releases: &[Release],
) -> (Vec<Step>, Vec<String>) {
    let namespaces = options.namespaces();
    let mut theirs = Vec::new();
    let crd_changes = changes(&observed.crds, &mut theirs);
    let rest_changes = changes(&observed.rest, &mut theirs);
    let platform_changes = changes(&observed.platform, &mut theirs);
    let (crds, rest) = (&observed.crds.0, &observed.rest.0);
    let crd_names = crds.iter().filter_map(|c| c["metadata"]["name"].as_str().map(str::to_string)).collect();
    let deployments = rest
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let platform = observed.platform.0.first().cloned();
    let steps = vec![
        Step {
            title: "apply Kite's CustomResourceDefinitions".into(),
            changes: crd_changes,
            action: Action::Apply(crds.clone()),
            wait: Some(Wait::CrdsEstablished { names: crd_names }),
        },
        Step {
            title: format!("apply Kite's deployment in namespace {} (image {})", namespaces.platform, options.image),
            changes: rest_changes,
            action: Action::Apply(rest.clone()),
            wait: Some(Wait::DeploymentsAvailable { namespace: namespaces.platform.clone(), names: deployments }),
        },
        Step {
            title: if platform.is_some() {
                "apply the KitePlatform".into()
            } else {
                "keep the KitePlatform as it is".into()
            },
            changes: platform_changes,
            action: platform.map_or(Action::Nothing, |p| Action::Apply(vec![p])),
            wait: Some(Wait::PlatformReady),
        },
        record(options, operation, releases),
    ];
    (steps, theirs)
}

/// The step that records `operation` of this version, with the stack `releases` applied before.
fn record(options: &ManifestArgs, operation: InstallOperation, releases: &[Release]) -> Step {
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
    Step {
        title: format!("record Kite {} as {done} in the KitePlatform's status", installation.kite_version),
        changes: Vec::new(),
        action: Action::Record {
            installation: Box::new(installation),
            longhorn_namespace: options.namespaces().longhorn,
        },
        wait: None,
    }
}
