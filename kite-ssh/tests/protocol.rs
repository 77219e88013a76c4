//! Protocol details OpenSSH's client cannot be told to send, driven with a
//! russh client: signals, window changes, exit signals, keepalives, and
//! refusals of what the router does not support.

mod common;

use common::*;
use russh::client::{self, AuthResult};
use russh::keys::PrivateKeyWithHashAlg;
use russh::{ChannelMsg, Sig};
use std::sync::Arc;
use std::time::Duration;

async fn connect(s: &Setup) -> client::Handle<AnyHostKey> {
    let config = Arc::new(client::Config::default());
    let mut handle = client::connect(config, s.router.address(), AnyHostKey).await.unwrap();
    let key = PrivateKeyWithHashAlg::new(Arc::new(s.user.key.clone()), None);
    assert!(matches!(handle.authenticate_publickey("alice", key).await.unwrap(), AuthResult::Success));
    handle
}

/// Collects stdout until `needle` shows up or 10 s pass.
async fn read_until(channel: &mut russh::Channel<client::Msg>, needle: &str, seen: &mut String) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !seen.contains(needle) {
        let message = tokio::time::timeout_at(deadline, channel.wait())
            .await
            .unwrap_or_else(|_| panic!("no {needle:?} in {seen:?}"));
        match message {
            Some(ChannelMsg::Data { data }) => seen.push_str(&String::from_utf8_lossy(&data)),
            Some(_) => {}
            None => panic!("the channel closed before {needle:?}; saw {seen:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_changes_reach_the_pty() {
    let s = setup().await;
    let handle = connect(&s).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.request_pty(true, "xterm", 80, 24, 0, 0, &[]).await.unwrap();
    channel.exec(true, "stty size; read line; stty size").await.unwrap();
    let mut seen = String::new();
    read_until(&mut channel, "24 80", &mut seen).await;
    channel.window_change(100, 40, 0, 0).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    channel.data(&b"go\n"[..]).await.unwrap();
    read_until(&mut channel, "40 100", &mut seen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_request_reaches_the_machine() {
    let s = setup().await;
    let handle = connect(&s).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, "echo ready; exec sleep 5").await.unwrap();
    let mut seen = String::new();
    read_until(&mut channel, "ready", &mut seen).await;
    channel.signal(Sig::TERM).await.unwrap();
    // sshd refuses to signal a root session (it needs privilege separation for
    // that), and says so in its log: proof that the request went through.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !s.sshd.log().contains("session_signal_req") {
        assert!(std::time::Instant::now() < deadline, "the signal request never reached sshd:\n{}", s.sshd.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_signal_comes_back_before_close() {
    let s = setup().await;
    let handle = connect(&s).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, "kill -TERM $$").await.unwrap();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, channel.wait()).await {
        match message {
            ChannelMsg::ExitSignal { signal_name, .. } => events.push(format!("exit-signal {signal_name:?}")),
            ChannelMsg::ExitStatus { exit_status } => events.push(format!("exit-status {exit_status}")),
            ChannelMsg::Close => {
                events.push("close".into());
                break;
            }
            _ => {}
        }
    }
    assert_eq!(events, ["exit-signal TERM", "close"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_status_comes_before_close_and_eof_alone_does_not_close() {
    let s = setup().await;
    let handle = connect(&s).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, "cat; echo after-eof; exit 4").await.unwrap();
    channel.data(&b"input\n"[..]).await.unwrap();
    channel.eof().await.unwrap();
    let mut order = Vec::new();
    let mut output = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, channel.wait()).await {
        match message {
            ChannelMsg::Data { data } => output.push_str(&String::from_utf8_lossy(&data)),
            ChannelMsg::ExitStatus { exit_status } => order.push(format!("exit-status {exit_status}")),
            ChannelMsg::Eof => order.push("eof".into()),
            ChannelMsg::Close => {
                order.push("close".into());
                break;
            }
            _ => {}
        }
    }
    assert_eq!(output, "input\nafter-eof\n", "output after the client's EOF still arrives");
    let status = order.iter().position(|e| e == "exit-status 4").expect("an exit status");
    assert!(status < order.iter().position(|e| e == "close").unwrap(), "{order:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalives_are_answered_and_x11_is_refused_cleanly() {
    let s = setup().await;
    let handle = connect(&s).await;
    handle.send_keepalive(true).await.unwrap();
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.request_x11(true, false, "MIT-MAGIC-COOKIE-1", "00", 0).await.unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), channel.wait()).await.unwrap();
    assert!(matches!(reply, Some(ChannelMsg::Failure)), "{reply:?}");
    // The connection is still fine after both.
    channel.exec(true, "echo still-here").await.unwrap();
    let mut seen = String::new();
    read_until(&mut channel, "still-here", &mut seen).await;
    assert!(!handle.is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_sender_to_a_slow_reader_does_not_grow_the_routers_memory() {
    let s = setup().await;
    let handle = connect(&s).await;
    let channel = handle.channel_open_session().await.unwrap();
    // The machine reads nothing for 3 s, then drains.
    channel.exec(true, "sleep 3; cat > /dev/null; echo drained").await.unwrap();
    let rss_before = resident_kib();
    let chunk = vec![7u8; 1 << 20];
    let sender = tokio::spawn(async move {
        for _ in 0..64 {
            channel.data(&chunk[..]).await.unwrap();
        }
        channel.eof().await.unwrap();
        channel
    });
    let mut peak = rss_before;
    while !sender.is_finished() {
        peak = peak.max(resident_kib());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut channel = sender.await.unwrap();
    let mut seen = String::new();
    read_until(&mut channel, "drained", &mut seen).await;
    let growth_mib = (peak.saturating_sub(rss_before)) / 1024;
    assert!(growth_mib < 32, "64 MiB to a slow reader grew the process by {growth_mib} MiB");
}

fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// On the upstream leg the router is the client, and asks for AES-GCM first
/// (the processor's AES instructions cost it less per byte than
/// ChaCha20-Poly1305): sshd's log says what the two agreed on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_leg_is_encrypted_with_aes_gcm() {
    let upstream_key = new_key();
    let sshd = Sshd::start_with_options(upstream_key.public_key(), &["LogLevel=DEBUG1"]);
    let user = UserKey::new();
    let mut alice = route("alice", &sshd, &upstream_key);
    alice.authorized_keys = vec![user.key.public_key().clone()];
    let router = RunningRouter::start(static_backend(vec![alice]), test_options()).await;
    let handle = signed_in(&router, &user).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, "echo up").await.unwrap();
    read_until(&mut channel, "up", &mut String::new()).await;
    let log = sshd.log();
    for direction in ["client->server", "server->client"] {
        let line = format!("kex: {direction} cipher: aes256-gcm@openssh.com");
        assert!(log.contains(&line), "sshd did not log {line:?}:\n{log}");
    }
}
