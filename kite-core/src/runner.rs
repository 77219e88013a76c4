//! Running Kite's reconcilers in a process of one's own: [`Reconcilers`].
//!
//! `kite controller` is this runner with kite-storage's reconciler added,
//! leader election and a metrics server around it. Another operator can
//! run the same reconcilers beside its own, on its own `kube::Client`,
//! with its own Prometheus registry and its own shutdown.
//!
//! Each reconciler is a `kube::runtime::Controller` (kube-rs'
//! `controller-rs` shape: a [`Context`], `reconcile`, an error policy);
//! the runner builds one context per reconciler from the [`Settings`],
//! runs them concurrently in the task that awaits [`Reconcilers::run`],
//! and stops them all, gracefully, when the shutdown future completes.

use crate::reconcile::{Context, Metrics};
use crate::vm::gateway_access::GatewayAccount;
use crate::{gateway, offer, tenant, vm};
use futures::FutureExt;
use futures::future::{self, BoxFuture};
use kube::Client;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

/// One of kite-core's own reconcilers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reconciler {
    /// [`tenant`]: a `KiteUser`'s namespace, NetworkPolicies and quota.
    Tenant,
    /// [`vm`]: a `KiteVirtualMachine`'s Secrets, DataVolume, KubeVirt VirtualMachine and Service.
    Vm,
    /// [`gateway`]: the `KitePlatform`'s exposure of the SSH gateway.
    Gateway,
    /// [`offer`]: deletes a `KiteVirtualMachineOffer` nobody claimed when it expires.
    Offer,
}

impl Reconciler {
    /// Every one of kite-core's reconcilers, the runner's default.
    pub const ALL: [Reconciler; 4] = [Reconciler::Tenant, Reconciler::Vm, Reconciler::Gateway, Reconciler::Offer];

    /// Its name in metrics (the `reconciler` label) and logs.
    pub fn name(self) -> &'static str {
        match self {
            Reconciler::Tenant => tenant::NAME,
            Reconciler::Vm => vm::NAME,
            Reconciler::Gateway => gateway::NAME,
            Reconciler::Offer => offer::NAME,
        }
    }
}

/// What kite-core's reconcilers are configured with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The platform namespace: where the SSH gateway runs, its Service is
    /// exposed and the platform's certificate Secret is (`kite` by default).
    pub platform_namespace: String,
    /// The SSH gateway's ServiceAccount in the platform namespace: each
    /// machine grants it `get` on that machine's key Secret alone. `None`
    /// grants nothing (a gateway that reads those Secrets some other way).
    pub gateway_service_account: Option<String>,
    /// The instance Events are reported from (for example the pod's name).
    pub identity: Option<String>,
}

impl Default for Settings {
    /// `kite`, `kite-gateway` (as `kite manifests` names them), no identity.
    fn default() -> Self {
        Self { platform_namespace: "kite".into(), gateway_service_account: Some("kite-gateway".into()), identity: None }
    }
}

/// What every reconciler of one run shares: the client, the metrics, the
/// Events' identity and the shutdown. A reconciler added with
/// [`Reconcilers::with`] is started from it.
#[derive(Clone)]
pub struct Shared {
    client: Client,
    metrics: Metrics,
    identity: Option<String>,
    stop: watch::Receiver<bool>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("identity", &self.identity).finish_non_exhaustive()
    }
}

impl Shared {
    /// The client every reconciler of the run reads and writes with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The run's metrics: a reconciler counts into them under its own name.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// A [`Context`] for a reconciler with configuration `config`, on the
    /// run's client and metrics, reporting Events from the run's identity.
    pub fn context<C>(&self, config: C) -> Arc<Context<C>> {
        Arc::new(Context::new(self.client.clone(), config, self.metrics.clone(), self.identity.clone()))
    }

    /// A future that completes when the run is asked to stop: the shutdown
    /// a reconciler hands to `Controller::graceful_shutdown_on`.
    pub fn shutdown(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let mut stop = self.stop.clone();
        async move {
            // An error means the sender is gone, which also means stop.
            let _ = stop.wait_for(|stopped| *stopped).await;
        }
    }
}

/// How a reconciler from outside kite-core is started: given the run's
/// [`Shared`] parts, the future that runs it until [`Shared::shutdown`].
type Start = Box<dyn FnOnce(&Shared) -> BoxFuture<'static, ()> + Send>;

/// Kite's reconcilers, to run in one's own process.
///
/// A builder: [`Reconcilers::new`] takes the client and runs every one of
/// kite-core's reconcilers ([`Reconciler::ALL`]) with the default
/// [`Settings`], fresh [`Metrics`], until the process ends. Choose others
/// with [`only`](Reconcilers::only), add reconcilers of other crates (such
/// as kite-storage's) or one's own with [`with`](Reconcilers::with), and
/// stop them with [`shutdown_on`](Reconcilers::shutdown_on).
///
/// ```no_run
/// use kite_core::reconcile::Metrics;
/// use kite_core::runner::{Reconcilers, Settings};
///
/// # async fn operator() -> Result<(), kube::Error> {
/// let client = kube::Client::try_default().await?;
/// let mut registry = prometheus_client::registry::Registry::default();
/// let settings = Settings { identity: Some("my-operator".into()), ..Settings::default() };
/// Reconcilers::new(client)
///     .settings(settings)
///     .metrics(Metrics::register(&mut registry))
///     .with("mine", |shared| {
///         let client = shared.client().clone();
///         let shutdown = shared.shutdown();
///         Box::pin(async move {
///             // A reconciler of one's own: a `kube::runtime::Controller` on
///             // `client`, with `.graceful_shutdown_on(shutdown)`.
///             let _ = client;
///             shutdown.await;
///         })
///     })
///     .shutdown_on(async {
///         let _ = tokio::signal::ctrl_c().await;
///     })
///     .run()
///     .await;
/// # Ok(())
/// # }
/// ```
pub struct Reconcilers {
    client: Client,
    settings: Settings,
    metrics: Metrics,
    enabled: Vec<Reconciler>,
    added: Vec<(&'static str, Start)>,
    shutdown: BoxFuture<'static, ()>,
}

impl std::fmt::Debug for Reconcilers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let added: Vec<&str> = self.added.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Reconcilers")
            .field("settings", &self.settings)
            .field("enabled", &self.enabled)
            .field("added", &added)
            .finish_non_exhaustive()
    }
}

impl Reconcilers {
    /// Every one of kite-core's reconcilers on `client`, with the default
    /// [`Settings`] and unregistered [`Metrics`], never asked to stop.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            settings: Settings::default(),
            metrics: Metrics::default(),
            enabled: Reconciler::ALL.to_vec(),
            added: Vec::new(),
            shutdown: future::pending().boxed(),
        }
    }

    /// Runs with `settings`.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Counts into `metrics` (see [`Metrics::register`] to expose them).
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Runs these of kite-core's reconcilers and no others (each once).
    pub fn only(mut self, reconcilers: impl IntoIterator<Item = Reconciler>) -> Self {
        self.enabled.clear();
        for reconciler in reconcilers {
            if !self.enabled.contains(&reconciler) {
                self.enabled.push(reconciler);
            }
        }
        self
    }

    /// Adds a reconciler of another crate or one's own, named `name` in the
    /// logs: `start` gets the run's [`Shared`] parts (client, metrics,
    /// contexts, shutdown) and gives the future that runs the reconciler
    /// until [`Shared::shutdown`] completes. kite-storage's is
    /// `kite_storage::reconciler::runner(config)`.
    pub fn with(
        mut self,
        name: &'static str,
        start: impl FnOnce(&Shared) -> BoxFuture<'static, ()> + Send + 'static,
    ) -> Self {
        self.added.push((name, Box::new(start)));
        self
    }

    /// Stops every reconciler, gracefully, when `signal` completes.
    pub fn shutdown_on(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = signal.boxed();
        self
    }

    /// Runs the reconcilers concurrently in this task; returns once the
    /// shutdown signal has come and every one of them has stopped.
    pub async fn run(self) {
        let (stop_sender, stop) = watch::channel(false);
        let shared =
            Shared { client: self.client, metrics: self.metrics, identity: self.settings.identity.clone(), stop };
        let mut running: Vec<(&'static str, BoxFuture<'static, ()>)> = self
            .enabled
            .iter()
            .map(|reconciler| (reconciler.name(), start(*reconciler, &shared, &self.settings)))
            .collect();
        running.extend(self.added.into_iter().map(|(name, start)| (name, start(&shared))));
        let names: Vec<&str> = running.iter().map(|(name, _)| *name).collect();
        tracing::info!(reconcilers = ?names, "reconcilers start");
        let all = future::join_all(running.into_iter().map(|(name, reconciler)| async move {
            reconciler.await;
            tracing::debug!(reconciler = name, "reconciler stopped");
        }));
        let signal = self.shutdown;
        let forward = async move {
            signal.await;
            tracing::info!("reconcilers stopping");
            // An error means no receiver is left: nothing is running to be stopped.
            let _ = stop_sender.send(true);
        };
        futures::join!(all, forward);
    }
}

/// The future that runs one of kite-core's reconcilers.
fn start(reconciler: Reconciler, shared: &Shared, settings: &Settings) -> BoxFuture<'static, ()> {
    let namespace = settings.platform_namespace.clone();
    match reconciler {
        Reconciler::Tenant => {
            tenant::run(shared.context(tenant::Config { platform_namespace: namespace }), shared.shutdown()).boxed()
        }
        Reconciler::Vm => {
            let gateway = settings
                .gateway_service_account
                .clone()
                .map(|name| GatewayAccount { namespace: namespace.clone(), name });
            let config = vm::Config { gateway, platform_namespace: namespace, ..vm::Config::default() };
            vm::run(shared.context(config), shared.shutdown()).boxed()
        }
        Reconciler::Gateway => {
            gateway::run(shared.context(gateway::Config { platform_namespace: namespace }), shared.shutdown()).boxed()
        }
        Reconciler::Offer => offer::run(shared.context(()), shared.shutdown()).boxed(),
    }
}
