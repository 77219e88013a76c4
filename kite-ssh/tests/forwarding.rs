//! Subsystems and forwarding through the router with real OpenSSH: sftp,
//! scp, `ssh -L`, `ssh -R` and `ssh -A`.

mod common;

use common::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sftp_puts_and_gets_a_file() {
    let s = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("upload.bin");
    let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&local, &payload).unwrap();
    let remote = format!("/tmp/kite-sftp-{}.bin", std::process::id());
    let back = dir.path().join("download.bin");
    let batch = format!("put {} {remote}\nget {remote} {}\nrm {remote}\n", local.display(), back.display());
    let ssh = Ssh::to(&s.router, "alice").key(&s.user);
    let output = tokio::task::spawn_blocking(move || {
        let (args, destination) = ssh.transfer_args();
        let mut command = std::process::Command::new(require("sftp"));
        command.args(&args).arg("-b").arg("-").arg(destination);
        run_bounded(command, Some(batch.into_bytes()), Duration::from_secs(60))
    })
    .await
    .unwrap();
    assert!(output.status.success(), "sftp failed: {}", text(&output.stderr));
    assert_eq!(std::fs::read(&back).unwrap(), payload);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scp_copies_both_ways() {
    let s = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("file.txt");
    std::fs::write(&local, "copied through kite\n").unwrap();
    let remote = format!("/tmp/kite-scp-{}.txt", std::process::id());
    let back = dir.path().join("back.txt");
    let ssh = Ssh::to(&s.router, "alice").key(&s.user);
    let (args, destination) = ssh.transfer_args();
    let (up, down) = (format!("{destination}:{remote}"), back.clone());
    let outputs = tokio::task::spawn_blocking(move || {
        let mut upload = std::process::Command::new(require("scp"));
        upload.args(&args).arg(&local).arg(&up);
        let first = run_bounded(upload, None, Duration::from_secs(60));
        let mut download = std::process::Command::new(require("scp"));
        download.args(&args).arg(&up).arg(&down);
        (first, run_bounded(download, None, Duration::from_secs(60)))
    })
    .await
    .unwrap();
    assert!(outputs.0.status.success(), "{}", text(&outputs.0.stderr));
    assert!(outputs.1.status.success(), "{}", text(&outputs.1.stderr));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "copied through kite\n");
    let _ = std::fs::remove_file(remote);
}

async fn echo_through(port: u16) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await
            && stream.write_all(b"ping through kite").await.is_ok()
        {
            let mut buffer = vec![0u8; 17];
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut buffer)).await {
                return String::from_utf8_lossy(&buffer).into_owned();
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "the forward on port {port} never echoed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `ssh -N <flag> <port>:127.0.0.1:<echo>` and echoes through `<port>`.
async fn echo_through_a_forward(flag: &str) -> String {
    let s = setup().await;
    let echo = echo_server().await;
    let port = free_port();
    let spec = format!("{port}:127.0.0.1:{echo}");
    let _forward = Ssh::to(&s.router, "alice").key(&s.user).background(&["-N", flag, &spec]);
    echo_through(port).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_forwarding_reaches_a_service_behind_the_machine() {
    assert_eq!(echo_through_a_forward("-L").await, "ping through kite");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_forwarding_brings_a_port_on_the_machine_back_to_the_user() {
    // sshd binds the remote port on the machine, here the same host.
    assert_eq!(echo_through_a_forward("-R").await, "ping through kite");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_forwarding_lets_the_machine_use_the_users_agent() {
    let s = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("agent.sock");
    let agent = std::process::Command::new(require("ssh-agent"))
        .arg("-D")
        .arg("-a")
        .arg(&socket)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _agent = Background(agent);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !socket.exists() {
        assert!(std::time::Instant::now() < deadline, "ssh-agent did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let added = std::process::Command::new(require("ssh-add"))
        .arg(&s.user.path)
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", text(&added.stderr));
    let fingerprint = s.user.key.public_key().fingerprint(russh::keys::HashAlg::Sha256).to_string();
    let mut ssh = Ssh::to(&s.router, "alice").key(&s.user).arg("-A");
    ssh.env.push(("SSH_AUTH_SOCK".into(), socket.display().to_string()));
    let output = tokio::task::spawn_blocking(move || ssh.run(&["ssh-add -l"])).await.unwrap();
    assert!(
        text(&output.stdout).contains(&fingerprint),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
}
