//! What every Kite reconciler shares: the [`Context`] a reconciler runs
//! with, server-side apply that skips needless writes ([`apply`]), status
//! writes, Events, per-object backoff and [`Metrics`].
//!
//! The reconcilers follow kube-rs' `controller-rs`: a `reconcile(object,
//! context)` function, an error policy, and `kube::runtime::Controller`
//! with `owns` on the children, so that a deleted or changed child brings
//! its parent back into reconciliation within seconds. The VM reconciler's
//! watches of its children are also its caches ([`stores`]): a pass reads
//! what they hold instead of a GET per child.

pub mod applier;
pub mod apply;
mod backoff;
mod metrics;
pub mod owners;
pub mod preflight;
pub mod resources;
pub mod stores;
mod text_store;

pub use backoff::Backoff;
pub use metrics::{Measure, Metrics};

use crate::Error;
use crate::key::object_key;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde_json::json;
use std::fmt::Debug;
use std::time::Duration;

/// The name Kite's controller reports Events as.
pub const REPORTER: &str = "kite-controller";

/// What a reconciler runs with: a client, its configuration, an Event
/// recorder, metrics, and the backoff of objects that keep failing.
pub struct Context<C> {
    /// The client the reconciler reads and writes with.
    pub client: Client,
    /// The reconciler's own configuration.
    pub config: C,
    /// Publishes Kubernetes Events about the objects reconciled.
    pub recorder: Recorder,
    /// Counts and times reconcile passes.
    pub metrics: Metrics,
    /// How long to wait before retrying an object whose last pass failed.
    pub backoff: Backoff,
    /// The watch caches the reconciler reads its children from (empty until its `run` fills them).
    pub stores: stores::Stores,
}

impl<C> Context<C> {
    /// A context whose Events are reported as [`REPORTER`] from `instance`
    /// (for example the pod's name).
    pub fn new(client: Client, config: C, metrics: Metrics, instance: Option<String>) -> Self {
        let reporter = Reporter { controller: REPORTER.into(), instance };
        let recorder = Recorder::new(client.clone(), reporter);
        Self { client, config, recorder, metrics, backoff: Backoff::default(), stores: stores::Stores::default() }
    }

    /// Publishes an Event about `object`. A failure to publish is logged,
    /// never fatal: Events are for people, status is the record. One refused
    /// because the namespace is being terminated is logged at debug level.
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let event = Event { type_, reason: reason.into(), note: Some(note), action: action.into(), secondary: None };
        match self.recorder.publish(&event, &object.object_ref(&())).await {
            Ok(()) => {}
            // The object's namespace is going (a deleted user's machines): expected, and no one would read it.
            Err(kube::Error::Api(status)) if status.code == 403 && status.message.contains("being terminated") => {
                tracing::debug!(reason, object = %object.name_any(), "no Event: the namespace is being terminated");
            }
            Err(error) => tracing::warn!(%error, reason, object = %object.name_any(), "could not publish an Event"),
        }
    }

    /// One reconcile pass of `object` under `finalizer_name`, timed as
    /// `reconciler`: `pass` gets [`Finalized::Apply`] while the object lives
    /// and [`Finalized::Cleanup`] once it is being deleted (kube's finalizer
    /// helper adds the finalizer first and removes it after a clean-up that
    /// succeeded). A pass that succeeds clears the object's backoff.
    ///
    /// [`Finalized::Apply`]: kube::runtime::finalizer::Event::Apply
    /// [`Finalized::Cleanup`]: kube::runtime::finalizer::Event::Cleanup
    pub async fn finalized<K, F, Fut>(
        &self,
        reconciler: &'static str,
        api: &Api<K>,
        finalizer_name: &str,
        object: std::sync::Arc<K>,
        pass: F,
    ) -> Result<Action, Error>
    where
        K: Resource<DynamicType = ()> + Clone + Debug + Serialize + serde::de::DeserializeOwned,
        F: FnOnce(kube::runtime::finalizer::Event<K>) -> Fut,
        Fut: std::future::Future<Output = Result<Action, Error>>,
    {
        let _measure = self.metrics.measure(reconciler);
        let key = object_key(&*object);
        let action = kube::runtime::finalizer(api, finalizer_name, object, pass)
            .await
            .map_err(|error| Error::Finalizer(Box::new(error)))?;
        self.backoff.succeeded(&key);
        Ok(action)
    }

    /// The error policy: logs the failure, counts it, and retries after the
    /// object's backoff (1 s, doubling up to 5 minutes while it keeps failing).
    pub fn retry_after_error<K: Resource>(&self, reconciler: &'static str, object: &K, error: &Error) -> Action {
        let key = object_key(object);
        self.metrics.failed(reconciler, error);
        let delay = self.backoff.failed(&key);
        tracing::warn!(reconciler, object = %key, error = %error, retry_in = ?delay, "reconcile failed");
        Action::requeue(delay)
    }
}

/// Writes `status` into the status subresource of `name` by server-side
/// apply under `manager`. Fields this manager wrote before and `status` no
/// longer has are removed; fields of other managers stay.
pub async fn apply_status<K>(api: &Api<K>, name: &str, manager: &str, status: &impl Serialize) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + Debug + serde::de::DeserializeOwned,
{
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {"name": name},
        "status": status,
    });
    api.patch_status(name, &PatchParams::apply(manager).force(), &Patch::Apply(body))
        .await
        .map_err(Error::kube(format!("writing the status of {} {name}", K::kind(&()))))?;
    Ok(())
}

/// A stream that yields whenever the `KitePlatform` changes, for
/// `Controller::reconcile_all_on` in reconcilers whose objects depend on it.
pub fn platform_changes(client: Client) -> impl futures::Stream<Item = ()> + Send + 'static {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    watcher(Api::<crate::api::KitePlatform>::all(client), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .filter_map(|object| async move { object.ok().map(|_| ()) })
}

/// How often a converged object is looked at again even when nothing
/// changed: watches bring every change sooner, this is the safety net.
pub const RESYNC: Duration = Duration::from_secs(300);

/// The current time, as Kubernetes timestamps hold it.
pub fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now())
}
