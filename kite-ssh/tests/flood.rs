//! A flood of password guesses (each an argon2 check against the dummy hash,
//! 19 MiB and tens of milliseconds of CPU) must not starve a signed-in
//! user's traffic: checks run on blocking threads, one per core, never on
//! the runtime that carries the sessions. This test is its own binary so
//! that no other test shares the machine's two cores with it.

mod common;

use common::*;
use kite_ssh::RateLimit;
use russh::client::{self, AuthResult};
use russh::keys::PrivateKeyWithHashAlg;
use russh::{Channel, ChannelMsg};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The median of `rounds` one-line round trips through `cat` on `channel`.
async fn median_round_trip(channel: &mut Channel<client::Msg>, rounds: usize) -> Duration {
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let line = format!("ping {round}\n");
        let started = Instant::now();
        channel.data(line.as_bytes()).await.unwrap();
        let mut seen = String::new();
        while !seen.contains(&line) {
            match tokio::time::timeout(Duration::from_secs(30), channel.wait()).await {
                Ok(Some(ChannelMsg::Data { data })) => seen.push_str(&String::from_utf8_lossy(&data)),
                Ok(Some(_)) => {}
                other => panic!("round {round}: no echo: {other:?}"),
            }
        }
        times.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    times.sort();
    times[rounds / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_password_guesses_leaves_another_users_round_trip_within_a_bound() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let user = UserKey::new();
    let mut alice = route("alice", &sshd, &upstream_key);
    alice.authorized_keys = vec![user.key.public_key().clone()];
    // Nothing stops the flood early: no bans, no per-source cap, no delay.
    let options = test_options()
        .with_rate_limit(RateLimit::default().with_failures_per_address(u32::MAX).with_failures_per_login(u32::MAX))
        .with_max_unauthenticated_per_source(10_000)
        .with_rejection_delay(Duration::ZERO)
        .with_max_auth_attempts(1_000);
    let router = RunningRouter::start(static_backend(vec![alice]), options).await;

    let mut handle = client::connect(Arc::new(client::Config::default()), router.address(), AnyHostKey).await.unwrap();
    let key = PrivateKeyWithHashAlg::new(Arc::new(user.key.clone()), None);
    assert!(matches!(handle.authenticate_publickey("alice", key).await.unwrap(), AuthResult::Success));
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, "cat").await.unwrap();
    let quiet = median_round_trip(&mut channel, 15).await;

    // Sixteen clients guess passwords for unknown logins as fast as they are answered.
    let stop = Arc::new(AtomicBool::new(false));
    let guesses = Arc::new(AtomicUsize::new(0));
    let mut flood = tokio::task::JoinSet::new();
    for client_number in 0..16 {
        let (stop, guesses, address) = (stop.clone(), guesses.clone(), router.address());
        flood.spawn(async move {
            let config = Arc::new(client::Config::default());
            let Ok(mut guesser) = client::connect(config, address, AnyHostKey).await else { return };
            let mut attempt = 0;
            while !stop.load(Ordering::SeqCst) {
                attempt += 1;
                let login = format!("nobody{client_number}x{attempt}");
                if guesser.authenticate_password(login, "guess").await.is_err() {
                    return;
                }
                guesses.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    // Let the flood build up, then measure.
    let deadline = Instant::now() + Duration::from_secs(20);
    while guesses.load(Ordering::SeqCst) < 32 {
        assert!(Instant::now() < deadline, "the flood did not get going");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = guesses.load(Ordering::SeqCst);
    let flooded = median_round_trip(&mut channel, 41).await;
    let during = guesses.load(Ordering::SeqCst) - before;
    stop.store(true, Ordering::SeqCst);
    flood.abort_all();
    eprintln!("round trip: {quiet:?} quiet, {flooded:?} during a flood ({during} guesses checked meanwhile)");
    assert!(during >= 10, "the flood checked only {during} guesses while the round trips were measured");
    assert!(
        flooded < Duration::from_millis(100),
        "a flood of password guesses raised another user's round trip to {flooded:?} (quiet: {quiet:?})"
    );
}
