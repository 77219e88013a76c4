//! `kite api` under load: 1,000 users and 2,000 machines in its caches
//! (kite-testkit's API server, in this process), served on loopback.
//!
//! 1. **Sign-in**: 100 clients sign in at once (argon2id, one hash per core
//!    at a time, a few waiting, `503` past that: a refused client tries again
//!    after 100 ms). Reports sign-ins per second, the refusals, and the
//!    hashing queue's wait as the API recorded it.
//! 2. **Reads**: the 100 signed-in clients each read `GET /api/v1/vms` and
//!    the dashboard's machine rows (`GET /fragments/vms`) in turn. Reports
//!    p50/p99 of each and the requests the API made to the API server
//!    meanwhile, which must be none: every read path answers from the caches.
//!
//! `cargo bench -p kite-benches --bench api_load` runs it in full; under
//! `cargo test` it runs 20 users, 40 machines and 10 clients.

mod common;

use common::full_run;
use k8s_openapi::api::core::v1::Namespace;
use kite_bin::api::{Options, state};
use kite_bin::app::{app, serve};
use kite_core::api::*;
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::{a_user, a_vm};
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

const PASSWORD: &str = "bench-password";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (users, per_user, clients, reads_each) = if full_run() { (1000, 2, 100, 50) } else { (20, 2, 10, 5) };
    let server = FakeApiServer::new().unwrap();
    fill(&server, users, per_user).await;

    let options =
        Options { secure_cookies: false, trusted_proxies: Vec::new(), first_signup_is_admin: false, gateway: None };
    let state = state(server.client(), "kite", options).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !state.synced() {
        assert!(Instant::now() < deadline, "the API's caches did not sync within 60 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let api = tokio::spawn(serve(listener, app(state.clone()).unwrap(), async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::builder().pool_max_idle_per_host(clients).build().unwrap();

    // 1. Sign-in.
    let started = Instant::now();
    let signed_in = sign_in(&http, &base, clients).await;
    let signing = started.elapsed();
    let waits = state.hashing.queue_wait();

    // 2. Reads, with the API server's request log reset: the caches must answer.
    server.reset_requests();
    let started = Instant::now();
    let (list, rows) = read(&http, &base, signed_in.tokens.clone(), reads_each).await;
    let reading_took = started.elapsed();
    let upstream = server.request_counts();
    let _ = stop.send(());
    let _ = api.await;

    println!();
    println!(
        "| clients | sign-ins/s | sign-in p50 | p99 | refused (503, retried) | hashing queue: mean wait | longest |"
    );
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| {clients} | {:.1} | {} | {} | {} | {} | {} |",
        clients as f64 / signing.as_secs_f64(),
        ms(percentile(&signed_in.times, 0.5)),
        ms(percentile(&signed_in.times, 0.99)),
        signed_in.refusals,
        ms(waits.mean()),
        ms(waits.longest),
    );
    println!();
    println!("| read | requests | p50 | p99 | requests/s (both, all clients) | API-server requests meanwhile |");
    println!("|---|---|---|---|---|---|");
    let rate = (list.len() + rows.len()) as f64 / reading_took.as_secs_f64();
    let upstream_total: u64 = upstream.values().sum();
    for (name, times) in [("GET /api/v1/vms", &list), ("GET /fragments/vms", &rows)] {
        println!(
            "| {name} | {} | {} | {} | {rate:.0} | {upstream_total} |",
            times.len(),
            ms(percentile(times, 0.5)),
            ms(percentile(times, 0.99)),
        );
    }
    assert_eq!(upstream_total, 0, "a read path asked the API server: {upstream:?}");
}

/// The platform namespace, `users` accounts (one password hash for all:
/// hashing 1,000 would only slow the set-up) and `per_user` machines each.
async fn fill(server: &FakeApiServer, users: usize, per_user: usize) {
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let client = server.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut kite = Namespace::default();
    kite.metadata.name = Some("kite".into());
    namespaces.create(&PostParams::default(), &kite).await.unwrap();
    let hash = kite_ssh::password::hash(PASSWORD).unwrap();
    let filled = Instant::now();
    for u in 0..users {
        let mut user = a_user(&format!("user-{u}"));
        user.spec.password = hash.clone();
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some(user.spec.namespace.clone());
        namespaces.create(&PostParams::default(), &namespace).await.unwrap();
        Api::<KiteUser>::all(client.clone()).create(&PostParams::default(), &user).await.unwrap();
        let machines: Api<KiteVirtualMachine> = Api::namespaced(client.clone(), &user.spec.namespace);
        for m in 0..per_user {
            let vm = a_vm(&format!("vm-{m}")).with_ssh_id(&format!("u{u}_vm{m}")).build();
            machines.create(&PostParams::default(), &vm).await.unwrap();
        }
    }
    println!("users: {users}, machines: {} (made in {:.1} s)", users * per_user, filled.elapsed().as_secs_f64());
}

/// What signing `clients` in at once gave: their tokens, how often they
/// were refused (and retried), and how long each took.
struct SignedIn {
    tokens: Vec<String>,
    refusals: u32,
    times: Vec<Duration>,
}

/// Signs the first `clients` users in at once; a refused one (`503`) tries again after 100 ms.
async fn sign_in(http: &reqwest::Client, base: &str, clients: usize) -> SignedIn {
    let mut signing_in = Vec::new();
    for c in 0..clients {
        let (http, base) = (http.clone(), base.to_string());
        signing_in.push(tokio::spawn(async move {
            let body = json!({ "email": format!("user-{c}@example.org"), "password": PASSWORD });
            let (mut refused, began) = (0u32, Instant::now());
            loop {
                let answer = http.post(format!("{base}/api/v1/auth/login")).json(&body).send().await.unwrap();
                match answer.status().as_u16() {
                    200 => {
                        let token =
                            answer.json::<serde_json::Value>().await.unwrap()["token"].as_str().unwrap().to_string();
                        return (token, refused, began.elapsed());
                    }
                    503 => {
                        refused += 1;
                        assert!(began.elapsed() < Duration::from_secs(120), "sign-in refused for two minutes");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    other => panic!("sign-in answered {other}: {}", answer.text().await.unwrap_or_default()),
                }
            }
        }));
    }
    let mut signed_in = SignedIn { tokens: Vec::new(), refusals: 0, times: Vec::new() };
    for task in signing_in {
        let (token, refused, took) = task.await.unwrap();
        signed_in.tokens.push(token);
        signed_in.refusals += refused;
        signed_in.times.push(took);
    }
    signed_in.times.sort();
    signed_in
}

/// Each signed-in client reads the machine list and the dashboard's rows
/// `reads_each` times in turn; the times of each, sorted.
async fn read(
    http: &reqwest::Client,
    base: &str,
    tokens: Vec<String>,
    reads_each: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut reading = Vec::new();
    for token in tokens {
        let (http, base) = (http.clone(), base.to_string());
        reading.push(tokio::spawn(async move {
            let (mut list, mut rows) = (Vec::new(), Vec::new());
            for _ in 0..reads_each {
                for (path, times) in [("/api/v1/vms", &mut list), ("/fragments/vms", &mut rows)] {
                    let began = Instant::now();
                    let answer = http.get(format!("{base}{path}")).bearer_auth(&token).send().await.unwrap();
                    let status = answer.status();
                    let body = answer.text().await.unwrap();
                    times.push(began.elapsed());
                    assert!(status.is_success() && body.contains("vm-1"), "{path} answered {status}: {body}");
                }
            }
            (list, rows)
        }));
    }
    let (mut list, mut rows) = (Vec::new(), Vec::new());
    for task in reading {
        let (l, r) = task.await.unwrap();
        list.extend(l);
        rows.extend(r);
    }
    list.sort();
    rows.sort();
    (list, rows)
}
