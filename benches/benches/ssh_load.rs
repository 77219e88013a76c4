//! Many concurrent sessions through the router (`kite gateway`, its own
//! process), opened by a russh client 50 at a time: the router's resident
//! memory per idle session, and the session setup time (connect,
//! authenticate, open a channel, start a command, first output) p50 and
//! p99, through the router and, in the same run, straight to the same
//! upstream. The upstream is not sshd but a russh server in this process
//! ([`EchoUpstream`]), so that the difference is the router's own share
//! and not sshd's fork and exec per connection.
//!
//! `cargo bench -p kite-benches --bench ssh_load` opens 1,000 sessions each
//! way; under `cargo test` it opens a few.

mod common;

use common::*;
use russh::client::{self, AuthResult};
use russh::keys::{PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

struct AnyHostKey;

impl client::Handler for AnyHostKey {
    type Error = russh::Error;
    async fn check_server_key(&mut self, _key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        Ok(true)
    }
}

type Session = (client::Handle<AnyHostKey>, russh::Channel<client::Msg>);

/// Where sessions are opened: an address, the user and the key.
#[derive(Clone)]
struct Target {
    address: std::net::SocketAddr,
    user: &'static str,
    key: Arc<russh::keys::PrivateKey>,
}

async fn open(target: Target) -> Result<Session, String> {
    let config = Arc::new(client::Config::default());
    let mut handle = client::connect(config, target.address, AnyHostKey).await.map_err(|e| e.to_string())?;
    let auth = handle
        .authenticate_publickey(target.user, PrivateKeyWithHashAlg::new(target.key, None))
        .await
        .map_err(|e| e.to_string())?;
    if !matches!(auth, AuthResult::Success) {
        return Err("authentication failed".into());
    }
    let mut channel = handle.channel_open_session().await.map_err(|e| e.to_string())?;
    channel.exec(true, "echo up; exec cat").await.map_err(|e| e.to_string())?;
    // The session is up once the command's first output arrives.
    loop {
        match tokio::time::timeout(Duration::from_secs(60), channel.wait()).await {
            Ok(Some(russh::ChannelMsg::Data { .. })) => return Ok((handle, channel)),
            Ok(Some(_)) => continue,
            Ok(None) => return Err("the channel closed".into()),
            Err(_) => return Err("no output within 60 s".into()),
        }
    }
}

/// Opens `count` sessions to `target`, 50 at a time; returns them with their setup times, sorted.
async fn open_many(target: &Target, count: usize) -> (Vec<Session>, Vec<Duration>) {
    let limit = Arc::new(Semaphore::new(50));
    let mut tasks = Vec::new();
    for _ in 0..count {
        let (limit, target) = (limit.clone(), target.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = limit.acquire_owned().await.unwrap();
            let started = Instant::now();
            let session = open(target).await;
            (started.elapsed(), session)
        }));
    }
    let mut setups = Vec::new();
    let mut sessions = Vec::new();
    for task in tasks {
        let (elapsed, session) = task.await.unwrap();
        match session {
            Ok(session) => {
                setups.push(elapsed);
                sessions.push(session);
            }
            Err(error) => panic!("a session failed to open: {error}"),
        }
    }
    setups.sort();
    (sessions, setups)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    let full = full_run();
    let sessions = if full { 1000 } else { 3 };
    let upstream = EchoUpstream::start().await;
    let gateway =
        Gateway::start_to(&upstream.address.to_string(), upstream.host_key.public_key(), &upstream.client_key);
    let direct = Target { address: upstream.address, user: "root", key: Arc::new(upstream.client_key.clone()) };
    let user_key = russh::keys::load_secret_key(&gateway.user_key, None).unwrap();
    let routed = Target { address: loopback(gateway.port), user: "bench", key: Arc::new(user_key) };

    // Straight to the upstream first, then closed, so both runs find the same idle upstream.
    let (opened, direct_setups) = open_many(&direct, sessions).await;
    drop(opened);
    tokio::time::sleep(Duration::from_millis(500)).await;

    // One session first, so the baseline includes what the first connection allocates once.
    let warm = open(routed.clone()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = gateway.rss_kib();
    let (open_sessions, routed_setups) = open_many(&routed, sessions).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = gateway.rss_kib();
    let per_session = (after.saturating_sub(before)) as f64 / sessions as f64;
    println!(
        "SSH load ({} run): {sessions} concurrent sessions, opened 50 at a time, to a russh upstream",
        if full { "full" } else { "smoke" }
    );
    println!("| sessions | router RSS before | router RSS after | per session |");
    println!("|---|---|---|---|");
    println!(
        "| {sessions} | {:.1} MiB | {:.1} MiB | {per_session:.0} KiB |",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
    );
    println!("| setup | p50 | p99 |");
    println!("|---|---|---|");
    let (d50, d99) = (percentile(&direct_setups, 50), percentile(&direct_setups, 99));
    let (r50, r99) = (percentile(&routed_setups, 50), percentile(&routed_setups, 99));
    println!("| straight to the upstream | {:.1} ms | {:.1} ms |", ms(d50), ms(d99));
    println!("| through kite gateway | {:.1} ms | {:.1} ms |", ms(r50), ms(r99));
    println!("| the router's share | {:+.1} ms | {:+.1} ms |", ms(r50) - ms(d50), ms(r99) - ms(d99));
    drop(open_sessions);
    drop(warm);
    drop(gateway);
}
