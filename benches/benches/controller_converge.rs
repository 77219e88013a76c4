//! Converging machines: `kite controller` (release build, its own process)
//! against kite-testkit's API server over loopback, with the simulated
//! KubeVirt and CDI. Reports the time until every machine runs, the API
//! requests the controller made (in all, writes, per machine), its
//! requests and writes in the idle minute after, and its resident memory.
//!
//! `cargo bench -p kite-benches --bench controller_converge` converges
//! 1,000 machines of 10 users; under `cargo test` it converges 10.

mod common;

use common::{KiteProcess, free_port_addr, full_run, kite_command};
use k8s_openapi::api::core::v1::Namespace;
use kite_core::api::*;
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::{a_platform, a_user, a_vm};
use kube::api::{Api, ListParams, PostParams};
use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The controller's requests since the last reset: everything but the
/// benchmark's own creates and polls.
fn controller_requests(server: &FakeApiServer) -> BTreeMap<String, u64> {
    let mut counts = server.request_counts();
    counts.remove("create kitevirtualmachines");
    counts.remove("list kitevirtualmachines");
    counts
}

fn total(counts: &BTreeMap<String, u64>, writes_only: bool) -> u64 {
    let writes = ["create ", "update ", "patch ", "delete "];
    counts.iter().filter(|(k, _)| !writes_only || writes.iter().any(|w| k.starts_with(w))).map(|(_, n)| n).sum()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let machines: usize = if full_run() { 1000 } else { 10 };
    let users = machines.div_ceil(100);
    let server = FakeApiServer::new().unwrap();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let step = Duration::from_millis(if full_run() { 100 } else { 20 });
    let _simulation =
        kite_testkit::sim::start(&server, kite_testkit::sim::SimulationConfig { step, ..Default::default() }).unwrap();
    let address = server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    kite_testkit::kubeconfig::write(&kubeconfig, address).unwrap();
    let client = server.client();
    let mut ns = Namespace::default();
    ns.metadata.name = Some("kite".into());
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    let platform = a_platform();
    Api::<KitePlatform>::all(client.clone())
        .create(&PostParams::default(), &KitePlatform::new(PLATFORM_NAME, platform))
        .await
        .unwrap();

    let probes = free_port_addr();
    let controller = KiteProcess::spawn(
        kite_command()
            .args(["controller", "--no-leader-election", "--namespace", "kite", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--listen", &probes.to_string()])
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
    );
    let pid = controller.0.id();
    let idle_rss = {
        tokio::time::sleep(Duration::from_secs(2)).await;
        rss_kib(pid)
    };
    let namespaces = tenants_with_an_image(&client, users).await;

    server.reset_requests();
    let (created, converged) = converge(&client, &namespaces, machines).await;
    let counts = controller_requests(&server);
    let converged_rss = rss_kib(pid);

    // The minute after: no writes, and no polling (reads only from resyncs).
    server.reset_requests();
    let idle_window = Duration::from_secs(if full_run() { 60 } else { 5 });
    tokio::time::sleep(idle_window).await;
    let idle = controller_requests(&server);
    drop(controller);

    let (all, writes) = (total(&counts, false), total(&counts, true));
    println!("machines: {machines} in {users} namespaces (created in {:.1} s)", created.as_secs_f64());
    println!(
        "| machines | converged in | requests | writes | requests/machine | writes/machine | idle {} s: requests | idle writes | controller RSS idle | with machines | per machine |",
        idle_window.as_secs()
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {machines} | {:.1} s | {all} | {writes} | {:.1} | {:.1} | {} | {} | {:.1} MiB | {:.1} MiB | {:.1} KiB |",
        converged.as_secs_f64(),
        all as f64 / machines as f64,
        writes as f64 / machines as f64,
        total(&idle, false),
        total(&idle, true),
        idle_rss as f64 / 1024.0,
        converged_rss as f64 / 1024.0,
        converged_rss.saturating_sub(idle_rss) as f64 / machines as f64,
    );
    for (when, counts) in [("converging", &counts), ("idle", &idle)] {
        println!("requests by kind while {when}:");
        for (kind, n) in counts {
            println!("  {kind}: {n}");
        }
    }
    assert!(writes > 0 && all >= writes, "the controller made no requests");
}

/// `users` users, once the controller has made their namespaces and
/// imported the golden image machines are cloned from: their namespaces.
async fn tenants_with_an_image(client: &kube::Client, users: usize) -> Vec<String> {
    let user_api: Api<KiteUser> = Api::all(client.clone());
    let mut namespaces = Vec::new();
    for u in 0..users {
        let user = a_user(&format!("user-{u}"));
        namespaces.push(user.spec.namespace.clone());
        user_api.create(&PostParams::default(), &user).await.unwrap();
    }
    let ns_api: Api<Namespace> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    for namespace in &namespaces {
        while ns_api.get_opt(namespace).await.unwrap().is_none() {
            assert!(Instant::now() < deadline, "the tenant namespaces did not appear");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // The golden image must be imported before machines can be cloned from it.
    let platforms: Api<KitePlatform> = Api::all(client.clone());
    loop {
        let ready = platforms
            .get(PLATFORM_NAME)
            .await
            .unwrap()
            .status
            .is_some_and(|s| s.golden_images.iter().all(|i| i.ready) && !s.golden_images.is_empty());
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "the golden image was not imported");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    namespaces
}

/// Creates `machines` machines over `namespaces` and waits until all run:
/// how long creating them took, and how long until all ran.
async fn converge(client: &kube::Client, namespaces: &[String], machines: usize) -> (Duration, Duration) {
    let users = namespaces.len();
    let started = Instant::now();
    let vms = Api::<KiteVirtualMachine>::all(client.clone());
    for m in 0..machines {
        let namespace = &namespaces[m % users];
        let vm = a_vm(&format!("vm-{m}")).with_disk("20Gi").build();
        Api::<KiteVirtualMachine>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &vm)
            .await
            .unwrap();
    }
    let created = started.elapsed();
    let limit = Duration::from_secs(if full_run() { 1200 } else { 120 });
    let converged = loop {
        let running = vms
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|vm| vm.status.as_ref().and_then(|s| s.phase) == Some(VirtualMachinePhase::Running))
            .count();
        if running == machines {
            break started.elapsed();
        }
        assert!(started.elapsed() < limit, "only {running} of {machines} machines ran within {limit:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    (created, converged)
}
