//! Authentication and its safety: the fallback route, rate limits with
//! bans, no delay on the first probe, a delay after failures, and unknown
//! logins that cost as much as known ones.

mod common;

use common::*;
use kite_ssh::backend::HostKeyCheck;
use kite_ssh::{Fallback, RateLimit};
use russh::client::{self, AuthResult};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn client(router: &RunningRouter) -> client::Handle<AnyHostKey> {
    client::connect(Arc::new(client::Config::default()), router.address(), AnyHostKey).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmatched_login_goes_to_the_fallback_with_its_password() {
    let (port, host_key) = password_server("bob", "fallback-pw").await;
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options =
        test_options().with_fallback(Some(Fallback::new(format!("127.0.0.1:{port}"), HostKeyCheck::Pinned(host_key))));
    let router = RunningRouter::start(static_backend(vec![route("alice", &sshd, &upstream_key)]), options).await;
    let ssh = Ssh::to(&router, "bob").password("fallback-pw", "password");
    let output = tokio::task::spawn_blocking(move || ssh.run(&["hostname"])).await.unwrap();
    assert_eq!(text(&output.stdout), "fallback ran: hostname\n", "{}", text(&output.stderr));
    let ssh = Ssh::to(&router, "bob").password("wrong", "password");
    let output = tokio::task::spawn_blocking(move || ssh.run(&["hostname"])).await.unwrap();
    assert_eq!(output.status.code(), Some(255), "a wrong password is refused by the fallback");
    // A login that has a route never goes to the fallback.
    let ssh = Ssh::to(&router, "alice").password("secret", "password");
    let output = tokio::task::spawn_blocking(move || ssh.run(&["echo routed"])).await.unwrap();
    assert_eq!(text(&output.stdout), "routed\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_fallback_unmatched_logins_are_refused() {
    let (port, _) = password_server("bob", "fallback-pw").await;
    let _ = port;
    let router = RunningRouter::start(static_backend(vec![]), test_options()).await;
    let mut handle = client(&router).await;
    assert!(matches!(handle.authenticate_password("bob", "fallback-pw").await.unwrap(), AuthResult::Failure { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_failures_ban_the_login_for_a_while() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_rate_limit(
        RateLimit::default()
            .with_failures_per_address(100)
            .with_failures_per_login(3)
            .with_window(Duration::from_secs(60))
            .with_ban(Duration::from_secs(60))
            .with_tracked(1000),
    );
    let router = RunningRouter::start(static_backend(vec![route("alice", &sshd, &upstream_key)]), options).await;
    for _ in 0..3 {
        let mut handle = client(&router).await;
        assert!(matches!(handle.authenticate_password("alice", "wrong").await.unwrap(), AuthResult::Failure { .. }));
    }
    let mut handle = client(&router).await;
    let result = handle.authenticate_password("alice", "secret").await.unwrap();
    assert!(matches!(result, AuthResult::Failure { .. }), "the right password is refused while the login is banned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_banned_login_still_lets_in_the_address_its_owner_signed_in_from() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let limits = RateLimit::default().with_failures_per_address(100).with_failures_per_login(3);
    let options = test_options().with_rate_limit(limits).with_rejection_delay(Duration::ZERO);
    let router = RunningRouter::start(static_backend(vec![route("alice", &sshd, &upstream_key)]), options).await;
    let mut owner = client(&router).await;
    assert!(matches!(owner.authenticate_password("alice", "secret").await.unwrap(), AuthResult::Success));
    for _ in 0..3 {
        let mut handle = client(&router).await;
        assert!(matches!(handle.authenticate_password("alice", "wrong").await.unwrap(), AuthResult::Failure { .. }));
    }
    let mut handle = client(&router).await;
    let result = handle.authenticate_password("alice", "secret").await.unwrap();
    assert!(matches!(result, AuthResult::Success), "the owner's address is not locked out by others' failures");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_per_connection_are_capped() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_max_auth_attempts(2).with_rejection_delay(Duration::ZERO);
    let router = RunningRouter::start(static_backend(vec![route("alice", &sshd, &upstream_key)]), options).await;
    let mut handle = client(&router).await;
    let mut refused = 0;
    for _ in 0..5 {
        match handle.authenticate_password("alice", "wrong").await {
            Ok(AuthResult::Failure { .. }) => refused += 1,
            _ => break,
        }
    }
    assert!(refused <= 2, "the router let {refused} attempts through on one connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_probe_is_not_delayed_but_a_failure_is() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_rejection_delay(Duration::from_secs(1));
    let router = RunningRouter::start(static_backend(vec![route("alice", &sshd, &upstream_key)]), options).await;
    let mut handle = client(&router).await;
    let started = Instant::now();
    assert!(matches!(handle.authenticate_none("alice").await.unwrap(), AuthResult::Failure { .. }));
    assert!(started.elapsed() < Duration::from_millis(900), "the none probe took {:?}", started.elapsed());
    let started = Instant::now();
    assert!(matches!(handle.authenticate_password("alice", "wrong").await.unwrap(), AuthResult::Failure { .. }));
    assert!(started.elapsed() >= Duration::from_secs(1), "a failure is answered only after the delay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_login_costs_a_password_verification_too() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let mut alice = route("alice", &sshd, &upstream_key);
    // A production-cost hash, as the dummy verification uses.
    alice.password_hash = Some(kite_ssh::password::hash("secret").unwrap());
    let options = test_options().with_rejection_delay(Duration::ZERO);
    let router = RunningRouter::start(static_backend(vec![alice]), options).await;
    let time = |login: &'static str| {
        let address = router.address();
        async move {
            let mut handle = client::connect(Arc::new(client::Config::default()), address, AnyHostKey).await.unwrap();
            let started = Instant::now();
            let _ = handle.authenticate_password(login, "wrong").await.unwrap();
            started.elapsed()
        }
    };
    time("nobody").await; // the dummy hash is made on first use
    let mut known = Duration::ZERO;
    let mut unknown = Duration::ZERO;
    for _ in 0..3 {
        known += time("alice").await;
        unknown += time("nobody").await;
    }
    assert!(
        unknown * 2 >= known,
        "an unknown login took {unknown:?}, a known one {known:?}: unknown names are told apart by timing"
    );
}

/// A raw connection to the router, and whether the router greeted it
/// (`true`: its SSH banner came) or closed it at once (`false`).
async fn greeted(router: &RunningRouter) -> (tokio::net::TcpStream, bool) {
    use tokio::io::AsyncReadExt;
    let mut stream = tokio::net::TcpStream::connect(router.address()).await.unwrap();
    let mut buffer = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer)).await.unwrap().unwrap_or(0);
    (stream, read > 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_have_not_signed_in_are_capped_per_address_and_signed_in_ones_are_not() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_max_unauthenticated_per_source(2).with_rejection_delay(Duration::ZERO);
    let router = RunningRouter::start(static_backend(vec![route("alice", &sshd, &upstream_key)]), options).await;
    // Alice signs in: her connection holds no place.
    let mut alice = client(&router).await;
    assert!(matches!(alice.authenticate_password("alice", "secret").await.unwrap(), AuthResult::Success));
    let (first, greeted_first) = greeted(&router).await;
    let (_second, greeted_second) = greeted(&router).await;
    assert!(greeted_first && greeted_second, "two silent connections from one address are served");
    let (_, greeted_third) = greeted(&router).await;
    assert!(!greeted_third, "a third one that has not signed in is closed without a banner");
    // A silent connection that goes gives its place back.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_stream, served) = greeted(&router).await;
        if served {
            break;
        }
        assert!(Instant::now() < deadline, "the freed place was not given back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Alice's session still works.
    let channel = alice.channel_open_session().await.unwrap();
    channel.exec(true, "true").await.unwrap();
}

/// A client behind a load balancer that speaks the PROXY protocol v2: the
/// header naming `client_address`, then SSH over the same connection.
async fn through_load_balancer(router: &RunningRouter, client_address: &str) -> client::Handle<AnyHostKey> {
    use ppp::v2::{Builder, Command, Protocol, Version};
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(router.address()).await.unwrap();
    let source: std::net::SocketAddr = client_address.parse().unwrap();
    let header = Builder::with_addresses(Version::Two | Command::Proxy, Protocol::Stream, (source, router.address()))
        .build()
        .unwrap();
    stream.write_all(&header).await.unwrap();
    client::connect_stream(Arc::new(client::Config::default()), stream, AnyHostKey).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_load_balancer_each_client_is_limited_by_the_address_its_proxy_header_names() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options()
        .with_proxy_protocol_from(vec!["127.0.0.1/32".parse().unwrap()])
        .with_rate_limit(RateLimit::default().with_failures_per_address(2).with_failures_per_login(100))
        .with_rejection_delay(Duration::ZERO);
    let router = RunningRouter::start(static_backend(vec![route("alice", &sshd, &upstream_key)]), options).await;
    // Mallory guesses from 203.0.113.7 until her address is banned.
    let mut mallory = through_load_balancer(&router, "203.0.113.7:40000").await;
    for _ in 0..2 {
        assert!(matches!(mallory.authenticate_password("alice", "guess").await.unwrap(), AuthResult::Failure { .. }));
    }
    let mut again = through_load_balancer(&router, "203.0.113.7:40001").await;
    assert!(
        matches!(again.authenticate_password("alice", "secret").await.unwrap(), AuthResult::Failure { .. }),
        "the banned address got in"
    );
    // Alice comes through the same load balancer from her own address and is not banned.
    let mut alice = through_load_balancer(&router, "198.51.100.9:50000").await;
    assert!(matches!(alice.authenticate_password("alice", "secret").await.unwrap(), AuthResult::Success));
    // The load balancer must send the header: a connection from it without one is refused.
    let plain = client::connect(Arc::new(client::Config::default()), router.address(), AnyHostKey).await;
    assert!(plain.is_err(), "a connection from the load balancer without a header was served");
}
