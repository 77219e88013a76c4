//! The tenant reconciler: gives each `KiteUser` a namespace guarded by
//! NetworkPolicies, and the quota of their access level.
//!
//! - The namespace `spec.namespace` is created and labelled as Kite's. An
//!   existing namespace without that label is refused (status `Failed`,
//!   reason `NamespaceNotManaged`), never adopted. A namespace still
//!   terminating from an earlier life is waited for.
//! - The NetworkPolicies of [`desired`], each owned by the user; machines'
//!   egress excludes the nodes' and the API server's addresses
//!   ([`host_addresses`]), and a change of those reconciles every user.
//! - A ResourceQuota and LimitRange `kite-tenant-quota` when
//!   `KitePlatform.spec.tenantQuotas` has an entry for the user's level;
//!   removed (if Kite's) when it has none.
//! - Status: `NamespaceReady`, the phase, `observedNamespace`.
//! - Deletion: the finalizer `hy3ons.github.io/kite-user-cleanup` deletes
//!   the namespace, if Kite's and no other user refers to it. Objects
//!   written before `namespace` became immutable may still name another
//!   namespace than the one observed; the old one is released the same way.

pub mod desired;
pub mod host_addresses;

use crate::Error;
use crate::api::{
    Condition, ConditionStatus, KitePlatform, KitePlatformSpec, KiteUser, KiteUserStatus, PLATFORM_NAME, UserPhase,
    condition_types, set_condition,
};
use crate::labels::{self, USER_CLEANUP_FINALIZER};
use crate::reconcile::apply::{self, Removal};
use crate::reconcile::owners::cluster_owners;
use crate::reconcile::{Context, RESYNC, apply_status, platform_changes};
use crate::required::Required;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::ResourceExt;
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::finalizer::Event as Finalized;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The reconciler's name in metrics and logs.
pub const NAME: &str = "tenant";

/// The field manager of what this reconciler applies.
pub const FIELD_MANAGER: &str = "kite-controller-tenant";

/// The field manager of the users' status.
pub const STATUS_MANAGER: &str = "kite-controller-tenant-status";

/// The tenant reconciler's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The platform namespace: where the SSH gateway runs.
    pub platform_namespace: String,
}

/// One reconcile pass of a user.
pub async fn reconcile(user: Arc<KiteUser>, ctx: Arc<Context<Config>>) -> Result<Action, Error> {
    let api: Api<KiteUser> = Api::all(ctx.client.clone());
    ctx.finalized(NAME, &api, USER_CLEANUP_FINALIZER, user, |event| async {
        match event {
            Finalized::Apply(user) => converge(&user, &ctx).await,
            Finalized::Cleanup(user) => clean_up(&user, &ctx).await,
        }
    })
    .await
}

/// The error policy: waiting is retried in two seconds, failures with backoff.
pub fn error_policy(user: Arc<KiteUser>, error: &Error, ctx: Arc<Context<Config>>) -> Action {
    if error.is_waiting() {
        return Action::requeue(Duration::from_secs(2));
    }
    ctx.retry_after_error(NAME, &*user, error)
}

/// Runs the reconciler on every `KiteUser` until `shutdown` completes. The
/// policies, quotas and namespaces are watched, so a deleted or edited one
/// is restored at once; a change of the `KitePlatform` reconciles every user.
pub async fn run(ctx: Arc<Context<Config>>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let client = ctx.client.clone();
    let ours = watcher::Config::default().labels(&labels::managed_selector());
    let controller = Controller::new(Api::<KiteUser>::all(client.clone()), watcher::Config::default());
    let users = controller.store();
    controller
        // Not `owns`: it would name each user a second time, by the child's namespace (see `owners`).
        .watches(Api::<NetworkPolicy>::all(client.clone()), ours.clone(), |p| cluster_owners::<KiteUser, _>(&p))
        .watches(Api::<ResourceQuota>::all(client.clone()), ours.clone(), |q| cluster_owners::<KiteUser, _>(&q))
        .watches(Api::<LimitRange>::all(client.clone()), ours.clone(), |l| cluster_owners::<KiteUser, _>(&l))
        .watches(Api::<Namespace>::all(client.clone()), ours, move |namespace: Namespace| {
            let name = namespace.name_any();
            users
                .state()
                .into_iter()
                .filter(|user| user.spec.namespace == name)
                .map(|user| ObjectRef::from_obj(&*user))
                .collect::<Vec<_>>()
        })
        .reconcile_all_on(futures::stream::select(platform_changes(client.clone()), host_addresses::changes(client)))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// The desired-state path.
async fn converge(user: &KiteUser, ctx: &Context<Config>) -> Result<Action, Error> {
    let client = &ctx.client;
    let wanted = &user.spec.namespace;
    if let Some(old) = user.status.as_ref().and_then(|s| s.observed_namespace.as_deref())
        && old != wanted
    {
        release_namespace(user, old, ctx).await?;
    }
    let live = Api::<Namespace>::all(client.clone())
        .get_opt(wanted)
        .await
        .map_err(Error::kube(format!("reading the namespace {wanted}")))?;
    if let Some(live) = &live {
        if !labels::is_managed_by_controller(live.metadata.labels.as_ref()) {
            let message = format!(
                "The namespace \"{wanted}\" already exists and was not made by Kite, so it is not used. An administrator must choose another namespace for this user."
            );
            write_status(user, ctx, UserPhase::Failed, "NamespaceNotManaged", &message, None).await?;
            return Ok(Action::requeue(RESYNC));
        }
        if live.metadata.deletion_timestamp.is_some() {
            let message = "Waiting for the previous namespace of this name to finish deleting.";
            write_status(user, ctx, UserPhase::Pending, "NamespaceTerminating", message, None).await?;
            return Ok(Action::requeue(Duration::from_secs(2)));
        }
    }
    let platform = Api::<KitePlatform>::all(client.clone())
        .get_opt(PLATFORM_NAME)
        .await
        .map_err(Error::kube("reading the KitePlatform"))?
        .map(|p| p.spec)
        .unwrap_or_default();
    apply_all(user, ctx, &platform).await?;
    let message = "The user's namespace and its network policies are ready.";
    write_status(user, ctx, UserPhase::Ready, "Reconciled", message, Some(wanted)).await?;
    Ok(Action::requeue(RESYNC))
}

async fn apply_all(user: &KiteUser, ctx: &Context<Config>, platform: &KitePlatformSpec) -> Result<(), Error> {
    let client = &ctx.client;
    let namespace = apply::to_json(&desired::namespace(user)?, "the namespace")?;
    apply::ensure(client, FIELD_MANAGER, &ApiResource::erase::<Namespace>(&()), &namespace).await?;
    let policy = ApiResource::erase::<NetworkPolicy>(&());
    let hosts =
        if platform.tenant_network.block_host_addresses { host_addresses::observe(client).await? } else { Vec::new() };
    for desired in desired::network_policies(user, platform, &ctx.config.platform_namespace, &hosts)? {
        apply::ensure(client, FIELD_MANAGER, &policy, &apply::to_json(&desired, "a NetworkPolicy")?).await?;
    }
    let quota_resource = ApiResource::erase::<ResourceQuota>(&());
    let limits_resource = ApiResource::erase::<LimitRange>(&());
    let ns = Some(user.spec.namespace.as_str());
    match desired::quota_of(user, platform) {
        Some(quota) => {
            let object = apply::to_json(&desired::resource_quota(user, quota)?, "the ResourceQuota")?;
            apply::ensure(client, FIELD_MANAGER, &quota_resource, &object).await?;
            match desired::limit_range(user, quota)? {
                Some(limits) => {
                    let object = apply::to_json(&limits, "the LimitRange")?;
                    apply::ensure(client, FIELD_MANAGER, &limits_resource, &object).await?;
                }
                None => {
                    apply::remove(client, &limits_resource, ns, desired::QUOTA_NAME).await?;
                }
            }
        }
        None => {
            apply::remove(client, &quota_resource, ns, desired::QUOTA_NAME).await?;
            apply::remove(client, &limits_resource, ns, desired::QUOTA_NAME).await?;
        }
    }
    Ok(())
}

/// Writes the status when it changed, with an Event when the phase did.
async fn write_status(
    user: &KiteUser,
    ctx: &Context<Config>,
    phase: UserPhase,
    reason: &'static str,
    message: &str,
    observed_namespace: Option<&str>,
) -> Result<(), Error> {
    let previous = user.status.as_ref();
    let mut conditions = previous.map(|s| s.conditions.clone()).unwrap_or_default();
    let ready = if phase == UserPhase::Ready { ConditionStatus::True } else { ConditionStatus::False };
    set_condition(
        &mut conditions,
        Condition {
            type_: condition_types::NAMESPACE_READY.into(),
            status: ready,
            reason: Some(reason.into()),
            message: Some(message.into()),
            observed_generation: user.metadata.generation,
            last_transition_time: Some(crate::reconcile::now()),
        },
    );
    let next = KiteUserStatus {
        phase: Some(phase),
        observed_generation: user.metadata.generation,
        observed_namespace: observed_namespace
            .map(str::to_string)
            .or_else(|| previous.and_then(|s| s.observed_namespace.clone())),
        message: Some(message.into()),
        conditions,
    };
    if previous == Some(&next) {
        return Ok(());
    }
    apply_status(&Api::<KiteUser>::all(ctx.client.clone()), user.required_name()?, STATUS_MANAGER, &next).await?;
    if previous.and_then(|s| s.phase) != Some(phase) {
        let type_ = if phase == UserPhase::Failed { EventType::Warning } else { EventType::Normal };
        ctx.event(user, type_, reason, "Reconcile", message.to_string()).await;
    }
    Ok(())
}

/// Deletes `namespace` if Kite made it and no other user refers to it.
async fn release_namespace(user: &KiteUser, namespace: &str, ctx: &Context<Config>) -> Result<(), Error> {
    let me = user.required_name()?;
    let others = Api::<KiteUser>::all(ctx.client.clone())
        .list(&Default::default())
        .await
        .map_err(Error::kube("listing KiteUsers"))?;
    let shared = others.items.iter().any(|other| other.name_any() != me && other.spec.namespace == namespace);
    if shared {
        tracing::info!(user = me, namespace, "another user refers to the namespace; it is kept");
        return Ok(());
    }
    match apply::remove(&ctx.client, &ApiResource::erase::<Namespace>(&()), None, namespace).await? {
        Removal::Gone | Removal::NotOurs => Ok(()),
        Removal::Deleting => {
            let note = format!("Deleting the namespace {namespace} that belonged to this user.");
            ctx.event(user, EventType::Normal, "NamespaceReleased", "DeleteNamespace", note).await;
            Ok(())
        }
    }
}

/// The deletion path: release the namespace (its machines and policies go with it).
async fn clean_up(user: &KiteUser, ctx: &Context<Config>) -> Result<Action, Error> {
    release_namespace(user, &user.spec.namespace, ctx).await?;
    Ok(Action::await_change())
}
