//! An operator of one's own that runs Kite's reconcilers in its process,
//! beside a reconciler of its own: a `kube::runtime::Controller` that keeps
//! a one-line summary of every `KiteVirtualMachine` in an annotation
//! (`2 CPU, 4Gi, ubuntu-22.04: Running`), from the status Kite's VM
//! reconciler writes. Both share one client, one metrics registry and one
//! shutdown (Ctrl-C), after which it prints the metrics.
//!
//! ```text
//! cargo run -p kite-examples --example embedded_operator
//! ```
//!
//! It needs a cluster with Kite's CRDs, KubeVirt and CDI (as `kite
//! controller` does: `kite install`), and the controller's RBAC for its
//! account; `kite controller` must not run there at the same time.
// ANCHOR: all
use futures::StreamExt;
use kite_core::api::KiteVirtualMachine;
use kite_core::reconcile::{Context, Metrics};
use kite_core::runner::{Reconcilers, Settings, Shared};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The annotation this operator keeps on every machine.
pub const SUMMARY: &str = "embedded.example.org/summary";
/// Its reconciler's name in logs and metrics.
const NAME: &str = "summary";
/// The field manager of its annotation: it owns that field, and no other.
const MANAGER: &str = "embedded-operator";

/// What the annotation says of `vm`.
pub fn summary(vm: &KiteVirtualMachine) -> String {
    let phase = vm.status.as_ref().and_then(|status| status.phase);
    let phase = phase.map_or_else(|| "Pending".to_string(), |phase| format!("{phase:?}"));
    format!("{} CPU, {}, {}: {phase}", vm.spec.cpu, vm.spec.memory.0, vm.spec.image)
}

/// One pass: writes the summary when it changed, by server-side apply of the annotation alone.
async fn reconcile(vm: Arc<KiteVirtualMachine>, ctx: Arc<Context<()>>) -> Result<Action, kube::Error> {
    let _measure = ctx.metrics.measure(NAME);
    let wanted = summary(&vm);
    if vm.annotations().get(SUMMARY) != Some(&wanted) {
        let machines = Api::<KiteVirtualMachine>::namespaced(ctx.client.clone(), &vm.namespace().unwrap_or_default());
        let patch = serde_json::json!({
            "apiVersion": KiteVirtualMachine::api_version(&()),
            "kind": KiteVirtualMachine::kind(&()),
            "metadata": {"annotations": {SUMMARY: wanted}},
        });
        machines.patch(&vm.name_any(), &PatchParams::apply(MANAGER), &Patch::Apply(patch)).await?;
    }
    // Every change of the machine (Kite's status writes among them) brings it back.
    Ok(Action::await_change())
}

fn error_policy(vm: Arc<KiteVirtualMachine>, error: &kube::Error, _ctx: Arc<Context<()>>) -> Action {
    tracing::warn!(%error, machine = %vm.name_any(), "summary failed");
    Action::requeue(Duration::from_secs(5))
}

/// This operator's own reconciler, on the run's client, metrics and shutdown.
async fn summaries(shared: Shared) {
    let machines = Api::<KiteVirtualMachine>::all(shared.client().clone());
    Controller::new(machines, watcher::Config::default())
        .graceful_shutdown_on(shared.shutdown())
        .run(reconcile, error_policy, shared.context(()))
        .for_each(|_| async {})
        .await;
}

/// Runs Kite's reconcilers (kite-core's and kite-storage's) and the summary
/// reconciler on `client`, counting into `metrics`, until `shutdown`.
pub async fn run(client: Client, metrics: Metrics, shutdown: impl Future<Output = ()> + Send + 'static) {
    let settings = Settings {
        platform_namespace: "kite".into(),
        gateway_service_account: Some("kite-gateway".into()),
        identity: Some(MANAGER.into()),
    };
    let storage = kite_storage::reconciler::Config {
        // The ServiceAccount this operator runs as: it creates the machines' disks, cloned from golden images.
        cloner: ("kite".into(), "kite-controller".into()),
        longhorn_namespace: "longhorn-system".into(),
    };
    Reconcilers::new(client)
        .settings(settings)
        .metrics(metrics)
        .with(kite_storage::reconciler::NAME, kite_storage::reconciler::runner(storage))
        .with(NAME, |shared| Box::pin(summaries(shared.clone())))
        .shutdown_on(shutdown)
        .run()
        .await;
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::new("info")).init();
    let client = Client::try_default().await?;
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::register(&mut registry);
    run(client, metrics, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)?;
    print!("{text}");
    Ok(())
}
// ANCHOR_END: all
