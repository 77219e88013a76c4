//! Session recordings in asciicast v2, through the router with the
//! filesystem store: a terminal session's output with its characters whole
//! across chunks, its resizes and how it ended; input only when asked; and
//! a recording the gateway's own shutdown cuts short still ends properly.

mod common;

use common::*;
use kite_ssh::audit::FileStore;
use russh::ChannelMsg;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A router whose store records sessions (and input when `input`), and alice's key.
async fn recording_router(
    sshd: &Sshd,
    upstream_key: &russh::keys::PrivateKey,
    dir: &Path,
    input: bool,
) -> (RunningRouter, UserKey) {
    let user = UserKey::new();
    let mut alice = route("alice", sshd, upstream_key);
    alice.authorized_keys = vec![user.key.public_key().clone()];
    let store = Arc::new(FileStore::open(dir).unwrap().recording_sessions(input));
    let options = test_options().with_close_grace(Duration::from_millis(300));
    (RunningRouter::start_audited(static_backend(vec![alice]), options, new_key(), store).await, user)
}

/// The one recording under `dir`, once its last event (a marker) is written.
fn finished_cast(dir: &Path) -> (Value, Vec<Value>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let casts: Vec<PathBuf> = std::fs::read_dir(dir.join("recordings"))
            .into_iter()
            .flatten()
            .flat_map(|day| std::fs::read_dir(day.unwrap().path()).unwrap())
            .map(|cast| cast.unwrap().path())
            .collect();
        if let [cast] = casts.as_slice() {
            let text = std::fs::read_to_string(cast).unwrap();
            let mut lines = text.lines().map(|line| serde_json::from_str::<Value>(line).expect("every line is JSON"));
            let header = lines.next().unwrap();
            let events: Vec<Value> = lines.collect();
            if events.last().is_some_and(|last| last[1] == "m") {
                return (header, events);
            }
        }
        assert!(Instant::now() < deadline, "no finished recording under {}: {casts:?}", dir.display());
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn of_code<'a>(events: &'a [Value], code: &str) -> Vec<&'a str> {
    events.iter().filter(|e| e[1] == code).map(|e| e[2].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_session_is_recorded_whole_with_its_resizes_and_its_end() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    let (router, user) = recording_router(&sshd, &upstream_key, dir.path(), false).await;
    let handle = signed_in(&router, &user).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.request_pty(true, "xterm-256color", 80, 24, 0, 0, &[]).await.unwrap();
    // "é" is two bytes, written in two writes a moment apart.
    channel.exec(true, r"printf 'h\303'; sleep 0.5; printf '\251llo\n'; read line; stty size; exit 2").await.unwrap();
    read_until(&mut channel, "llo").await;
    channel.window_change(100, 40, 0, 0).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    channel.data(&b"secret-typed\n"[..]).await.unwrap();
    read_until(&mut channel, "40 100").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, channel.wait()).await.expect("the session ends") {
            Some(ChannelMsg::ExitStatus { exit_status }) => assert_eq!(exit_status, 2),
            None | Some(ChannelMsg::Close) => break,
            Some(_) => {}
        }
    }
    drop(channel);
    drop(handle);

    let (header, events) = finished_cast(dir.path());
    assert_eq!(header["version"], 2);
    assert_eq!((header["width"].as_u64(), header["height"].as_u64()), (Some(80), Some(24)));
    assert_eq!(header["env"]["TERM"], "xterm-256color");
    assert!(header["command"].as_str().unwrap().starts_with("printf"));
    let output: String = of_code(&events, "o").concat();
    assert!(output.contains("héllo"), "{output:?}");
    assert!(!output.contains('\u{fffd}'), "a character was cut: {output:?}");
    assert!(output.contains("40 100"), "{output:?}");
    assert_eq!(of_code(&events, "r"), ["100x40"]);
    assert!(of_code(&events, "i").is_empty(), "input is not recorded unless asked");
    assert_eq!(events.last().unwrap()[2], "exit 2");
    let times: Vec<f64> = events.iter().map(|e| e[0].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "times go forward: {times:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_is_recorded_only_when_the_store_asks_and_sftp_is_not_recorded() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    let (router, user) = recording_router(&sshd, &upstream_key, dir.path(), true).await;
    let handle = signed_in(&router, &user).await;
    let sftp = handle.channel_open_session().await.unwrap();
    sftp.request_subsystem(true, "sftp").await.unwrap();
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, "read line; echo got-$line").await.unwrap();
    channel.data(&b"typed\n"[..]).await.unwrap();
    read_until(&mut channel, "got-typed").await;
    drop((channel, sftp, handle));
    let (_, events) = finished_cast(dir.path());
    assert_eq!(of_code(&events, "i").concat(), "typed\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_cut_short_by_the_gateways_shutdown_still_ends() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    let (router, user) = recording_router(&sshd, &upstream_key, dir.path(), false).await;
    let handle = signed_in(&router, &user).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.exec(true, "echo ready; exec sleep 30").await.unwrap();
    read_until(&mut channel, "ready").await;
    router.stop().await;
    let (_, events) = finished_cast(dir.path());
    assert_eq!(of_code(&events, "o").concat(), "ready\n");
    assert_eq!(events.last().unwrap()[2], "closed", "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_recording_is_watched_as_it_is_written_and_its_session_can_be_ended() {
    use kite_ssh::audit::{AuditArchive, recent_sessions};
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    let user = UserKey::new();
    let mut alice = route("alice", &sshd, &upstream_key);
    alice.authorized_keys = vec![user.key.public_key().clone()];
    let store = Arc::new(FileStore::open(dir.path()).unwrap().recording_sessions(false));
    let router =
        RunningRouter::start_audited(static_backend(vec![alice]), test_options(), new_key(), store.clone()).await;
    assert!(router.sessions.list().is_empty());

    let handle = signed_in(&router, &user).await;
    let mut channel = handle.channel_open_session().await.unwrap();
    channel.request_pty(true, "xterm", 80, 24, 0, 0, &[]).await.unwrap();
    channel.exec(true, "echo first-line; read x; echo second-$x; exec sleep 30").await.unwrap();
    read_until(&mut channel, "first-line").await;

    let live = router.sessions.list();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!((live[0].ssh_id.as_str(), live[0].recording.len()), ("alice", 1));
    let (connection, recorded) = (live[0].connection.clone(), live[0].recording[0]);
    assert!(router.sessions.watch(&connection, recorded + 1).is_none(), "no such channel");
    assert!(router.sessions.watch("0123456789abcdef0123456789abcdef", 0).is_none(), "no such connection");
    let mut watch = router.sessions.watch(&connection, recorded).expect("the recording is live");
    let header: Value = serde_json::from_str(&watch.backlog[0]).unwrap();
    assert_eq!(header["width"], 80);
    assert!(watch.backlog.iter().any(|line| line.contains("first-line")), "{:?}", watch.backlog);

    channel.data(&b"typed\n"[..]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), watch.next()).await.unwrap().expect("a line");
        if line.contains("second-typed") {
            break;
        }
        assert!(Instant::now() < deadline);
    }

    assert!(!router.sessions.terminate("0123456789abcdef0123456789abcdef", "bye", "test").await);
    assert!(router.sessions.terminate(&connection, "An admin ended this session.", "ended by admin@example.com").await);
    // The watch sees the recording's end, then closes.
    let mut last = String::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(10), watch.next()).await.unwrap() {
        last = line;
    }
    assert!(last.contains("\"m\""), "the last line is the end marker: {last}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !router.sessions.list().is_empty() {
        assert!(Instant::now() < deadline, "the session is gone from the live list");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop((channel, handle));

    // The store tells the same story: one session, ended by the gateway, recorded.
    let deadline = Instant::now() + Duration::from_secs(10);
    let session = loop {
        let sessions = recent_sessions(store.as_ref(), 10, |_| true).await.unwrap();
        if let [session] = sessions.as_slice()
            && session.ended.is_some()
        {
            break session.clone();
        }
        assert!(Instant::now() < deadline, "the store shows the ended session: {sessions:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(session.connection, connection);
    assert_eq!(session.end_reason.as_deref(), Some("ended by admin@example.com"));
    assert!(session.channels[0].recorded);
    let cast = store.recording(&connection, recorded).await.unwrap().expect("the recording is kept");
    assert!(String::from_utf8(cast).unwrap().contains("second-typed"));
    assert!(store.recording(&connection, recorded + 1).await.unwrap().is_none());
    assert!(store.recording("../../etc/passwd", recorded).await.unwrap().is_none());
    router.stop().await;
}
