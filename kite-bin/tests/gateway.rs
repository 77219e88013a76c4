//! `kite gateway --config` and `kite hash-password`, run as the binary.

use kite_testkit::openssh::{
    Sshd, UserKey, free_port, new_key, public_line, require, run_bounded, ssh_client_options, text, wait_for_port,
    write_key,
};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn kite() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kite"))
}

#[test]
fn hash_password_prints_an_argon2id_hash_of_stdin() {
    let output = run_bounded(kite_with(&["hash-password"]), Some(b"correct horse\n".to_vec()), Duration::from_secs(30));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let hash = text(&output.stdout).trim().to_string();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert!(kite_ssh::password::verify("correct horse", &hash));
    let empty = run_bounded(kite_with(&["hash-password"]), Some(Vec::new()), Duration::from_secs(30));
    assert!(!empty.status.success());
    assert!(text(&empty.stderr).contains("no password on standard input"), "{}", text(&empty.stderr));
}

fn kite_with(args: &[&str]) -> Command {
    let mut command = kite();
    command.args(args);
    command
}

/// Writes `config` to a file in `dir` and runs `kite gateway` on it, expecting it to refuse to start.
fn refused(dir: &Path, config: &str) -> String {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let output =
        run_bounded(kite_with(&["gateway", "--config", path.to_str().unwrap()]), None, Duration::from_secs(30));
    assert!(!output.status.success(), "the gateway started with a bad config:\n{config}");
    text(&output.stderr)
}

#[test]
fn a_bad_config_names_the_key_and_line_and_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    write_key(&dir.path().join("upstream_key"), &new_key());
    let host = public_line(new_key().public_key());
    let good_route = format!(
        "[[route]]\nuser = \"alice\"\npassword_hash = \"$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaA\"\nupstream = \"127.0.0.1:22022\"\nupstream_user = \"root\"\nupstream_key = \"upstream_key\"\nupstream_host_key = \"{host}\"\n"
    );
    let head = "listen = \"127.0.0.1:0\"\nhost_key = \"host_key\"\n";

    let typo = format!("{head}{}", good_route.replace("password_hash", "pasword_hash"));
    let message = refused(dir.path(), &typo);
    assert!(message.contains("pasword_hash") && message.contains("line 5"), "{message}");

    let bad_key = format!("{head}{good_route}authorized_keys = [\"ssh-ed25519 not-base64!\"]\n");
    let message = refused(dir.path(), &bad_key);
    assert!(message.contains("gateway.toml:10: route.authorized_keys"), "{message}");

    let no_pin = format!("{head}{}", good_route.replace(&format!("upstream_host_key = \"{host}\"\n"), ""));
    let message = refused(dir.path(), &no_pin);
    assert!(
        message.contains("route.upstream_host_key") && message.contains("upstream_insecure_ignore_host_key"),
        "{message}"
    );

    let missing_file = format!("{head}{}", good_route.replace("\"upstream_key\"", "\"nowhere\""));
    let message = refused(dir.path(), &missing_file);
    assert!(message.contains("gateway.toml:8: route.upstream_key") && message.contains("nowhere"), "{message}");

    let bad_proxy =
        format!("{head}{good_route}\n[options]\nproxy_protocol_from = [\"10.0.0.0/8\", \"the balancer\"]\n");
    let message = refused(dir.path(), &bad_proxy);
    assert!(
        message.contains("gateway.toml:12: options.proxy_protocol_from") && message.contains("'the balancer'"),
        "{message}"
    );

    let bad_hash =
        format!("{head}{}", good_route.replace("$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaA", "plaintext"));
    let message = refused(dir.path(), &bad_hash);
    assert!(
        message.contains("gateway.toml:5: route.password_hash") && message.contains("kite hash-password"),
        "{message}"
    );
}

/// The gateway process, stopped when dropped.
struct Gateway(std::process::Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_gateway_routes_a_key_login_to_its_machine_and_keeps_its_host_key() {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    write_key(&dir.path().join("alice_upstream_ed25519"), &upstream_key);
    let user = UserKey::new();
    let (port, control) = (free_port(), free_port());
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\nhost_key = \"gateway_host_ed25519_key\"\n\n[[route]]\nuser = \"alice\"\n\
         authorized_keys = [\"{}\"]\nupstream = \"{}\"\nupstream_user = \"root\"\nupstream_key = \"alice_upstream_ed25519\"\n\
         upstream_host_key = \"{}\"\n\n[recording]\ndir = \"recordings\"\nmax_age_days = 30\n\n\
         [control]\nlisten = \"127.0.0.1:{control}\"\ntoken_file = \"control.token\"\n",
        public_line(user.key.public_key()),
        sshd.address(),
        public_line(sshd.host_key.public_key())
    );
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, config).unwrap();
    // A day of audit events and recordings long past max_age_days.
    let old_casts = dir.path().join("recordings/recordings/2020-01-01");
    std::fs::create_dir_all(&old_casts).unwrap();
    std::fs::write(old_casts.join("old-0.cast"), "{}\n").unwrap();
    std::fs::create_dir_all(dir.path().join("recordings/audit")).unwrap();
    std::fs::write(dir.path().join("recordings/audit/2020-01-01.jsonl"), "{}\n").unwrap();
    let gateway = Gateway(
        kite_with(&["gateway", "--config", path.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(port);
    let mut ssh = Command::new(require("ssh"));
    ssh.args(ssh_client_options())
        .args(["-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes"])
        .arg("-i")
        .arg(&user.path)
        .args(["-p", &port.to_string(), "alice@127.0.0.1", "echo via-gateway"]);
    let output = run_bounded(ssh, None, Duration::from_secs(60));
    assert_eq!(text(&output.stdout), "via-gateway\n", "{}", text(&output.stderr));
    // [recording]: the session's audit events, from sign-in to disconnect, under the folder named.
    let audit = dir.path().join("recordings").join("audit");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let events = loop {
        let events: String = std::fs::read_dir(&audit)
            .map(|entries| entries.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok()).collect())
            .unwrap_or_default();
        if events.contains(r#""event":"disconnect""#) {
            break events;
        }
        assert!(std::time::Instant::now() < deadline, "no disconnect event under {}: {events}", audit.display());
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(events.contains(r#""sshId":"alice""#) && events.contains(r#""command":"echo via-gateway""#), "{events}");
    // The old day went when the gateway started.
    assert!(!old_casts.exists() && !dir.path().join("recordings/audit/2020-01-01.jsonl").exists());
    // And the session's recording (sessions are recorded by default under [recording]).
    let day = std::fs::read_dir(dir.path().join("recordings").join("recordings")).unwrap().next().unwrap().unwrap();
    let cast = std::fs::read_dir(day.path()).unwrap().next().unwrap().unwrap();
    let cast = std::fs::read_to_string(cast.path()).unwrap();
    assert!(cast.lines().next().is_some_and(|header| header.contains(r#""version":2"#)), "{cast}");
    assert!(cast.contains(r#""o","via-gateway\n"]"#), "{cast}");
    // [control]: the session through the control API, with the token it made, and nothing without it.
    let token_file = dir.path().join("control.token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600, "the token is private");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let control = std::net::SocketAddr::from(([127, 0, 0, 1], control));
    let (code, _) = kite_testkit::fixtures::http_get(control, "/control/v1/sessions").unwrap();
    assert_eq!(code, 401);
    let (code, _) =
        kite_testkit::fixtures::http_get_with(control, "/control/v1/sessions", &[("Authorization", "Bearer wrong")])
            .unwrap();
    assert_eq!(code, 401);
    let bearer = format!("Bearer {}", token.trim());
    let (code, body) =
        kite_testkit::fixtures::http_get_with(control, "/control/v1/sessions", &[("Authorization", &bearer)]).unwrap();
    assert_eq!(code, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["recent"][0]["sshId"], "alice", "{answer}");
    assert_eq!(answer["recent"][0]["channels"][0]["detail"], "echo via-gateway", "{answer}");
    assert_eq!(answer["recording"], true);
    drop(gateway);
    let key_file = dir.path().join("gateway_host_ed25519_key");
    assert_eq!(
        std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777,
        0o600,
        "the generated host key is private"
    );
}

/// The host key an SSH server on `port` presents, as `ssh-keyscan` reads it.
fn presented_host_key(port: u16) -> String {
    let mut scan = Command::new(require("ssh-keyscan"));
    scan.args(["-t", "ed25519", "-p", &port.to_string(), "127.0.0.1"]);
    let output = run_bounded(scan, None, Duration::from_secs(30));
    let line = text(&output.stdout);
    line.split_whitespace().skip(1).take(2).collect::<Vec<_>>().join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kube_gateway_keeps_its_host_key_in_a_secret_and_refuses_unknown_logins() {
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use kite_testkit::fixtures::{eventually, http_get};
    use kube::api::{Api, PostParams};

    let dir = tempfile::tempdir().unwrap();
    let server = kite_testkit::FakeApiServer::new().unwrap();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let mut ns = Namespace::default();
    ns.metadata.name = Some("kite".into());
    Api::<Namespace>::all(server.client()).create(&PostParams::default(), &ns).await.unwrap();
    let address = server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    kite_testkit::kubeconfig::write(&kubeconfig, address).unwrap();

    let (port, http) = (free_port(), free_port());
    let start = || {
        Gateway(
            kite_with(&["gateway", "--kube", "--kubeconfig", kubeconfig.to_str().unwrap()])
                .args(["--listen", &format!("127.0.0.1:{port}"), "--http", &format!("127.0.0.1:{http}")])
                .args(["--control-listen", "127.0.0.1:0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let gateway = start();
    wait_for_port(port);
    let probes = std::net::SocketAddr::from(([127, 0, 0, 1], http));
    let within = Duration::from_secs(30);
    eventually(within, "/readyz", || async { http_get(probes, "/readyz").filter(|(code, _)| *code == 200) }).await;
    let (_, metrics) = http_get(probes, "/metrics").unwrap();
    assert!(metrics.contains("kite_gateway_routes_synced 1"), "{metrics}");

    // The host key is kept in the Secret, and is the one presented.
    let secret = Api::<Secret>::namespaced(server.client(), "kite").get("kite-gateway-host-key").await.unwrap();
    let stored = String::from_utf8(secret.data.unwrap()["ssh-privatekey"].0.clone()).unwrap();
    let stored = russh::keys::decode_secret_key(&stored, None).unwrap();
    let stored_public = public_line(stored.public_key());
    let presented = tokio::task::spawn_blocking(move || presented_host_key(port)).await.unwrap();
    assert!(stored_public.starts_with(&presented), "presented {presented}, stored {stored_public}");

    // A login that matches no machine is refused.
    let mut ssh = Command::new(require("ssh"));
    ssh.args(ssh_client_options()).args(["-o", "BatchMode=yes", "-o", "PasswordAuthentication=no"]).args([
        "-p",
        &port.to_string(),
        "nobody@127.0.0.1",
        "true",
    ]);
    let output = tokio::task::spawn_blocking(move || run_bounded(ssh, None, Duration::from_secs(30))).await.unwrap();
    assert_eq!(output.status.code(), Some(255), "{}", text(&output.stderr));

    // A restart presents the same key.
    drop(gateway);
    let _again = start();
    wait_for_port(port);
    let again = tokio::task::spawn_blocking(move || presented_host_key(port)).await.unwrap();
    assert_eq!(again, presented);
}
