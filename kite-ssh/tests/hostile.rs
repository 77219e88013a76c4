//! Hostile users and machines: a client that holds a channel's requests and
//! input without bound, opens channels without bound or never starts its
//! session, and a machine that never closes what its user has left. Each is
//! driven with a russh client or the real sshd, on loopback, bounded in time.

mod common;

use common::*;
use kite_ssh::Messages;
use kite_ssh::RouterOptions;
use russh::client::{self};
use russh::{Channel, ChannelMsg};
use std::time::Duration;
use tokio::time::Instant;

/// A router with one route `alice` to `sshd` (with `options`), and alice's key.
async fn router_to(
    sshd: &Sshd,
    upstream_key: &russh::keys::PrivateKey,
    options: RouterOptions,
) -> (RunningRouter, UserKey) {
    let user = UserKey::new();
    let mut alice = route("alice", sshd, upstream_key);
    alice.authorized_keys = vec![user.key.public_key().clone()];
    (RunningRouter::start(static_backend(vec![alice]), options).await, user)
}

/// What the channel's stderr said before it closed; panics if it did not close within `limit`.
async fn stderr_until_closed(channel: &mut Channel<client::Msg>, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    let mut stderr = String::new();
    loop {
        match tokio::time::timeout_at(deadline, channel.wait()).await {
            Err(_) => panic!("the channel was still open after {limit:?}; its stderr said {stderr:?}"),
            Ok(None | Some(ChannelMsg::Close)) => return stderr,
            Ok(Some(ChannelMsg::ExtendedData { data, .. })) => stderr.push_str(&String::from_utf8_lossy(&data)),
            Ok(Some(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_held_before_a_session_starts_are_bounded_in_number_and_in_bytes() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let (router, user) = router_to(&sshd, &upstream_key, test_options()).await;
    let handle = signed_in(&router, &user).await;
    // Many small requests.
    let mut many = handle.channel_open_session().await.unwrap();
    for i in 0..400 {
        if many.set_env(false, format!("V{i}"), "x").await.is_err() {
            break;
        }
    }
    let said = stderr_until_closed(&mut many, Duration::from_secs(10)).await;
    assert!(said.contains(&Messages::default().too_much_before_start), "{said:?}");
    // A few big ones (16 KiB each, 80 of them: past 1 MiB).
    let mut big = handle.channel_open_session().await.unwrap();
    let value = "v".repeat(16 * 1024);
    for i in 0..80 {
        if big.set_env(false, format!("B{i}"), value.clone()).await.is_err() {
            break;
        }
    }
    let said = stderr_until_closed(&mut big, Duration::from_secs(10)).await;
    assert!(said.contains(&Messages::default().too_much_before_start), "{said:?}");
    // The connection itself is fine: a session that behaves still runs.
    let mut fine = handle.channel_open_session().await.unwrap();
    fine.exec(true, "echo still-served").await.unwrap();
    read_until(&mut fine, "still-served").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_held_while_the_machine_is_connecting_are_bounded() {
    let user = UserKey::new();
    let upstream_key = new_key();
    // A machine that never answers (its port is held, nothing speaks SSH on
    // it): the router retries for 30 s.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut alice = kite_ssh::StaticRoute {
        upstream: silent.local_addr().unwrap().to_string(),
        upstream_host_key: kite_ssh::backend::HostKeyCheck::InsecureAcceptAny,
        ..route("alice", &Sshd::start(upstream_key.public_key()), &upstream_key)
    };
    alice.authorized_keys = vec![user.key.public_key().clone()];
    let options = test_options().with_starting_timeout(Duration::from_secs(30));
    let router = RunningRouter::start(static_backend(vec![alice]), options).await;
    let handle = signed_in(&router, &user).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(false, "true").await.unwrap();
    let started = Instant::now();
    for _ in 0..400 {
        if channel.window_change(80, 24, 0, 0).await.is_err() {
            break;
        }
    }
    let said = stderr_until_closed(&mut channel, Duration::from_secs(15)).await;
    assert!(said.contains(&Messages::default().too_much_before_start), "{said:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "closed only after {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_channel_that_never_starts_is_closed_with_a_sentence() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_session_start_timeout(Duration::from_secs(1));
    let (router, user) = router_to(&sshd, &upstream_key, options).await;
    let handle = signed_in(&router, &user).await;
    let mut idle = handle.channel_open_session().await.unwrap();
    let said = stderr_until_closed(&mut idle, Duration::from_secs(10)).await;
    assert!(said.contains(&Messages::default().not_started_in_time), "{said:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_opens_at_most_its_channels() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_max_channels_per_connection(3);
    let (router, user) = router_to(&sshd, &upstream_key, options).await;
    let handle = signed_in(&router, &user).await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(handle.channel_open_session().await.expect("three channels are allowed"));
    }
    assert!(handle.channel_open_session().await.is_err(), "a fourth session channel was opened");
    assert!(
        handle.channel_open_direct_tcpip("127.0.0.1", 9, "127.0.0.1", 5).await.is_err(),
        "a forward past the cap was opened"
    );
    // A session that ends gives its place back.
    let mut first = open.remove(0);
    first.exec(true, "true").await.unwrap();
    let _ = stderr_until_closed(&mut first, Duration::from_secs(10)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while handle.channel_open_session().await.is_err() {
        assert!(Instant::now() < deadline, "the ended session's place was not given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A command that never ends and ignores the loss of its input and output:
/// sshd closes a session's channel only when its process has exited, so
/// the machine keeps the channel open after the user closed it.
const NEVER_ENDS: &str = "echo ready; exec sleep 60 </dev/null >/dev/null 2>&1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_that_never_closes_a_channel_does_not_keep_its_place_once_the_user_closed_it() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_max_channels_per_connection(2).with_close_grace(Duration::from_millis(300));
    let (router, user) = router_to(&sshd, &upstream_key, options).await;
    let handle = signed_in(&router, &user).await;
    for round in 0..4 {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut channel = loop {
            match handle.channel_open_session().await {
                Ok(channel) => break channel,
                Err(error) => {
                    assert!(Instant::now() < deadline, "round {round}: no place came back: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        channel.exec(true, NEVER_ENDS).await.unwrap();
        read_until(&mut channel, "ready").await;
        channel.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_that_never_closes_is_let_go_when_its_user_leaves() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let options = test_options().with_close_grace(Duration::from_millis(300));
    let (router, user) = router_to(&sshd, &upstream_key, options).await;
    let handle = signed_in(&router, &user).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, NEVER_ENDS).await.unwrap();
    read_until(&mut channel, "ready").await;
    drop(channel);
    handle.disconnect(russh::Disconnect::ByApplication, "", "en").await.unwrap();
    drop(handle);
    // sshd logs the router's login, and its going once the router lets go.
    let gone = |log: String| {
        let after_login = log.split_once("Accepted publickey for root").map(|(_, after)| after.to_string());
        after_login.is_some_and(|after| {
            ["Disconnected from", "Connection closed by", "Connection reset by"].iter().any(|end| after.contains(end))
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !gone(sshd.log()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the router kept its connection to the machine after its user left:\n{}",
            sshd.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
