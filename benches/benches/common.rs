//! Shared by the SSH benchmarks: the peers, the router as a separate
//! process (`kite gateway`), and figures.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use kite_testkit::openssh::{
    Sshd, free_port, new_key, public_line, require, ssh_client_options, wait_for_port, write_key,
};
use kite_testkit::process_group::signal_group;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Whether this is a real run (`cargo bench`) or a smoke pass (`cargo test`).
pub(crate) fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// A free loopback address.
pub(crate) fn free_port_addr() -> std::net::SocketAddr {
    loopback(free_port())
}

/// The `kite` binary, built by `cargo build -p kite-bin` (release when benchmarking).
pub(crate) fn kite_binary() -> PathBuf {
    // This benchmark runs from <target>/<profile>/deps/, so its target
    // directory is three levels up: wherever CARGO_TARGET_DIR put it.
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(std::path::Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
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

/// A command running `kite`, or, when `KITE_BENCH_WRAPPER` is set, running
/// it under that command: `KITE_BENCH_WRAPPER="heaptrack -o /tmp/kite"`
/// profiles its memory (the figures it then prints are the wrapper's).
pub(crate) fn kite_command() -> Command {
    let wrapper = std::env::var("KITE_BENCH_WRAPPER").unwrap_or_default();
    let mut words = wrapper.split_whitespace().map(String::from);
    match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(kite_binary());
            command
        }
        None => Command::new(kite_binary()),
    }
}

/// A `kite` process in a process group of its own: dropping it sends the
/// group SIGTERM, so that a wrapper (a profiler) writes its report and the
/// `kite` under it stops too, and SIGKILL to what is left after 10 s.
pub(crate) struct KiteProcess(pub(crate) Child);

impl KiteProcess {
    /// Starts `command` (from [`kite_command`]) in a new process group.
    pub(crate) fn spawn(command: &mut Command) -> Self {
        Self(command.process_group(0).spawn().unwrap())
    }
}

impl Drop for KiteProcess {
    fn drop(&mut self) {
        signal_group(&self.0, "TERM");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Only while the leader is not yet reaped: then the group's number cannot have been reused.
        if matches!(self.0.try_wait(), Ok(None)) {
            signal_group(&self.0, "KILL");
            // Should the group not have been signalled, the process itself still is.
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// A running `kite gateway` with one route, `bench`, to an upstream.
pub(crate) struct Gateway {
    pub(crate) port: u16,
    pub(crate) child: KiteProcess,
    pub(crate) user_key: PathBuf,
    _dir: tempfile::TempDir,
}

impl Gateway {
    /// Routes `bench` to `sshd`.
    pub(crate) fn start(sshd: &Sshd, upstream_key: &russh::keys::PrivateKey) -> Self {
        Self::start_to(&sshd.address(), sshd.host_key.public_key(), upstream_key)
    }

    /// Routes `bench` to `root` at `address`, whose host key is `host_key`, logging in with `upstream_key`.
    pub(crate) fn start_to(
        address: &str,
        host_key: &russh::keys::PublicKey,
        upstream_key: &russh::keys::PrivateKey,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        write_key(&dir.path().join("upstream"), upstream_key);
        let user = new_key();
        write_key(&dir.path().join("user"), &user);
        let port = free_port();
        let config = format!(
            "listen = \"127.0.0.1:{port}\"\nhost_key = \"host\"\n[options]\nmax_connections = 5000\n# All sessions come from one address, 50 at a time.\nmax_unauthenticated_per_source = 100\n\n[[route]]\nuser = \"bench\"\n\
             authorized_keys = [\"{}\"]\nupstream = \"{}\"\nupstream_user = \"root\"\nupstream_key = \"upstream\"\nupstream_host_key = \"{}\"\n",
            public_line(user.public_key()),
            address,
            public_line(host_key)
        );
        std::fs::write(dir.path().join("gateway.toml"), config).unwrap();
        let child = KiteProcess::spawn(
            kite_command()
                .args(["gateway", "--config"])
                .arg(dir.path().join("gateway.toml"))
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        wait_for_port(port);
        Self { port, child, user_key: dir.path().join("user"), _dir: dir }
    }

    /// The gateway's resident memory, in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.0.id()))
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    }

    /// The CPU time the gateway has used so far, all its threads: user and
    /// system (from `/proc/<pid>/stat`, counted in Linux's fixed 100 ticks a
    /// second). Under `KITE_BENCH_WRAPPER` it is the wrapper's.
    pub(crate) fn cpu_time(&self) -> (Duration, Duration) {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.0.id())).unwrap_or_default();
        // The fields after the command name, which is in parentheses: utime and stime are the 12th and 13th.
        let ticks: Vec<u64> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().skip(11).take(2).filter_map(|t| t.parse().ok()).collect())
            .unwrap_or_default();
        let tick = |i: usize| Duration::from_millis(ticks.get(i).copied().unwrap_or(0) * 10);
        (tick(0), tick(1))
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

/// An upstream that is not sshd: a russh server in the benchmark's process
/// that lets `root` in with one key, answers an exec request with `up\n`
/// and echoes what it is sent, with no process per connection. Against it,
/// a session's setup time is the router's and the key exchanges', not
/// sshd's fork and exec.
pub(crate) struct EchoUpstream {
    pub(crate) address: std::net::SocketAddr,
    pub(crate) host_key: russh::keys::PrivateKey,
    pub(crate) client_key: russh::keys::PrivateKey,
    task: tokio::task::JoinHandle<()>,
}

impl EchoUpstream {
    /// Starts it on a free loopback port; must be called within a Tokio runtime.
    pub(crate) async fn start() -> Self {
        let (host_key, client_key) = (new_key(), new_key());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let config = std::sync::Arc::new(russh::server::Config {
            methods: russh::MethodSet::from(&[russh::MethodKind::PublicKey][..]),
            keys: vec![host_key.clone()],
            auth_rejection_time: Duration::ZERO,
            auth_rejection_time_initial: Some(Duration::ZERO),
            nodelay: true,
            ..Default::default()
        });
        let allowed = client_key.public_key().clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let (config, allowed) = (config.clone(), allowed.clone());
                tokio::spawn(async move {
                    match russh::server::run_stream(config, stream, Echo { allowed }).await {
                        // It ends when the benchmark drops its sessions, with an EOF or a reset.
                        Ok(session) => drop(session.await),
                        Err(error) => eprintln!("the echo upstream's handshake failed: {error}"),
                    }
                });
            }
        });
        Self { address, host_key, client_key, task }
    }
}

impl Drop for EchoUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Echo {
    allowed: russh::keys::PublicKey,
}

impl russh::server::Handler for Echo {
    type Error = russh::Error;

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: russh::server::VerifiedPublicKey<'_>,
    ) -> Result<russh::server::Auth, Self::Error> {
        let allowed = user == "root" && key.public_key.key_data() == self.allowed.key_data();
        Ok(if allowed { russh::server::Auth::Accept } else { russh::server::Auth::reject() })
    }

    async fn channel_open_session(
        &mut self,
        _channel: russh::Channel<russh::server::Msg>,
        reply: russh::server::ChannelOpenHandle,
        _session: &mut russh::server::Session,
    ) -> Result<(), Self::Error> {
        reply.accept().await;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: russh::ChannelId,
        _command: &[u8],
        session: &mut russh::server::Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)?;
        session.data(channel, &b"up\n"[..])
    }

    async fn data(
        &mut self,
        channel: russh::ChannelId,
        data: &[u8],
        session: &mut russh::server::Session,
    ) -> Result<(), Self::Error> {
        session.data(channel, data.to_vec())
    }
}

/// The loopback address of `port`.
pub(crate) fn loopback(port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], port))
}
