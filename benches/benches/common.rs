//! Shared by the SSH benchmarks: the peers, the router as a separate
//! process (`kite gateway`), and figures.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use kite_testkit::openssh::{
    Sshd, free_port, new_key, public_line, require, ssh_client_options, wait_for_port, write_key,
};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Whether this is a real run (`cargo bench`) or a smoke pass (`cargo test`).
pub(crate) fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// A free loopback address.
pub(crate) fn free_port_addr() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], free_port()))
}

/// The `kite` binary, built by `cargo build -p kite-bin` (release when benchmarking).
pub(crate) fn kite_binary() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target");
    let profile = if full_run() { "release" } else { "debug" };
    let path = target.join(profile).join("kite");
    if !path.exists() {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "-q", "-p", "kite-bin"]);
        if full_run() {
            build.arg("--release");
        }
        assert!(build.status().unwrap().success(), "building kite failed");
    }
    path
}

/// A running `kite gateway` with one route, `bench`, to `sshd`.
pub(crate) struct Gateway {
    pub(crate) port: u16,
    pub(crate) child: Child,
    pub(crate) user_key: PathBuf,
    _dir: tempfile::TempDir,
}

impl Gateway {
    pub(crate) fn start(sshd: &Sshd, upstream_key: &russh::keys::PrivateKey) -> Self {
        let dir = tempfile::tempdir().unwrap();
        write_key(&dir.path().join("upstream"), upstream_key);
        let user = new_key();
        write_key(&dir.path().join("user"), &user);
        let port = free_port();
        let config = format!(
            "listen = \"127.0.0.1:{port}\"\nhost_key = \"host\"\n[options]\nmax_connections = 5000\n\n[[route]]\nuser = \"bench\"\n\
             authorized_keys = [\"{}\"]\nupstream = \"{}\"\nupstream_user = \"root\"\nupstream_key = \"upstream\"\nupstream_host_key = \"{}\"\n",
            public_line(user.public_key()),
            sshd.address(),
            public_line(sshd.host_key.public_key())
        );
        std::fs::write(dir.path().join("gateway.toml"), config).unwrap();
        let child = Command::new(kite_binary())
            .args(["gateway", "--config"])
            .arg(dir.path().join("gateway.toml"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_port(port);
        Self { port, child, user_key: dir.path().join("user"), _dir: dir }
    }

    /// The gateway's resident memory, in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ssh` options for a benchmark: no config, no host key prompts, quiet.
pub(crate) fn ssh_base(key: &Path, port: u16) -> Vec<String> {
    let _ = require("ssh");
    let mut args = ssh_client_options();
    args.extend(["-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i"].map(String::from));
    args.extend([key.display().to_string(), "-p".into(), port.to_string()]);
    args
}

/// The p-th percentile (0..=100) of sorted samples.
pub(crate) fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) * p) / 100]
}

/// Starts sshd for benchmarks: it accepts the upstream key.
pub(crate) fn bench_sshd() -> (Sshd, russh::keys::PrivateKey, PathBuf, tempfile::TempDir) {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("upstream");
    write_key(&key_path, &upstream_key);
    (sshd, upstream_key, key_path, dir)
}

pub(crate) fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
