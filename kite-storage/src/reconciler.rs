//! The storage reconciler: carries out the storage part of the `KitePlatform`
//! (the StorageClass, golden images and their clone RBAC) and reports what
//! it observed, Longhorn's readiness included, in the platform's status.

use crate::{golden_images, longhorn, storage_class};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::api::storage::v1::StorageClass;
use kite_core::Error;
use kite_core::api::{Condition, ConditionStatus, KitePlatform, KitePlatformStatus, condition_types, set_condition};
use kite_core::key::object_key;
use kite_core::labels::{self, COMPONENT};
use kite_core::reconcile::apply::{self, Removal};
use kite_core::reconcile::owners::cluster_owners;
use kite_core::reconcile::{Context, RESYNC, apply_status, resources};
use kite_core::required::Required;
use kite_core::runner::Shared;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::ApiResource;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The reconciler's name in metrics and logs.
pub const NAME: &str = "storage";

/// The field manager of the StorageClass, golden images and RBAC.
pub const FIELD_MANAGER: &str = "kite-controller-storage";

/// The field manager of the storage part of the platform's status.
pub const STATUS_MANAGER: &str = "kite-controller-storage-status";

/// The storage reconciler's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The ServiceAccount that creates machines' DataVolumes (the
    /// controller's), `(namespace, name)`: it is allowed to clone golden images.
    pub cloner: (String, String),
    /// Where Longhorn runs: its nodes are watched there, so a node that
    /// becomes ready is seen at once, without polling.
    pub longhorn_namespace: String,
}

/// One observation for the status: a condition's status, reason and message.
type Observation = (ConditionStatus, &'static str, String);

fn yes(reason: &'static str, message: impl Into<String>) -> Observation {
    (ConditionStatus::True, reason, message.into())
}

fn no(reason: &'static str, message: impl Into<String>) -> Observation {
    (ConditionStatus::False, reason, message.into())
}

/// One reconcile pass of the platform's storage.
pub async fn reconcile(platform: Arc<KitePlatform>, ctx: Arc<Context<Config>>) -> Result<Action, Error> {
    let _measure = ctx.metrics.measure(NAME);
    let (class, drift) = storage_class_step(&platform, &ctx).await?;
    let longhorn = longhorn_step(&platform, &ctx).await?;
    let namespace = &platform.spec.golden_image_namespace;
    let namespace_exists =
        apply::read(&ctx.client, &ApiResource::erase::<Namespace>(&()), None, namespace).await?.is_some();
    let images = match namespace_exists {
        true => golden_images_step(&platform, &ctx).await?,
        false => Vec::new(),
    };
    let all_images_ready = namespace_exists && images.iter().all(|image| image.ready);
    let images_observation = match (namespace_exists, platform.spec.golden_images.is_empty(), all_images_ready) {
        (false, _, _) => no(
            "NamespaceMissing",
            format!("The golden-image namespace {namespace} does not exist, so no image can be imported; create it."),
        ),
        (true, true, _) => no("NoGoldenImages", "No golden images are configured; users cannot create machines."),
        (true, false, true) => yes("Imported", "Every golden image is imported."),
        (true, false, false) => {
            no("Importing", "Some golden images are still being imported or failed; see goldenImages.")
        }
    };
    // Longhorn's nodes and the golden images' DataVolumes are watched: what
    // changes there brings the platform back. Only a missing namespace,
    // which nothing here watches, is looked at again.
    let waiting = !namespace_exists;
    write_status(
        &platform,
        &ctx,
        [
            (condition_types::STORAGE_CLASS_READY, class),
            (condition_types::STORAGE_CLASS_DRIFTED, drift),
            (condition_types::LONGHORN_READY, longhorn),
            (condition_types::GOLDEN_IMAGES_READY, images_observation),
        ],
        images,
    )
    .await?;
    ctx.backoff.succeeded(&object_key(&*platform));
    Ok(Action::requeue(if waiting { Duration::from_secs(10) } else { RESYNC }))
}

/// The error policy: logged, counted, retried with backoff.
pub fn error_policy(platform: Arc<KitePlatform>, error: &Error, ctx: Arc<Context<Config>>) -> Action {
    ctx.retry_after_error(NAME, &*platform, error)
}

/// The StorageClass: applied when Kite manages it; otherwise only observed.
/// Returns the `StorageClassReady` and `StorageClassDrifted` observations.
async fn storage_class_step(
    platform: &KitePlatform,
    ctx: &Context<Config>,
) -> Result<(Observation, Observation), Error> {
    let spec = &platform.spec;
    let name = &spec.vm_storage_class_name;
    let resource = ApiResource::erase::<StorageClass>(&());
    let live: Option<StorageClass> = apply::read(&ctx.client, &resource, None, name)
        .await?
        .map(serde_json::from_value)
        .transpose()
        .map_err(|source| Error::Serde { what: format!("reading the StorageClass {name}"), source })?;
    let not_drifted = || no("NoDrift", "The StorageClass is as desired.");
    if !spec.storage.manage_storage_class {
        return Ok(match live {
            Some(_) => (
                yes(
                    "ProvidedByOperator",
                    format!("The StorageClass {name} is the operator's; Kite does not change it."),
                ),
                not_drifted(),
            ),
            None => (
                no(
                    "StorageClassMissing",
                    format!("The StorageClass {name} does not exist, and Kite is told not to create it."),
                ),
                not_drifted(),
            ),
        });
    }
    let desired = storage_class::desired(spec, Some(platform))?;
    if let Some(live) = &live {
        if !labels::is_managed_by_controller(live.metadata.labels.as_ref()) {
            let message = format!(
                "A StorageClass {name} exists and was not made by Kite; it is used as it is. Set storage.manageStorageClass to false to say so."
            );
            return Ok((yes("ProvidedByOperator", message), not_drifted()));
        }
        let fields = storage_class::drift(live, &desired);
        if !fields.is_empty() {
            let listed = fields.join(", ");
            if !spec.storage.recreate_on_drift {
                let message = format!(
                    "The StorageClass {name} differs in {listed}, which cannot change in place. New volumes still get the old values. Set storage.recreateOnDrift to recreate it (existing volumes are not touched)."
                );
                ctx.event(platform, EventType::Warning, "StorageClassDrifted", "CompareStorageClass", message.clone())
                    .await;
                return Ok((no("Drifted", message.clone()), yes("FieldsDiffer", message)));
            }
            if apply::remove(&ctx.client, &resource, None, name).await? != Removal::Gone {
                let note = format!("Recreating the StorageClass {name}: {listed} differed.");
                ctx.event(platform, EventType::Normal, "StorageClassRecreating", "RecreateStorageClass", note).await;
            }
        }
    }
    let object = apply::to_json(&desired, "the StorageClass")?;
    apply::ensure(&ctx.client, FIELD_MANAGER, &resource, &object).await?;
    Ok((yes("Applied", format!("The StorageClass {name} is as desired.")), not_drifted()))
}

/// Longhorn's readiness, when the class is Longhorn's.
async fn longhorn_step(platform: &KitePlatform, ctx: &Context<Config>) -> Result<Observation, Error> {
    let storage = &platform.spec.storage;
    let nodes = Api::<DynamicObject>::namespaced_with(
        ctx.client.clone(),
        &storage.longhorn_namespace,
        &resources::longhorn_node(),
    );
    let list = match nodes.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            return Ok(no("LonghornNotInstalled", "Longhorn is not installed (nodes.longhorn.io is not served)."));
        }
        Err(source) => return Err(Error::Kube { action: "listing Longhorn nodes".into(), source }),
    };
    let nodes: Vec<Value> = list.items.iter().filter_map(|node| serde_json::to_value(node).ok()).collect();
    let readiness = longhorn::readiness(&nodes, &storage.disk_selector);
    Ok((
        if readiness.ready { ConditionStatus::True } else { ConditionStatus::False },
        readiness.reason,
        readiness.message,
    ))
}

/// The golden images' imports and clone RBAC; returns each image's status.
async fn golden_images_step(
    platform: &KitePlatform,
    ctx: &Context<Config>,
) -> Result<Vec<kite_core::api::GoldenImageStatus>, Error> {
    let client = &ctx.client;
    let namespace = platform.spec.golden_image_namespace.as_str();
    let dv = resources::data_volume();
    let mut statuses = Vec::new();
    for image in &platform.spec.golden_images {
        // CDI refuses changes to a DataVolume's spec: it is created once.
        let live = match apply::read(client, &dv, Some(namespace), &image.name).await? {
            Some(live) if !apply::is_ours(&live) => {
                return Err(Error::NotOurs {
                    kind: "DataVolume".into(),
                    namespace: namespace.into(),
                    name: image.name.clone(),
                });
            }
            Some(live) => live,
            None => {
                apply::ensure(client, FIELD_MANAGER, &dv, &golden_images::data_volume(image, platform)?).await?.live
            }
        };
        statuses.push(golden_images::status(image, Some(&live)));
    }
    let listed = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &dv)
        .list(&ListParams::default().labels(&format!("{COMPONENT}={}", golden_images::COMPONENT_VALUE)))
        .await
        .map_err(Error::kube(format!("listing golden images in {namespace}")))?;
    let names: Vec<String> = listed.items.iter().filter_map(|o| o.metadata.name.clone()).collect();
    for name in golden_images::unlisted(&platform.spec, names.iter().map(String::as_str)) {
        if apply::remove(client, &dv, Some(namespace), &name).await? == Removal::Deleting {
            let note = format!("Removing the golden image {name}: the platform no longer lists it.");
            ctx.event(platform, EventType::Normal, "GoldenImageRemoved", "RemoveGoldenImage", note).await;
        }
    }
    let role = ApiResource::erase::<Role>(&());
    let binding = ApiResource::erase::<RoleBinding>(&());
    match golden_images::clone_role(platform)? {
        Some(desired) => {
            apply::ensure(client, FIELD_MANAGER, &role, &apply::to_json(&desired, "the clone Role")?).await?;
            let account = (ctx.config.cloner.0.as_str(), ctx.config.cloner.1.as_str());
            apply::ensure(
                client,
                FIELD_MANAGER,
                &binding,
                &apply::to_json(&golden_images::clone_role_binding(platform, account)?, "the clone RoleBinding")?,
            )
            .await?;
        }
        None => {
            apply::remove(client, &binding, Some(namespace), golden_images::CLONER).await?;
            apply::remove(client, &role, Some(namespace), golden_images::CLONER).await?;
        }
    }
    Ok(statuses)
}

async fn write_status(
    platform: &KitePlatform,
    ctx: &Context<Config>,
    observations: [(&str, Observation); 4],
    images: Vec<kite_core::api::GoldenImageStatus>,
) -> Result<(), Error> {
    let previous = platform.status.clone().unwrap_or_default();
    let mut conditions = previous.conditions.clone();
    for (type_, (status, reason, message)) in &observations {
        let was = conditions.iter().find(|c| c.type_ == *type_).map(|c| c.status);
        set_condition(
            &mut conditions,
            Condition {
                type_: type_.to_string(),
                status: *status,
                reason: Some(reason.to_string()),
                message: Some(message.clone()),
                observed_generation: platform.metadata.generation,
                last_transition_time: Some(kite_core::reconcile::now()),
            },
        );
        if was.is_some_and(|was| was != *status) {
            tracing::info!(condition = type_, ?status, reason, "platform storage changed");
        }
    }
    // Only the conditions this reconciler owns go into its apply.
    let ours: Vec<Condition> =
        conditions.into_iter().filter(|c| observations.iter().any(|(type_, _)| c.type_ == *type_)).collect();
    let unchanged = ours.iter().all(|c| previous.conditions.contains(c))
        && previous.golden_images == images
        && previous.observed_generation == platform.metadata.generation;
    if unchanged {
        return Ok(());
    }
    let status = KitePlatformStatus {
        observed_generation: platform.metadata.generation,
        conditions: ours,
        ssh_gateway: None,
        platform_url: None,
        golden_images: images,
        installation: None,
    };
    let name = platform.required_name()?;
    apply_status(&Api::<KitePlatform>::all(ctx.client.clone()), name, STATUS_MANAGER, &status).await
}

/// A tick for every change of a Longhorn node (none while Longhorn is not
/// installed: the watch retries with backoff until its CRD is served).
fn longhorn_node_changes(client: kube::Client, namespace: &str) -> impl futures::Stream<Item = ()> + Send + 'static {
    use kube::runtime::WatchStreamExt as _;
    let nodes = Api::<DynamicObject>::namespaced_with(client, namespace, &resources::longhorn_node());
    watcher::watcher(nodes, watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .filter_map(|node| futures::future::ready(node.ok().map(|_| ())))
}

/// Runs the reconciler on the `KitePlatform` until `shutdown` completes.
/// Its StorageClass, golden images and RBAC are watched (by Kite's label),
/// so a deleted one comes back and an import's progress shows at once.
pub async fn run(ctx: Arc<Context<Config>>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let client = ctx.client.clone();
    let ours = watcher::Config::default().labels(&labels::managed_selector());
    let dv = resources::data_volume();
    Controller::new(Api::<KitePlatform>::all(client.clone()), watcher::Config::default())
        .owns(Api::<StorageClass>::all(client.clone()), ours.clone())
        // Not `owns` for namespaced children: it would name the platform a second time (see `owners`).
        .watches(Api::<Role>::all(client.clone()), ours.clone(), |r| cluster_owners::<KitePlatform, _>(&r))
        .watches(Api::<RoleBinding>::all(client.clone()), ours.clone(), |b| cluster_owners::<KitePlatform, _>(&b))
        .watches_with(Api::<DynamicObject>::all_with(client.clone(), &dv), dv.clone(), ours, |d| {
            cluster_owners::<KitePlatform, _>(&d)
        })
        .reconcile_all_on(longhorn_node_changes(client, &ctx.config.longhorn_namespace))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// The storage reconciler for a [`Reconcilers`] run, with `config`: its
/// context on the run's client and metrics, stopped with the others.
///
/// ```no_run
/// use kite_core::runner::Reconcilers;
/// use kite_storage::reconciler::{self, Config};
///
/// # async fn operator(client: kube::Client) {
/// let config = Config {
///     cloner: ("kite".into(), "kite-controller".into()),
///     longhorn_namespace: "longhorn-system".into(),
/// };
/// Reconcilers::new(client).with(reconciler::NAME, reconciler::runner(config)).run().await;
/// # }
/// ```
///
/// [`Reconcilers`]: kite_core::runner::Reconcilers
pub fn runner(config: Config) -> impl FnOnce(&Shared) -> BoxFuture<'static, ()> + Send + 'static {
    move |shared| run(shared.context(config), shared.shutdown()).boxed()
}
