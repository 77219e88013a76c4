//! `kite controller`, run as the binary against kite-testkit's API server
//! over loopback (with its simulated KubeVirt and CDI): preflight, probes,
//! metrics, leader election, a machine converging to Running from a golden
//! image the storage reconciler imports, and what `kubectl` shows of it.

mod support;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kite_core::api::*;
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::{a_platform, a_user, a_vm, eventually, http_get};
use kite_testkit::openssh::{free_port, run_bounded, text};
use kube::api::{Api, PostParams};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::kubectl;

/// The controller process; killed if the test ends early.
struct Controller(Child);

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_controller(kubeconfig: &Path, probes: SocketAddr) -> Controller {
    let child = Command::new(env!("CARGO_BIN_EXE_kite"))
        .args(["controller", "--kubeconfig", kubeconfig.to_str().unwrap(), "--namespace", "kite"])
        .args(["--listen", &probes.to_string(), "--identity", "replica-a"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Controller(child)
}

async fn serve(server: &FakeApiServer, dir: &Path) -> std::path::PathBuf {
    let address = server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    kite_testkit::kubeconfig::write(&kubeconfig, address).unwrap();
    kubeconfig
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_converges_a_machine_and_reports_on_itself() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::new().unwrap();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let config = kite_testkit::sim::SimulationConfig { step: Duration::from_millis(20), ..Default::default() };
    let _simulation = kite_testkit::sim::start(&server, config).unwrap();
    let kubeconfig = serve(&server, dir.path()).await;
    let client = server.client();
    let mut ns = Namespace::default();
    ns.metadata.name = Some("kite".into());
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    Api::<KitePlatform>::all(client.clone())
        .create(&PostParams::default(), &KitePlatform::new(PLATFORM_NAME, a_platform()))
        .await
        .unwrap();

    let probes: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut controller = start_controller(&kubeconfig, probes);
    let within = Duration::from_secs(30);
    eventually(within, "/readyz", || async { http_get(probes, "/readyz").filter(|(code, _)| *code == 200) }).await;
    assert_eq!(http_get(probes, "/healthz").unwrap().0, 200);

    let user = a_user("alice");
    Api::<KiteUser>::all(client.clone()).create(&PostParams::default(), &user).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    eventually(within, "alice's namespace", || async { namespaces.get_opt("kite-user-alice").await.unwrap() }).await;
    let vm = a_vm("web").sized(2, "2Gi").with_ssh_id("alice_web").build();
    let vms: Api<KiteVirtualMachine> = Api::namespaced(client.clone(), "kite-user-alice");
    vms.create(&PostParams::default(), &vm).await.unwrap();
    eventually(within, "web to run", || async {
        let vm = vms.get("web").await.unwrap();
        (vm.status?.phase == Some(VirtualMachinePhase::Running)).then_some(())
    })
    .await;

    // kubectl's columns say what is going on.
    let table = kubectl(&kubeconfig, &["-n", "kite-user-alice", "get", "ktvm"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header[..6], ["NAME", "STATUS", "CPU", "MEM", "IMAGE", "SSH"], "{table}");
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..5], ["web", "Running", "2", "2Gi", "ubuntu-22.04"], "{table}");
    let platform_table = kubectl(&kubeconfig, &["get", "kiteplatforms"]);
    assert!(platform_table.contains("Disabled"), "the gateway's phase shows: {platform_table}");

    // An offer's EXPIRES column shows its time, not `<invalid>` (a `date` column of a time to come).
    let offer: kite_core::api::KiteVirtualMachineOffer = serde_json::from_value(serde_json::json!({
        "apiVersion": "hy3ons.github.io/v1", "kind": "KiteVirtualMachineOffer",
        "metadata": {"name": "voucher", "namespace": "kite-user-alice"},
        "spec": {"cpu": 1, "memory": "1Gi", "disk": "20Gi", "image": "ubuntu-22.04",
                 "expiresAt": "2999-01-01T00:00:00Z", "createdBy": "ada"}
    }))
    .unwrap();
    Api::<kite_core::api::KiteVirtualMachineOffer>::namespaced(client.clone(), "kite-user-alice")
        .create(&Default::default(), &offer)
        .await
        .unwrap();
    let offers = kubectl(&kubeconfig, &["-n", "kite-user-alice", "get", "ktvmo"]);
    assert!(offers.contains("2999-01-01T00:00:00Z") && !offers.contains("<invalid>"), "{offers}");

    let metrics = eventually(Duration::from_secs(10), "the offer reconciler's metrics", || async {
        let (code, metrics) = http_get(probes, "/metrics")?;
        (code == 200 && metrics.contains("reconciler=\"offer\"")).then_some(metrics)
    })
    .await;
    for reconciler in ["tenant", "vm", "gateway", "storage", "offer"] {
        assert!(metrics.contains(&format!("kite_reconciles_total{{reconciler=\"{reconciler}\"}}")), "{metrics}");
    }
    assert!(metrics.contains("kite_reconcile_duration_seconds_bucket"), "{metrics}");
    assert!(metrics.contains("kite_controller_leading 1"), "{metrics}");

    let lease = Api::<Lease>::namespaced(client.clone(), "kite").get("kite-controller").await.unwrap();
    assert_eq!(lease.spec.unwrap().holder_identity.as_deref(), Some("replica-a"));

    // SIGTERM stops it cleanly and releases the Lease for a standby.
    let pid = controller.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = controller.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the controller did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    let lease = Api::<Lease>::namespaced(client, "kite").get("kite-controller").await.unwrap();
    assert_ne!(lease.spec.unwrap().holder_identity.as_deref(), Some("replica-a"), "the Lease is released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kubevirt_the_controller_says_what_to_install_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::new().unwrap();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let kubeconfig = serve(&server, dir.path()).await;
    let probes = format!("127.0.0.1:{}", free_port());
    let mut command = Command::new(env!("CARGO_BIN_EXE_kite"));
    command.args(["controller", "--kubeconfig", kubeconfig.to_str().unwrap(), "--listen", &probes]);
    let output =
        tokio::task::spawn_blocking(move || run_bounded(command, None, Duration::from_secs(30))).await.unwrap();
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("kubevirt.io/v1 virtualmachines") && stderr.contains("install KubeVirt"), "{stderr}");
}
