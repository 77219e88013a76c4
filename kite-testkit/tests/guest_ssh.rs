//! The simulated guests' in-process SSH server (what `kite demo` runs where
//! OpenSSH's sshd is missing), driven by the real OpenSSH client straight
//! at a guest: the host key and the accepted key come from the machine's
//! cloud-init, commands and shells run in the guest's home with their exit
//! status, standard error and input carried, and what sshd would refuse
//! here (another key, another login, SFTP, forwarding) is refused.

mod common;

use base64::Engine as _;
use common::{create_web_instance, object, tenant_vmis};
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::eventually;
use kite_testkit::openssh::{UserKey, public_line, require, run_bounded, text};
use kite_testkit::sim::{GuestConfig, GuestNetwork, GuestSsh, Guests};
use kube::api::{Api, DeleteParams, PostParams};
use russh::keys::PrivateKey;
use russh::keys::ssh_key::LineEnding;
use serde_json::json;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The account sessions log in to: any name works, as no system account is used.
const LOGIN: &str = "kite";

/// A running instance `web` whose cloud-init holds `host_key` and accepts
/// `user`, a Service `web-ssh` that selects it, and its guest booted in
/// process; the address the Service reaches.
async fn guest(root: &Path, host_key: &PrivateKey, user: &UserKey) -> (FakeApiServer, Guests, SocketAddr) {
    let server = FakeApiServer::new().unwrap();
    kite_testkit::sim::install(&server).unwrap();
    let admin = server.client();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &object(json!({"metadata": {"name": "tenant"}})))
        .await
        .unwrap();
    let pem = host_key.to_openssh(LineEnding::LF).unwrap();
    let indented: String = pem.lines().map(|line| format!("    {line}\n")).collect();
    let userdata = format!(
        "#cloud-config\nssh_keys:\n  ed25519_private: |\n{indented}users:\n- name: web\n  lock_passwd: true\n  ssh_authorized_keys:\n  - {}\n",
        public_line(user.key.public_key())
    );
    let secret: Secret = object(json!({"metadata": {"name": "web-cloud-init"},
        "data": {"userdata": base64::engine::general_purpose::STANDARD.encode(userdata)}}));
    Api::<Secret>::namespaced(admin.clone(), "tenant").create(&PostParams::default(), &secret).await.unwrap();
    let service: Service = object(json!({"metadata": {"name": "web-ssh"},
        "spec": {"selector": {"vm": "web"}, "ports": [{"port": 22}]}}));
    Api::<Service>::namespaced(admin.clone(), "tenant").create(&PostParams::default(), &service).await.unwrap();
    create_web_instance(admin, json!({"vm": "web"}), true).await;
    let guests = kite_testkit::sim::start_guests(
        &server,
        GuestConfig {
            root: root.to_path_buf(),
            login_user: LOGIN.into(),
            poll: Duration::from_millis(50),
            network: GuestNetwork::LoopbackPorts,
            ssh: GuestSsh::InProcess,
        },
    );
    let address =
        eventually(Duration::from_secs(10), "the guest to boot", || async { guests.address("tenant", "web-ssh") })
            .await;
    (server, guests, address)
}

/// A known-hosts file under `dir` that trusts `host_key` at `address` alone.
fn known_hosts(dir: &Path, address: SocketAddr, host_key: &PrivateKey) -> std::path::PathBuf {
    let path = dir.join("known_hosts");
    let line = format!("[{}]:{} {}\n", address.ip(), address.port(), public_line(host_key.public_key()));
    std::fs::write(&path, line).unwrap();
    path
}

/// `ssh` to the guest as `login` with `key`, checking its host key against `known_hosts`.
fn ssh(address: SocketAddr, login: &str, key: &UserKey, known_hosts: &Path, options: &[&str]) -> Command {
    let mut command = Command::new(require("ssh"));
    command
        .args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
        .args(["-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=10", "-i"])
        .arg(&key.path)
        .args(["-p", &address.port().to_string()])
        .args(options)
        .arg(format!("{login}@{}", address.ip()));
    command
}

fn run(mut command: Command, remote: &[&str], input: Option<Vec<u8>>) -> Output {
    command.args(remote);
    run_bounded(command, input, Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_guest_runs_what_sshd_would_with_the_machines_keys() {
    let dir = tempfile::tempdir().unwrap();
    let host_key = kite_testkit::openssh::new_key();
    let user = UserKey::new();
    let (_server, _guests, address) = guest(&dir.path().join("machines"), &host_key, &user).await;
    let known_hosts = known_hosts(dir.path(), address, &host_key);

    let session = |login: &str, key: &UserKey, options: &[&str]| ssh(address, login, key, &known_hosts, options);

    // A command: its home, its user, its output, error and exit status, as sshd's ForceCommand gives them.
    let output = run(session(LOGIN, &user, &[]), &["pwd; echo \"$USER\"; echo out; echo err >&2; exit 7"], None);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(7), "the exit status is carried: {stdout} / {}", text(&output.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].ends_with("/machines/tenant/web/home"), "in the guest's home: {stdout}");
    assert_eq!(&lines[1..], ["kite", "out"], "{stdout}");
    assert_eq!(text(&output.stderr).trim(), "err", "standard error is carried apart");

    // Input, to its end: `cat` echoes 4 MiB and exits when the input ends.
    let input: Vec<u8> = (0..4u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let echoed = run(session(LOGIN, &user, &[]), &["cat"], Some(input.clone()));
    assert!(echoed.status.success(), "cat: {}", text(&echoed.stderr));
    assert!(echoed.stdout == input, "cat echoed {} bytes, not the 4 MiB it was sent", echoed.stdout.len());

    // A shell on a pseudo-terminal: the terminal is a real one, of the size asked (unknown: 24 by 80).
    let shell = run(session(LOGIN, &user, &["-tt"]), &[], Some(b"tty; stty size; exit 3\n".to_vec()));
    let shown = text(&shell.stdout);
    assert_eq!(shell.status.code(), Some(3), "the shell's exit status: {shown}");
    assert!(shown.contains("/dev/pts/") && shown.contains("24 80"), "a terminal of 24 by 80: {shown}");
    assert!(shown.contains("kite@web:~$ "), "the prompt names the user and the machine: {shown}");

    // What the guest refuses: a key it was not given, another login, SFTP, forwarding.
    let stranger = UserKey::new();
    for (login, key) in [(LOGIN, &stranger), ("root", &user)] {
        let refused = run(session(login, key, &[]), &["true"], None);
        assert_eq!(refused.status.code(), Some(255), "{login} with the wrong key or name is refused");
        assert!(text(&refused.stderr).contains("Permission denied"), "{}", text(&refused.stderr));
    }
    let sftp = run(session(LOGIN, &user, &["-s"]), &["sftp"], None);
    assert!(!sftp.status.success(), "SFTP is refused");
    assert!(text(&sftp.stderr).contains("subsystem request failed"), "{}", text(&sftp.stderr));
    let forward = run(session(LOGIN, &user, &["-W", "127.0.0.1:9"]), &[], None);
    assert!(!forward.status.success(), "forwarding is refused");
    assert!(text(&forward.stderr).contains("forwarding failed"), "{}", text(&forward.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_instance_takes_its_in_process_server_and_sessions_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let host_key = kite_testkit::openssh::new_key();
    let user = UserKey::new();
    let (server, guests, address) = guest(&dir.path().join("machines"), &host_key, &user).await;
    let known_hosts = known_hosts(dir.path(), address, &host_key);
    // A session that would last a minute, its shell's process id written in the guest's home.
    let mut long = ssh(address, LOGIN, &user, &known_hosts, &[]);
    long.arg("echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 60");
    long.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let long = Session(long.spawn().unwrap());
    let pid_file = dir.path().join("machines/tenant/web/home/pid");
    let pid = eventually(Duration::from_secs(10), "the session's command to run", || async {
        std::fs::read_to_string(&pid_file).ok().map(|pid| pid.trim().to_string())
    })
    .await;
    assert!(Path::new(&format!("/proc/{pid}")).exists());

    tenant_vmis(server.client()).delete("web", &DeleteParams::default()).await.unwrap();
    eventually(Duration::from_secs(10), "the guest to stop", || async { (guests.routed() == 0).then_some(()) }).await;
    let long = std::sync::Mutex::new(long);
    eventually(Duration::from_secs(10), "the client's session to end", || async {
        long.lock().unwrap().0.try_wait().unwrap().map(|_| ())
    })
    .await;
    eventually(Duration::from_secs(10), "the session's command to be ended", || async {
        (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    })
    .await;
    assert!(std::net::TcpStream::connect(address).is_err(), "nothing listens where the guest was");
}

/// A russh client that trusts only `host_key`.
struct PinnedHost(russh::keys::PublicKey);

impl russh::client::Handler for PinnedHost {
    type Error = russh::Error;
    async fn check_server_key(&mut self, key: &russh::keys::PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        Ok(key.public_key().key_data() == self.0.key_data())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_changes_resize_the_guests_terminal_before_and_after_the_shell_starts() {
    use russh::keys::PrivateKeyWithHashAlg;
    let dir = tempfile::tempdir().unwrap();
    let host_key = kite_testkit::openssh::new_key();
    let user = UserKey::new();
    let (_server, _guests, address) = guest(&dir.path().join("machines"), &host_key, &user).await;
    let config = std::sync::Arc::new(russh::client::Config::default());
    let mut client = russh::client::connect(config, address, PinnedHost(host_key.public_key().clone())).await.unwrap();
    let key = PrivateKeyWithHashAlg::new(std::sync::Arc::new(user.key.clone()), None);
    assert!(client.authenticate_publickey(LOGIN, key).await.unwrap().success());
    let mut channel = client.channel_open_session().await.unwrap();
    channel.request_pty(true, "xterm", 80, 24, 0, 0, &[]).await.unwrap();
    // Before the command starts: the terminal it gets is the new size.
    channel.window_change(100, 40, 0, 0).await.unwrap();
    channel.exec(true, "stty size; read line; stty size").await.unwrap();
    let mut shown = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut resized = false;
    let status = loop {
        let message = tokio::time::timeout_at(deadline, channel.wait())
            .await
            .unwrap_or_else(|_| panic!("waited 10 s; the terminal showed {shown:?}"));
        match message {
            Some(russh::ChannelMsg::Data { data }) => shown.push_str(&String::from_utf8_lossy(&data)),
            Some(russh::ChannelMsg::ExitStatus { exit_status }) => break exit_status,
            Some(_) => {}
            None => panic!("the channel closed without an exit status; it showed {shown:?}"),
        }
        // After it started: the running command's terminal is resized.
        if !resized && shown.contains("40 100") {
            resized = true;
            channel.window_change(132, 50, 0, 0).await.unwrap();
            channel.data(&b"go\n"[..]).await.unwrap();
        }
    };
    assert_eq!(status, 0, "{shown:?}");
    assert!(shown.contains("40 100") && shown.contains("50 132"), "both sizes: {shown:?}");
}

/// A client process, killed if the test ends first.
struct Session(std::process::Child);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
