//! Audit events, written by the filesystem store, for real OpenSSH
//! sessions through the router: sign-ins (never a rejected name in clear),
//! channels, the command, how it ended and the bytes each way.

mod common;

use common::*;
use kite_ssh::audit::FileStore;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The events written so far, one JSON object per line, across the day files.
fn events(store: &std::path::Path) -> Vec<Value> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(store.join("audit")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        lines.extend(text.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()));
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_audited_from_sign_in_to_disconnect_and_a_rejected_name_never_in_clear() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let user = UserKey::new();
    let mut alice = route("alice", &sshd, &upstream_key);
    alice.authorized_keys = vec![user.key.public_key().clone()];
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::open(dir.path()).unwrap());
    let router = RunningRouter::start_audited(static_backend(vec![alice]), test_options(), new_key(), store).await;

    let ssh = Ssh::to(&router, "alice").key(&user);
    let output = tokio::task::spawn_blocking(move || ssh.run(&["printf hello; exit 3"])).await.unwrap();
    assert_eq!(text(&output.stdout), "hello", "{}", text(&output.stderr));
    // Someone types a password into the login field.
    let typo = Ssh::to(&router, "hunter2-is-my-password").password("wrong", "password");
    let _ = tokio::task::spawn_blocking(move || typo.run(&["true"])).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    let all = loop {
        let all = events(dir.path());
        if all.iter().filter(|e| e["event"] == "disconnect").count() == 2 {
            break all;
        }
        assert!(Instant::now() < deadline, "two disconnects were expected: {all:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let accepted = all.iter().find(|e| e["event"] == "auth" && e["result"] == "accepted").expect("a sign-in");
    assert_eq!((accepted["method"].as_str(), accepted["sshId"].as_str()), (Some("publickey"), Some("alice")));
    assert_eq!(accepted["source"].as_str().map(|s| s.starts_with("127.0.0.1:")), Some(true));
    let connection = accepted["connection"].as_str().unwrap();
    let mine: Vec<&Value> = all.iter().filter(|e| e["connection"] == connection).collect();
    let names: Vec<&str> = mine.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["auth", "channel-open", "session-start", "channel-close", "disconnect"], "{mine:#?}");
    assert_eq!(mine[2]["request"], "exec");
    assert_eq!(mine[2]["command"], "printf hello; exit 3");
    assert_eq!(mine[3]["exitStatus"], 3);
    assert_eq!(mine[3]["bytesToUser"], 5);
    assert_eq!(mine[3]["reason"], Value::Null);
    // The typo: rejected, with a digest of the name and never the name.
    let rejected = all.iter().find(|e| e["result"] == "rejected").expect("a rejected attempt");
    assert!(rejected["loginDigest"].as_str().is_some_and(|d| !d.is_empty()), "{rejected}");
    assert_eq!(rejected["sshId"], Value::Null);
    let written = std::fs::read_dir(dir.path().join("audit"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(!written.contains("hunter2"), "a rejected login name was written in clear");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_signs_in_is_not_an_event() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::open(dir.path()).unwrap());
    let router = RunningRouter::start_audited(
        static_backend(vec![route("alice", &sshd, &upstream_key)]),
        test_options(),
        new_key(),
        store,
    )
    .await;
    // A load balancer's probe: connect, then go.
    drop(tokio::net::TcpStream::connect(router.address()).await.unwrap());
    // Then a real sign-in attempt, so that there is something to wait for.
    let ssh = Ssh::to(&router, "nobody").password("wrong", "password");
    let _ = tokio::task::spawn_blocking(move || ssh.run(&["true"])).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while events(dir.path()).iter().all(|e| e["event"] != "disconnect") {
        assert!(Instant::now() < deadline, "the sign-in attempt's connection never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let connections: std::collections::BTreeSet<String> =
        events(dir.path()).iter().map(|e| e["connection"].as_str().unwrap().to_string()).collect();
    assert_eq!(connections.len(), 1, "only the connection that tried to sign in is audited");
}
