//! An embedder's test, run as an outsider: the book's port_router (this
//! crate's binary, built against kite-ssh as a user gets it, without the
//! workspace's [patch]) between the real OpenSSH client and a real `sshd`
//! on loopback, through issue 11's flow-control cases
//! (kite-ssh/tests/flow_cases/mod.rs, shared with kite-ssh's own test).
//! The user signs in with a password as `<sshd port>`.
//!
//! And a check that this crate resolved Kite's fork of russh: without it,
//! an embedder gets upstream russh, whose flow control these cases show.

#[path = "../../../kite-ssh/tests/flow_cases/mod.rs"]
mod flow_cases;

use flow_cases::*;
use kite_testkit::openssh::{
    Background, Sshd, free_port, new_key, public_line, require, ssh_client_options, write_key,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The russh this crate must resolve for kite-ssh: Kite's fork, the package
/// `kite-russh` from vendor/kite-russh (a path, no registry), at this exact
/// version. Change both when the fork moves to another russh release.
const EXPECTED_RUSSH: (&str, &str) = ("kite-russh", "0.65.4-kite.1");

/// The password port_router takes (its KITE_PASSWORD_HASH is made from it).
const PASSWORD: &str = "secret";

/// port_router and the sshd behind it, each stopped when dropped (in this
/// order), and then their directory removed.
struct Setup {
    router: Background,
    router_port: u16,
    sshd: Sshd,
    /// The keys, the askpass script, port_router's host key and its log.
    dir: tempfile::TempDir,
}

/// Starts an sshd that takes port_router's upstream key, and port_router
/// (the binary) on a free loopback port, in a directory of its own.
fn setup() -> Setup {
    require("ssh");
    let dir = tempfile::tempdir().unwrap();
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let (key_file, host_key_file) = (dir.path().join("upstream_key"), dir.path().join("upstream_host_key.pub"));
    write_key(&key_file, &upstream_key);
    std::fs::write(&host_key_file, public_line(sshd.host_key.public_key()) + "\n").unwrap();
    let askpass = dir.path().join("askpass.sh");
    std::fs::write(&askpass, format!("#!/bin/sh\nprintf '%s\\n' '{PASSWORD}'\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();

    let router_port = free_port();
    let log = std::fs::File::create(dir.path().join("port_router.log")).unwrap();
    let router = Command::new(env!("CARGO_BIN_EXE_port_router"))
        .arg(&key_file)
        .arg(&host_key_file)
        .env("KITE_PASSWORD_HASH", kite_ssh::password::hash_for_tests(PASSWORD).unwrap())
        .env("PORT_ROUTER_LISTEN", format!("127.0.0.1:{router_port}"))
        // port_router keeps its host key in the current directory.
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut s = Setup { router: Background(router), router_port, sshd, dir };
    s.wait_for_router();
    s
}

impl Setup {
    /// Waits, up to 30 s, until port_router listens; fails with its log if
    /// it ends or does not come up.
    fn wait_for_router(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.router_port)).is_err() {
            let ended = self.router.0.try_wait().unwrap();
            assert!(
                ended.is_none() && Instant::now() < deadline,
                "port_router did not come up on 127.0.0.1:{} ({}):\n{}",
                self.router_port,
                ended.map_or("still running after 30 s".to_string(), |status| format!("it ended: {status}")),
                std::fs::read_to_string(self.dir.path().join("port_router.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `ssh` to port_router as `<sshd port>`, with the password (through
    /// SSH_ASKPASS: no terminal needed) and no key.
    fn ssh(&self) -> Command {
        let mut command = Command::new(require("ssh"));
        command.args(ssh_client_options());
        command.args([
            "-o",
            "ConnectTimeout=10",
            "-p",
            &self.router_port.to_string(),
            "-l",
            &self.sshd.port.to_string(),
        ]);
        command.args(["-o", "PreferredAuthentications=password", "-o", "NumberOfPasswordPrompts=1"]);
        command.args(["-o", "PubkeyAuthentication=no"]);
        command.env("SSH_ASKPASS", self.dir.path().join("askpass.sh"));
        command.env("SSH_ASKPASS_REQUIRE", "force");
        command.env("DISPLAY", ":0");
        command
    }
}

/// The password login works, and the command runs on the sshd behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_router_signs_in_with_the_password_and_runs_a_command() {
    let s = setup();
    let mut ssh = s.ssh();
    ssh.args(["127.0.0.1", "echo routed"]);
    let output = kite_testkit::openssh::run_bounded(ssh, None, Duration::from_secs(60));
    assert!(output.status.success(), "ssh through port_router failed: {}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.stdout, b"routed\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_8_mib_both_ways_at_once() {
    let s = setup();
    cat_echoes(s.ssh(), 8 * MIB, Duration::from_secs(60)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_32_mib_both_ways_at_once() {
    let s = setup();
    cat_echoes(s.ssh(), 32 * MIB, Duration::from_secs(90)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_128_mib_both_ways_at_once() {
    let s = setup();
    cat_echoes(s.ssh(), 128 * MIB, Duration::from_secs(180)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_channels_of_one_connection_each_echo_16_mib_at_once() {
    let s = setup();
    two_channels_of_one_connection_each_echo(&|| s.ssh(), 16 * MIB, Duration::from_secs(90)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_forward_carries_64_mib_both_ways_and_then_a_second_connection() {
    let s = setup();
    a_local_forward_carries_both_ways_and_then_a_second_connection(&|| s.ssh(), 64 * MIB, Duration::from_secs(120))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_who_stops_reading_one_channel_stalls_only_that_direction_of_that_channel() {
    let s = setup();
    flow_cases::a_user_who_stops_reading_one_channel_stalls_only_that_direction_of_that_channel(&|| s.ssh()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_that_stops_reading_one_channel_stalls_only_that_channel() {
    let s = setup();
    flow_cases::a_machine_that_stops_reading_one_channel_stalls_only_that_channel(&|| s.ssh()).await;
}

/// One package of Cargo.lock: its name, version, source (none for a path)
/// and dependencies (as Cargo.lock writes them: `name`, or `name version`).
struct Locked {
    name: String,
    version: String,
    source: Option<String>,
    dependencies: Vec<String>,
}

fn locked_packages(lock: &str) -> Vec<Locked> {
    let quoted = |line: &str| line.split('"').nth(1).unwrap_or_default().to_string();
    lock.split("[[package]]")
        .skip(1)
        .map(|block| {
            let field = |key: &str| block.lines().find(|l| l.starts_with(&format!("{key} = "))).map(quoted);
            let dependencies: Vec<String> = block
                .split_once("dependencies = [")
                .map(|(_, list)| list.split(']').next().unwrap_or_default().lines().map(quoted).collect())
                .unwrap_or_default();
            Locked {
                name: field("name").unwrap_or_default(),
                version: field("version").unwrap_or_default(),
                source: field("source"),
                dependencies: dependencies.into_iter().filter(|d| !d.is_empty()).collect(),
            }
        })
        .collect()
}

/// Which russh this crate resolved for kite-ssh, read from its Cargo.lock:
/// it must be Kite's fork (EXPECTED_RUSSH, from a path), and no other russh.
#[test]
fn kite_ssh_resolves_kites_russh_fork() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).unwrap();
    let packages = locked_packages(&lock);
    let is_russh = |name: &str| name == "russh" || name == EXPECTED_RUSSH.0;
    let kite_ssh = packages.iter().find(|p| p.name == "kite-ssh").expect("no kite-ssh in tests/embedder/Cargo.lock");
    let wanted = kite_ssh
        .dependencies
        .iter()
        .find(|d| is_russh(d.split(' ').next().unwrap_or_default()))
        .expect("kite-ssh depends on no russh in tests/embedder/Cargo.lock");
    let mut wanted = wanted.split(' ');
    let (name, version) = (wanted.next().unwrap_or_default(), wanted.next());
    let russh = packages
        .iter()
        .find(|p| p.name == name && version.is_none_or(|v| v == p.version))
        .expect("kite-ssh's russh is not in tests/embedder/Cargo.lock");
    let from = |p: &Locked| p.source.clone().unwrap_or_else(|| "a path".to_string());
    println!("kite-ssh resolved {} {} from {}", russh.name, russh.version, from(russh));
    let all: Vec<_> = packages.iter().filter(|p| is_russh(&p.name)).collect();
    for p in &all {
        println!("in the lock: {} {} from {}", p.name, p.version, from(p));
    }
    assert!(
        russh.name == EXPECTED_RUSSH.0 && russh.version == EXPECTED_RUSSH.1 && russh.source.is_none(),
        "kite-ssh resolved {} {} from {}, not Kite's fork ({} {} from a path): an embedder gets upstream russh's flow control",
        russh.name,
        russh.version,
        from(russh),
        EXPECTED_RUSSH.0,
        EXPECTED_RUSSH.1
    );
    assert_eq!(all.len(), 1, "more than one russh in tests/embedder/Cargo.lock");
}
