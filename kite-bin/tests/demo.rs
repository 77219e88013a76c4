//! The README's main job, end to end: `kite demo` as the binary, then what a
//! newcomer does. Sign up and sign in over HTTP, create a machine, wait
//! for it to run, log in to it with the real OpenSSH client and the
//! machine's password through the gateway, run a command in it, delete
//! it, see with `kubectl` that it and everything made for it are gone, and
//! stop the demo with Ctrl-C.

mod support;

use kite_testkit::fixtures::eventually;
use kite_testkit::openssh::{free_port, require, text};
use reqwest::StatusCode;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{
    Process, Session, create_machine_when_accepted, kubectl, ssh_with_password, ssh_with_password_and_input,
};

/// `kite demo` running as the binary, its output in `demo.out` under `dir`.
struct Demo {
    process: Process,
    http: u16,
    ssh: u16,
    kubeconfig: std::path::PathBuf,
    state: std::path::PathBuf,
    anonymous: Session,
}

impl Demo {
    /// Starts the demo with `extra` arguments and waits for its API and its banner.
    async fn start(dir: &std::path::Path, extra: &[&str]) -> Self {
        let (http, ssh, kube) = (free_port(), free_port(), free_port());
        let kubeconfig = dir.join("kubeconfig");
        let state = dir.join("state");
        let log = std::fs::File::create(dir.join("demo.out")).unwrap();
        let process = Process::in_own_group(
            Command::new(env!("CARGO_BIN_EXE_kite"))
                .args(["demo", "--http", &format!("127.0.0.1:{http}"), "--ssh", &format!("127.0.0.1:{ssh}")])
                .args(["--kube", &format!("127.0.0.1:{kube}"), "--import-seconds", "2"])
                .arg("--kubeconfig-out")
                .arg(&kubeconfig)
                .arg("--state-dir")
                .arg(&state)
                .args(extra)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(Stdio::inherit()),
        );
        let base = format!("http://127.0.0.1:{http}");
        let anonymous =
            Session { http: reqwest::Client::new(), base: base.clone(), token: None, cookies: None, csrf: None };
        eventually(Duration::from_secs(60), "the demo's API", || async {
            let answer = anonymous.http.get(format!("{base}/api/v1/health")).send().await.ok()?;
            (answer.status() == StatusCode::OK).then_some(())
        })
        .await;
        eventually(Duration::from_secs(10), "the demo's banner", || async {
            std::fs::read_to_string(dir.join("demo.out")).ok().filter(|b| b.contains("Press Ctrl-C")).map(|_| ())
        })
        .await;
        Self { process, http, ssh, kubeconfig, state, anonymous }
    }

    /// Signs up `name` (the first account is the admin) and signs in.
    async fn sign_up(&self, name: &str) -> Session {
        let email = format!("{name}@example.org");
        let password = format!("{name}-password");
        let (status, body) = self
            .anonymous
            .post("/auth/signup", json!({ "username": name, "email": email, "password": password }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["user"]["access_level"], 3, "the first account is the admin");
        let (status, login) = self.anonymous.post("/auth/login", json!({ "email": email, "password": password })).await;
        assert_eq!(status, StatusCode::OK, "{login}");
        Session { token: login["token"].as_str().map(str::to_string), ..self.anonymous.clone() }
    }

    /// Stops the demo with Ctrl-C and checks it stops cleanly.
    fn interrupt(mut self) {
        let pid = self.process.0.id().to_string();
        assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.process.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the demo did not stop on Ctrl-C");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{status:?}");
    }
}

/// Creates the machine `name` (login `sshId`, password `machine-password`) and waits for it to run.
async fn running_machine(owner: &Session, name: &str, ssh_id: &str) -> serde_json::Value {
    let created = create_machine_when_accepted(
        owner,
        json!({ "name": name, "sshId": ssh_id, "sshPassword": "machine-password" }),
    )
    .await;
    assert_eq!(created["vm"]["sshId"], ssh_id);
    eventually(Duration::from_secs(90), "the machine to run", || async {
        let (_, body) = owner.get(&format!("/vms/{name}")).await;
        (body["vm"]["phase"] == "Running").then_some(body)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_sign_up_to_a_shell_in_a_machine_and_back() {
    require("sshd");
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::start(dir.path(), &[]).await;
    let (http, ssh, kubeconfig, state) = (demo.http, demo.ssh, demo.kubeconfig.clone(), demo.state.clone());
    let banner = std::fs::read_to_string(dir.path().join("demo.out")).unwrap();
    assert!(
        banner.contains(&format!("http://127.0.0.1:{http}/")) && banner.contains(&kubeconfig.display().to_string()),
        "{banner}"
    );
    assert!(banner.contains("kept in memory"), "{banner}");
    assert!(banner.contains("Machines:    OpenSSH's sshd on loopback"), "sshd is installed, so it runs: {banner}");

    let ada = demo.sign_up("ada").await;
    let running = running_machine(&ada, "web", "ada_web").await;
    assert_eq!(running["connection"]["command"], format!("ssh -p {ssh} ada_web@127.0.0.1"), "{running}");

    let refused = ssh_with_password(ssh, "ada_web", "wrong-password", "true", dir.path());
    assert!(!refused.status.success(), "a wrong password is refused");
    let session = eventually(Duration::from_secs(30), "an SSH session in the machine", || async {
        let output =
            ssh_with_password(ssh, "ada_web", "machine-password", "pwd; echo kite-e2e > proof; cat proof", dir.path());
        output.status.success().then_some(output)
    })
    .await;
    let stdout = text(&session.stdout);
    assert!(stdout.contains("kite-e2e"), "the command ran in the machine: {stdout}");
    assert!(stdout.lines().next().unwrap().ends_with("/web/home"), "in the machine's own directory: {stdout}");
    // Data both ways at full rate through the Kubernetes-backed gateway: `cat` echoes 32 MiB.
    let input: Vec<u8> = (0..32u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let echoed =
        ssh_with_password_and_input(ssh, "ada_web", "machine-password", "cat", dir.path(), Some(input.clone()));
    assert!(echoed.status.success(), "cat through the gateway: {}", text(&echoed.stderr));
    assert!(echoed.stdout == input, "cat echoed {} bytes, not the 32 MiB it was sent", echoed.stdout.len());

    // A key on the account page signs in too, and `kite doctor --probe-machine` proves it from outside.
    let key = kite_testkit::openssh::UserKey::new();
    let line = kite_testkit::openssh::public_line(key.key.public_key());
    let (status, body) = ada.post("/me/ssh-keys", json!({ "key": line })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let doctor = |key: &std::path::Path| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kite"));
        command.arg("doctor").arg("--kubeconfig").arg(&kubeconfig);
        command.args(["--ssh-address", &format!("127.0.0.1:{ssh}"), "--probe-machine", "ada_web", "--probe-key"]);
        command.arg(key);
        text(&kite_testkit::openssh::run_bounded(command, None, Duration::from_secs(90)).stdout)
    };
    let probe = format!("machine login ada_web@127.0.0.1:{ssh}");
    eventually(Duration::from_secs(30), "the doctor's probe to sign in with the key", || async {
        let report = doctor(&key.path);
        report.contains(&format!("ok   {probe}: signed in with the key and ran `true`")).then_some(())
    })
    .await;
    let stranger = kite_testkit::openssh::UserKey::new();
    let report = doctor(&stranger.path);
    assert!(report.contains(&format!("FAIL {probe}: the gateway refused the key for ada_web")), "{report}");

    // The book's kubectl commands, and kubectl's typed commands (protobuf bodies), on the demo's cluster.
    let book_and_typed: [&[&str]; 6] = [
        &["get", "kiteusers,ktvm", "-A"],
        &["get", "datavolumes,virtualmachines.kubevirt.io,svc,secrets", "-A"],
        &["get", "kiteplatform", "kite", "-o", "yaml"],
        &["create", "namespace", "scratch"],
        &["create", "configmap", "note", "-n", "scratch", "--from-literal=a=b"],
        &["create", "secret", "generic", "token", "-n", "scratch", "--from-literal=k=v"],
    ];
    for args in book_and_typed {
        kubectl(&kubeconfig, args);
    }
    assert!(kubectl(&kubeconfig, &["get", "ktvm", "-A"]).contains("web"), "kubectl lists the running machine");

    let (status, body) = ada.delete("/vms/web").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    eventually(Duration::from_secs(60), "the machine to be gone", || async {
        (ada.get("/vms/web").await.0 == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
    let left = kubectl(
        &kubeconfig,
        &[
            "get",
            "kitevirtualmachines,virtualmachines.kubevirt.io,datavolumes,secrets,services",
            "-A",
            "-l",
            "hy3ons.github.io/kite-vm-name=web",
            "-o",
            "name",
        ],
    );
    assert!(left.trim().is_empty(), "everything made for the machine is gone: {left}");
    let after = ssh_with_password(ssh, "ada_web", "machine-password", "true", dir.path());
    assert!(!after.status.success(), "the deleted machine is not reachable");

    // A machine that still runs when the demo stops: its sshd must stop too.
    let (status, body) =
        ada.post("/vms", json!({ "name": "db", "sshId": "ada_db", "sshPassword": "machine-password" })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    eventually(Duration::from_secs(90), "db to run", || async {
        (ada.get("/vms/db").await.1["vm"]["phase"] == "Running").then_some(())
    })
    .await;
    let guests = || text(&Command::new("pgrep").args(["-f", &state.display().to_string()]).output().unwrap().stdout);
    eventually(Duration::from_secs(10), "db's sshd", || async { (!guests().trim().is_empty()).then_some(()) }).await;

    demo.interrupt();
    assert!(guests().trim().is_empty(), "no guest sshd is left running: {}", guests());
}

/// The README's two commands on a machine without OpenSSH's server: the
/// machines are then SSH servers inside the demo, the banner says so, and
/// a newcomer's session through the gateway behaves as with sshd.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sshd_the_machines_are_ssh_servers_inside_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    // `auto` picks this where sshd is missing (a unit test checks the choice); here it is asked for.
    let demo = Demo::start(dir.path(), &["--machine-ssh", "in-process"]).await;
    let banner = std::fs::read_to_string(dir.path().join("demo.out")).unwrap();
    assert!(banner.contains("Machines:    SSH servers inside the demo (russh)"), "{banner}");
    let bo = demo.sign_up("bo").await;
    running_machine(&bo, "box", "bo_box").await;

    let command = "pwd; echo kite-in-process; echo err >&2; exit 5";
    let session = eventually(Duration::from_secs(30), "a session in the machine", || async {
        let output = ssh_with_password(demo.ssh, "bo_box", "machine-password", command, dir.path());
        (output.status.code() == Some(5)).then_some(output)
    })
    .await;
    let stdout = text(&session.stdout);
    assert!(stdout.lines().next().unwrap().ends_with("/box/home"), "in the machine's own directory: {stdout}");
    assert!(stdout.contains("kite-in-process") && text(&session.stderr).contains("err"), "{stdout}");
    let shell = support::ssh_password_command(demo.ssh, "bo_box", "machine-password", dir.path(), &["-tt"], "");
    let shell = kite_testkit::openssh::run_bounded(shell, Some(b"tty; exit 3\n".to_vec()), Duration::from_secs(60));
    assert_eq!(shell.status.code(), Some(3), "{}", text(&shell.stdout));
    assert!(text(&shell.stdout).contains("/dev/pts/"), "a shell on a terminal: {}", text(&shell.stdout));
    let sshd = Command::new("pgrep").args(["-f", &format!("sshd.*{}", demo.state.display())]).output().unwrap();
    assert!(text(&sshd.stdout).trim().is_empty(), "no sshd runs for the machine: {}", text(&sshd.stdout));
    demo.interrupt();
}

/// Two demos on one state directory: the second would clear the first's
/// machines' directory under their running sshd. It is refused with a
/// sentence, and the first one's directory is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_demo_on_the_same_state_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = Demo::start(dir.path(), &[]).await;
    let marker = first.state.join("machines").join("kept");
    std::fs::write(&marker, "the first demo's").unwrap();

    let mut second = Command::new(env!("CARGO_BIN_EXE_kite"));
    second
        .args(["demo", "--http", &format!("127.0.0.1:{}", free_port())])
        .args(["--ssh", &format!("127.0.0.1:{}", free_port()), "--kube", &format!("127.0.0.1:{}", free_port())])
        .arg("--state-dir")
        .arg(&first.state)
        .env("RUST_LOG", "warn");
    let refused = kite_testkit::openssh::run_bounded(second, None, Duration::from_secs(30));
    assert!(!refused.status.success(), "the second demo ran: {}", text(&refused.stdout));
    let said = text(&refused.stderr);
    assert!(said.contains("another kite demo is running with the state directory"), "{said}");
    assert!(said.contains("--state-dir"), "the sentence says how to run a second one: {said}");
    assert!(marker.exists(), "the second demo cleared the first one's machines");
    first.interrupt();
}
