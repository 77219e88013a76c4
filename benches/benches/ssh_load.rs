//! Many concurrent sessions through the router (`kite gateway`, its own
//! process), opened by a russh client: the router's resident memory per
//! session, and the session setup time (connect, authenticate, open a
//! channel, start a command) p50 and p99.
//!
//! `cargo bench -p kite-benches --bench ssh_load` opens 1,000 sessions;
//! under `cargo test` it opens a few.

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

async fn open(port: u16, key: Arc<russh::keys::PrivateKey>) -> Result<Session, String> {
    let config = Arc::new(client::Config::default());
    let mut handle = client::connect(config, ("127.0.0.1", port), AnyHostKey).await.map_err(|e| e.to_string())?;
    let auth = handle
        .authenticate_publickey("bench", PrivateKeyWithHashAlg::new(key, None))
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

#[tokio::main]
async fn main() {
    let full = full_run();
    let sessions = if full { 1000 } else { 3 };
    let (sshd, upstream_key, _key_path, _dir) = bench_sshd();
    let gateway = Gateway::start(&sshd, &upstream_key);
    let key = Arc::new(russh::keys::load_secret_key(&gateway.user_key, None).unwrap());
    // One session first, so the baseline includes what the first connection allocates once.
    let warm = open(gateway.port, key.clone()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = gateway.rss_kib();
    // sshd throttles concurrent unauthenticated connections (MaxStartups), so open 50 at a time.
    let limit = Arc::new(Semaphore::new(50));
    let mut tasks = Vec::new();
    for _ in 0..sessions {
        let (limit, key, port) = (limit.clone(), key.clone(), gateway.port);
        tasks.push(tokio::spawn(async move {
            let _permit = limit.acquire_owned().await.unwrap();
            let started = Instant::now();
            let session = open(port, key).await;
            (started.elapsed(), session)
        }));
    }
    let mut setups = Vec::new();
    let mut open_sessions = Vec::new();
    for task in tasks {
        let (elapsed, session) = task.await.unwrap();
        match session {
            Ok(session) => {
                setups.push(elapsed);
                open_sessions.push(session);
            }
            Err(error) => panic!("a session failed to open: {error}"),
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = gateway.rss_kib();
    setups.sort();
    let per_session = (after.saturating_sub(before)) as f64 / sessions as f64;
    println!(
        "SSH load ({} run): {sessions} concurrent sessions through kite gateway",
        if full { "full" } else { "smoke" }
    );
    println!("| sessions | router RSS before | router RSS after | per session | setup p50 | setup p99 |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {sessions} | {:.1} MiB | {:.1} MiB | {per_session:.0} KiB | {:.1} ms | {:.1} ms |",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        percentile(&setups, 50).as_secs_f64() * 1e3,
        percentile(&setups, 99).as_secs_f64() * 1e3
    );
    drop(open_sessions);
    drop(warm);
    drop(gateway);
}
