//! What users see when the machine is not there: a backend that is
//! starting, down then up, killed mid-session, or showing the wrong host
//! key; and what stays the same across a router restart.

mod common;

use common::*;
use kite_ssh::Messages;
use kite_ssh::backend::{Backend, HostKeyCheck, Readiness, Route, Upstream, UpstreamAuth};
use russh::keys::{PrivateKey, PublicKey};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A backend with one login (`vm`, password `secret`) whose readiness the test sets.
#[derive(Clone)]
struct Switchable {
    readiness: Arc<Mutex<Readiness>>,
}

impl Switchable {
    fn new(readiness: Readiness) -> Self {
        Self { readiness: Arc::new(Mutex::new(readiness)) }
    }

    fn set(&self, readiness: Readiness) {
        *self.readiness.lock().unwrap() = readiness;
    }
}

impl Backend for Switchable {
    async fn resolve(&self, login: &str) -> Option<Route> {
        (login == "vm").then(|| Route::new("test/vm"))
    }
    async fn check_password(&self, _route: &Route, password: &str) -> bool {
        password == "secret"
    }
    async fn check_public_key(&self, _route: &Route, _key: &PublicKey) -> bool {
        false
    }
    async fn upstream(&self, _route: &Route) -> Readiness {
        self.readiness.lock().unwrap().clone()
    }
}

fn ready(address: String, key: &PrivateKey, host_key: HostKeyCheck) -> Readiness {
    Readiness::Ready(Upstream::new(address, "root", UpstreamAuth::Key(Arc::new(key.clone())), host_key))
}

const STARTING: &str = "VirtualMachine is starting its SSH server; retry in a moment.";

fn starting() -> Readiness {
    Readiness::Starting { message: STARTING.into() }
}

async fn run(router: &RunningRouter, remote: &'static str) -> std::process::Output {
    let ssh = Ssh::to(router, "vm").password("secret", "password");
    tokio::task::spawn_blocking(move || ssh.run(&[remote])).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starting_backend_shows_progress_then_the_session_runs() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let backend = Switchable::new(starting());
    let router = RunningRouter::start(backend.clone(), test_options()).await;
    let later = backend.clone();
    let (address, host) = (sshd.address(), HostKeyCheck::Pinned(sshd.host_key.public_key().clone()));
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        later.set(ready(address, &upstream_key, host));
    });
    let output = run(&router, "echo booted").await;
    assert_eq!(text(&output.stdout), "booted\n", "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains(&format!("kite: {STARTING}")), "{}", text(&output.stderr));
    assert_eq!(output.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_never_starts_gets_a_clear_last_line_and_a_failing_exit() {
    let router = RunningRouter::start(Switchable::new(starting()), test_options()).await;
    let started = Instant::now();
    let output = run(&router, "echo never").await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(255));
    assert!(stderr.trim_end().ends_with(&format!("kite: {STARTING}")), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "the router gives up after its starting timeout");
    assert!(text(&output.stdout).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_backend_says_why_at_once() {
    let message = "VirtualMachine is stopped; start it from the dashboard, then connect again.";
    let router =
        RunningRouter::start(Switchable::new(Readiness::Unavailable { message: message.into() }), test_options()).await;
    let output = run(&router, "true").await;
    assert_eq!(output.status.code(), Some(255));
    assert_eq!(text(&output.stderr).trim(), format!("kite: {message}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_is_down_then_comes_up_is_reached_without_internal_errors_shown() {
    let upstream_key = new_key();
    let port = free_port();
    let host_key = new_key();
    let backend = Switchable::new(ready(
        format!("127.0.0.1:{port}"),
        &upstream_key,
        HostKeyCheck::Pinned(host_key.public_key().clone()),
    ));
    let router = RunningRouter::start(backend, test_options()).await;
    let public = upstream_key.public_key().clone();
    let starter = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(800));
        Sshd::start_with(&public, host_key, port)
    });
    let output = run(&router, "echo up").await;
    let _sshd = starter.await.unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(text(&output.stdout), "up\n", "{stderr}");
    assert!(stderr.contains(&Messages::default().not_accepting), "{stderr}");
    for internal in ["refused", "127.0.0.1", "os error"] {
        assert!(!stderr.contains(internal), "internal detail {internal:?} shown to the user: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_upstream_host_key_refuses_the_connection_with_a_clear_message() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let impostor = new_key();
    let backend =
        Switchable::new(ready(sshd.address(), &upstream_key, HostKeyCheck::Pinned(impostor.public_key().clone())));
    let router = RunningRouter::start(backend, test_options()).await;
    let output = run(&router, "echo should-not-run").await;
    assert_eq!(output.status.code(), Some(255));
    assert_eq!(text(&output.stderr).trim(), format!("kite: {}", Messages::default().host_key_mismatch));
    assert!(text(&output.stdout).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_killed_mid_session_ends_only_its_own_sessions() {
    let upstream_key = new_key();
    let (sshd_a, sshd_b) = (Sshd::start(upstream_key.public_key()), Sshd::start(upstream_key.public_key()));
    let relay = Relay::start(sshd_a.address()).await;
    let mut alice = route("alice", &sshd_a, &upstream_key);
    alice.upstream = relay.address();
    let bob = route("bob", &sshd_b, &upstream_key);
    let router = RunningRouter::start(static_backend(vec![alice, bob]), test_options()).await;
    let (alice_ssh, bob_ssh) = (
        Ssh::to(&router, "alice").password("secret", "password"),
        Ssh::to(&router, "bob").password("secret", "password"),
    );
    let alice_run = tokio::task::spawn_blocking(move || alice_ssh.run(&["echo started; sleep 30"]));
    let bob_run = tokio::task::spawn_blocking(move || bob_ssh.run(&["sleep 2; echo bob-ok"]));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    relay.cut();
    let alice_out = alice_run.await.unwrap();
    let bob_out = bob_run.await.unwrap();
    assert_ne!(alice_out.status.code(), Some(0), "the killed backend's session ends");
    assert_eq!(
        text(&bob_out.stdout),
        "bob-ok\n",
        "the other backend's session is unaffected: {}",
        text(&bob_out.stderr)
    );
    assert_eq!(bob_out.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_router_keeps_its_host_key() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("gateway_host_ed25519_key");
    let known_hosts = dir.path().join("known_hosts");
    let backend = static_backend(vec![route("alice", &sshd, &upstream_key)]);
    for (round, checking) in [(1, "accept-new"), (2, "yes")] {
        let key = kite_ssh::host_key::load_or_generate(&key_path).unwrap();
        let router = RunningRouter::start_with_key(backend.clone(), test_options(), key).await;
        // The port changes between rounds; the alias keeps one known_hosts entry.
        let mut ssh = Ssh::to(&router, "alice").password("secret", "password").opt("HostKeyAlias=kite-gateway");
        for arg in ssh.args.iter_mut() {
            if arg.starts_with("StrictHostKeyChecking=") {
                *arg = format!("StrictHostKeyChecking={checking}");
            } else if arg.starts_with("UserKnownHostsFile=") {
                *arg = format!("UserKnownHostsFile={}", known_hosts.display());
            }
        }
        let output = tokio::task::spawn_blocking(move || ssh.run(&["echo round"])).await.unwrap();
        assert_eq!(text(&output.stdout), "round\n", "round {round}: {}", text(&output.stderr));
        router.stop().await;
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_sequential_sessions_leak_no_tasks_or_file_descriptors() {
    let s = setup().await;
    let (router, user) = (&s.router, &s.user);
    let run_once = |ssh: Ssh| async move { tokio::task::spawn_blocking(move || ssh.run(&["true"])).await.unwrap() };
    // Warm up, so lazily created runtime resources are counted as the baseline.
    assert!(run_once(Ssh::to(router, "alice").key(user)).await.status.success());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let (tasks_before, fds_before) = (metrics.num_alive_tasks(), open_fds());
    for i in 0..100 {
        let output = run_once(Ssh::to(router, "alice").key(user)).await;
        assert!(output.status.success(), "session {i}: {}", text(&output.stderr));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (tasks, fds) = (metrics.num_alive_tasks(), open_fds());
        if tasks <= tasks_before + 2 && fds <= fds_before + 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after 100 sessions: {tasks} tasks (was {tasks_before}), {fds} fds (was {fds_before})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_refused_and_a_silent_client_is_dropped() {
    use tokio::io::AsyncReadExt;
    let options = test_options().with_max_connections(1).with_handshake_timeout(Duration::from_millis(500));
    let router = RunningRouter::start(static_backend(vec![]), options).await;
    // The first connection says nothing: it holds the only slot until the handshake timeout drops it.
    let mut silent = tokio::net::TcpStream::connect(router.address()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut second = tokio::net::TcpStream::connect(router.address()).await.unwrap();
    let mut buffer = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), second.read(&mut buffer)).await.unwrap().unwrap_or(0);
    assert_eq!(read, 0, "a connection over the cap is closed without an SSH banner");
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        let n = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buffer)).await.unwrap().unwrap_or(0);
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..n]);
    }
    assert!(seen.starts_with(b"SSH-2.0-kite-ssh"), "{:?}", String::from_utf8_lossy(&seen));
    assert!(started.elapsed() < Duration::from_secs(4), "the silent client was dropped after the handshake timeout");
}
