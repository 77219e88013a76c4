//! `kite controller`: runs every Kite reconciler against a cluster.
//!
//! It checks first that the cluster serves Kite's CRDs, KubeVirt and CDI,
//! and stops with a sentence naming what is missing. It then serves
//! `/healthz`, `/readyz` and Prometheus `/metrics`, takes part in leader
//! election on a `coordination.k8s.io` Lease, so that of several replicas
//! only one reconciles, and runs the reconcilers while it leads.

use crate::probes::Probes;
use anyhow::Context as _;
use clap::Args;
use kite_core::reconcile::{Metrics, preflight};
use kite_core::runner::{self, Reconcilers};
use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use prometheus_client::metrics::gauge::Gauge;
use std::net::SocketAddr;
use std::path::PathBuf;
use tokio::sync::watch;

/// The options of `kite controller`.
#[derive(Args, Debug, Clone)]
pub struct ControllerArgs {
    /// The kubeconfig to use; without it, `KUBECONFIG`, `~/.kube/config`, or the in-cluster account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The platform namespace: where the gateway runs and the Lease is kept.
    #[arg(long, default_value = "kite")]
    pub namespace: String,
    /// Where `/healthz`, `/readyz` and `/metrics` are served.
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub listen: SocketAddr,
    /// The controller's ServiceAccount (in the platform namespace), allowed to clone golden images.
    #[arg(long, default_value = "kite-controller")]
    pub service_account: String,
    /// The SSH gateway's ServiceAccount (in the platform namespace): each machine grants it
    /// `get` on that machine's key Secret alone.
    #[arg(long, default_value = "kite-gateway")]
    pub gateway_service_account: String,
    /// This replica's name in the Lease and in Events; defaults to `POD_NAME`, else the host name.
    #[arg(long)]
    pub identity: Option<String>,
    /// Run without leader election (only when a single replica can ever run).
    #[arg(long)]
    pub no_leader_election: bool,
    /// Where Longhorn runs; its nodes are watched there (`KitePlatform.spec.storage.longhornNamespace`).
    #[arg(long, default_value = "longhorn-system")]
    pub longhorn_namespace: String,
}

/// The Lease replicas compete for.
pub const LEASE_NAME: &str = "kite-controller";

/// What the reconcilers need, besides a client.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The platform namespace.
    pub namespace: String,
    /// The ServiceAccount allowed to clone golden images.
    pub service_account: String,
    /// The SSH gateway's ServiceAccount, granted each machine's key Secret.
    pub gateway_service_account: String,
    /// The name Events are reported from.
    pub identity: String,
    /// Where Longhorn runs (`KitePlatform.spec.storage.longhornNamespace`): its nodes are watched there.
    pub longhorn_namespace: String,
}

fn identity(args: &ControllerArgs) -> String {
    args.identity
        .clone()
        .or_else(|| std::env::var("POD_NAME").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| format!("kite-controller-{}", std::process::id()))
}

/// Runs every reconciler until `stop` turns true: kite-core's (tenants,
/// machines, the gateway's exposure, offers that expire) and kite-storage's,
/// through [`Reconcilers`], the runner an embedder uses too.
pub async fn run_reconcilers(client: Client, settings: &Settings, metrics: Metrics, stop: watch::Receiver<bool>) {
    let core = runner::Settings {
        platform_namespace: settings.namespace.clone(),
        gateway_service_account: Some(settings.gateway_service_account.clone()),
        identity: Some(settings.identity.clone()),
    };
    let storage = kite_storage::reconciler::Config {
        cloner: (settings.namespace.clone(), settings.service_account.clone()),
        longhorn_namespace: settings.longhorn_namespace.clone(),
    };
    let mut stop = stop;
    Reconcilers::new(client)
        .settings(core)
        .metrics(metrics)
        .with(kite_storage::reconciler::NAME, kite_storage::reconciler::runner(storage))
        .shutdown_on(async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        })
        .run()
        .await;
}

/// `kite controller`.
pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    let client = crate::cluster::connect(args.kubeconfig.as_ref()).await?;
    preflight::require_apis(&client).await?;
    let settings = Settings {
        namespace: args.namespace.clone(),
        service_account: args.service_account.clone(),
        gateway_service_account: args.gateway_service_account.clone(),
        identity: identity(&args),
        longhorn_namespace: args.longhorn_namespace.clone(),
    };
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::register(&mut registry);
    let leading_gauge = Gauge::<i64>::default();
    registry.register(
        "kite_controller_leading",
        "1 while this replica holds the Lease and reconciles",
        leading_gauge.clone(),
    );
    let probes = Probes::new(registry);
    let address = probes.serve(args.listen).await?;
    tracing::info!(%address, namespace = %settings.namespace, identity = %settings.identity, "kite controller started");

    let (stop_sender, stop) = watch::channel(false);
    tokio::spawn(async move {
        crate::signal::shutdown().await;
        tracing::info!("stopping");
        let _ = stop_sender.send(true);
    });

    if args.no_leader_election {
        probes.set_ready(true);
        run_reconcilers(client, &settings, metrics, stop).await;
        return Ok(());
    }
    run_when_leading(client, &settings, metrics, &probes, leading_gauge, stop).await
}

/// Reconciles while this replica holds the Lease, stands by while another
/// does, and releases the Lease when `stop` says so.
async fn run_when_leading(
    client: kube::Client,
    settings: &Settings,
    metrics: Metrics,
    probes: &Probes,
    leading_gauge: Gauge<i64>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let manager = LeaseManagerBuilder::new(client.clone(), LEASE_NAME)
        .with_namespace(&settings.namespace)
        .with_identity(&settings.identity)
        .with_duration(15)
        .with_grace(5)
        .with_field_manager("kite-controller-lease")
        .build()
        .await
        .context("setting up leader election")?;
    let (mut leading, election) = manager.watch().await;
    // A standby replica is ready: it is healthy and waiting for the Lease.
    probes.set_ready(true);
    let mut stopping = stop.clone();
    loop {
        tokio::select! {
            changed = leading.wait_for(|leader| *leader) => {
                if changed.is_err() {
                    anyhow::bail!("leader election stopped");
                }
            }
            _ = stopping.wait_for(|stopped| *stopped) => break,
        }
        tracing::info!(identity = %settings.identity, "leading: reconcilers start");
        leading_gauge.set(1);
        let (lost_sender, lost) = watch::channel(false);
        let mut watch_leading = leading.clone();
        let mut watch_stop = stop.clone();
        let forward = tokio::spawn(async move {
            tokio::select! {
                _ = watch_leading.wait_for(|leader| !*leader) => {}
                _ = watch_stop.wait_for(|stopped| *stopped) => {}
            }
            let _ = lost_sender.send(true);
        });
        run_reconcilers(client.clone(), settings, metrics.clone(), lost).await;
        forward.abort();
        leading_gauge.set(0);
        if *stop.borrow() {
            break;
        }
        tracing::warn!("lost the Lease: reconcilers stopped, standing by");
    }
    // Closing the channel releases the Lease, so a standby takes over at once.
    drop(leading);
    match election.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(anyhow::anyhow!("releasing the Lease: {error}")),
        Err(error) => Err(anyhow::anyhow!("the leader election task failed: {error}")),
    }
}
