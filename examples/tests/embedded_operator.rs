//! The `embedded_operator` example, run in this process against
//! kite-testkit's API server and its simulated KubeVirt and CDI: Kite's
//! reconcilers converge a user and a machine to `Running`, the example's own
//! reconciler keeps the machine's summary annotation, both count into one
//! registry, and one shutdown stops them all.

#[path = "../examples/embedded_operator.rs"]
#[allow(dead_code)]
mod embedded_operator;

use embedded_operator::SUMMARY;
use k8s_openapi::api::core::v1::Namespace;
use kite_core::api::{KitePlatform, KiteUser, KiteVirtualMachine, PLATFORM_NAME, VirtualMachinePhase};
use kite_core::reconcile::Metrics;
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::{a_platform, a_user, a_vm, eventually};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use std::time::Duration;
use tokio::sync::watch;

const WITHIN: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_operator_runs_kites_reconcilers_beside_its_own() {
    let server = FakeApiServer::new().unwrap();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let config = kite_testkit::sim::SimulationConfig { step: Duration::from_millis(20), ..Default::default() };
    let _simulation = kite_testkit::sim::start(&server, config).unwrap();
    let client = server.client();
    let mut platform_namespace = Namespace::default();
    platform_namespace.metadata.name = Some("kite".into());
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &platform_namespace).await.unwrap();
    // The platform offers a golden image; kite-storage's reconciler, run by the operator, imports it.
    Api::<KitePlatform>::all(client.clone())
        .create(&PostParams::default(), &KitePlatform::new(PLATFORM_NAME, a_platform()))
        .await
        .unwrap();

    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::register(&mut registry);
    let (stop_sender, mut stop) = watch::channel(false);
    let operator = tokio::spawn(embedded_operator::run(client.clone(), metrics, async move {
        let _ = stop.wait_for(|stopped| *stopped).await;
    }));

    Api::<KiteUser>::all(client.clone()).create(&PostParams::default(), &a_user("alice")).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    eventually(WITHIN, "alice's namespace", || async { namespaces.get_opt("kite-user-alice").await.unwrap() }).await;
    let machines: Api<KiteVirtualMachine> = Api::namespaced(client.clone(), "kite-user-alice");
    machines.create(&PostParams::default(), &a_vm("web").sized(2, "2Gi").build()).await.unwrap();

    // Kite's reconcilers converge the machine...
    eventually(WITHIN, "web to run", || async {
        let vm = machines.get("web").await.unwrap();
        (vm.status?.phase == Some(VirtualMachinePhase::Running)).then_some(())
    })
    .await;
    // ...and the operator's own reconciler follows it in the annotation.
    let summary = eventually(Duration::from_secs(10), "the summary of a running web", || async {
        let vm = machines.get("web").await.unwrap();
        vm.annotations().get(SUMMARY).filter(|summary| summary.ends_with(": Running")).cloned()
    })
    .await;
    assert_eq!(summary, "2 CPU, 2Gi, ubuntu-22.04: Running");
    let vm = machines.get("web").await.unwrap();
    let managers: Vec<&str> = vm.managed_fields().iter().filter_map(|entry| entry.manager.as_deref()).collect();
    assert!(managers.contains(&"embedded-operator"), "the annotation's manager: {managers:?}");

    // One registry counts both operators' passes.
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for reconciler in ["tenant", "vm", "storage", "summary"] {
        assert!(text.contains(&format!("kite_reconciles_total{{reconciler=\"{reconciler}\"}}")), "{text}");
    }

    // One shutdown stops them all.
    stop_sender.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(15), operator)
        .await
        .expect("the operator did not stop within 15 s")
        .unwrap();
}
