//! Real peers for kite-ssh's tests: an OpenSSH `sshd` on loopback as the
//! backend, the OpenSSH client as the user, and the router in-process.
#![allow(dead_code)]

use kite_ssh::backend::HostKeyCheck;
use kite_ssh::{Router, RouterOptions, StaticBackend, StaticRoute};
pub use kite_testkit::openssh::*;
use russh::keys::{PrivateKey, PublicKey};
use std::net::SocketAddr;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

/// A route for `user` to `sshd`, as root there, with the upstream key pinned.
pub fn route(user: &str, sshd: &Sshd, upstream_key: &PrivateKey) -> StaticRoute {
    StaticRoute {
        user: user.into(),
        password_hash: Some(kite_ssh::password::hash_for_tests("secret").unwrap()),
        authorized_keys: vec![],
        upstream: sshd.address(),
        upstream_user: "root".into(),
        upstream_key: Arc::new(upstream_key.clone()),
        upstream_host_key: HostKeyCheck::Pinned(sshd.host_key.public_key().clone()),
    }
}

/// Options fit for tests: short delays and retries.
pub fn test_options() -> RouterOptions {
    RouterOptions::default()
        .with_rejection_delay(Duration::from_millis(50))
        .with_retry_interval(Duration::from_millis(200))
        .with_starting_timeout(Duration::from_secs(3))
        .with_connect_timeout(Duration::from_secs(3))
}

/// The router, serving on a loopback port until dropped.
pub struct RunningRouter {
    pub port: u16,
    pub host_key: PrivateKey,
    pub sessions: kite_ssh::live::Sessions,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningRouter {
    pub async fn start<B: kite_ssh::backend::Backend>(backend: B, options: RouterOptions) -> Self {
        Self::start_with_key(backend, options, new_key()).await
    }

    pub async fn start_with_key<B: kite_ssh::backend::Backend>(
        backend: B,
        options: RouterOptions,
        host_key: PrivateKey,
    ) -> Self {
        Self::start_audited(backend, options, host_key, Arc::new(kite_ssh::audit::LogOnly)).await
    }

    pub async fn start_audited<B: kite_ssh::backend::Backend>(
        backend: B,
        options: RouterOptions,
        host_key: PrivateKey,
        audit: Arc<dyn kite_ssh::audit::AuditSink>,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let router = Router::builder()
            .backend(backend)
            .host_key(host_key.clone())
            .options(options)
            .audit(audit)
            .build()
            .unwrap();
        let sessions = router.sessions();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            router
                .serve(listener, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self { port, host_key, sessions, stop: Some(stop), task: Some(task) }
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
    }

    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }
}

impl Drop for RunningRouter {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub fn static_backend(routes: Vec<StaticRoute>) -> StaticBackend {
    StaticBackend::new(routes).unwrap()
}

/// `ssh` with no user config, no host key prompts, and a bound run time.
pub struct Ssh {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
    askpass: Option<tempfile::TempDir>,
}

impl Ssh {
    pub fn to(router: &RunningRouter, login: &str) -> Self {
        let mut args = ssh_client_options();
        args.extend([
            "-o".into(),
            "ConnectTimeout=10".into(),
            "-p".into(),
            router.port.to_string(),
            "-l".into(),
            login.into(),
        ]);
        Self { args, env: vec![], stdin: None, askpass: None }
    }

    pub fn key(mut self, key: &UserKey) -> Self {
        self.args.extend(["-i".into(), key.path.display().to_string(), "-o".into(), "IdentitiesOnly=yes".into()]);
        self.args.extend([
            "-o".into(),
            "PreferredAuthentications=publickey".into(),
            "-o".into(),
            "BatchMode=yes".into(),
        ]);
        self
    }

    /// Password login through SSH_ASKPASS (no terminal needed).
    pub fn password(mut self, password: &str, method: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("askpass.sh");
        std::fs::write(&script, format!("#!/bin/sh\nprintf '%s\\n' '{password}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        self.env.push(("SSH_ASKPASS".into(), script.display().to_string()));
        self.env.push(("SSH_ASKPASS_REQUIRE".into(), "force".into()));
        self.env.push(("DISPLAY".into(), ":0".into()));
        // Removed when the Ssh is dropped, after its runs.
        self.askpass = Some(dir);
        self.args.extend([
            "-o".into(),
            format!("PreferredAuthentications={method}"),
            "-o".into(),
            "NumberOfPasswordPrompts=1".into(),
        ]);
        self.args.extend(["-o".into(), "PubkeyAuthentication=no".into()]);
        self
    }

    pub fn opt(mut self, option: &str) -> Self {
        self.args.extend(["-o".into(), option.into()]);
        self
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// The arguments for `scp`/`sftp`, which take the port as `-P` and the
    /// login in the destination, and that destination's `login@127.0.0.1`.
    pub fn transfer_args(&self) -> (Vec<String>, String) {
        let mut args = Vec::new();
        let mut login = String::new();
        let mut iter = self.args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-p" => args.push("-P".to_string()),
                "-l" => login = iter.next().cloned().unwrap_or_default(),
                _ => args.push(arg.clone()),
            }
        }
        (args, format!("{login}@127.0.0.1"))
    }

    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(require(program));
        command.args(&self.args);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    /// Runs `ssh <args> <host> <remote>` with a 60 s bound.
    pub fn run(&self, remote: &[&str]) -> Output {
        let mut command = self.command("ssh");
        command.arg("127.0.0.1").args(remote);
        run_bounded(command, self.stdin.clone(), Duration::from_secs(60))
    }
}

impl Ssh {
    /// `ssh <args> <extra> 127.0.0.1` with no standard streams, running
    /// until the returned [`Background`] is dropped.
    pub fn background(&self, extra: &[&str]) -> Background {
        let mut command = self.command("ssh");
        command
            .args(extra)
            .arg("127.0.0.1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        Background(command.spawn().unwrap())
    }
}

/// A TCP relay on loopback in front of a backend, that can be cut to play
/// a backend dying mid-session.
pub struct Relay {
    pub port: u16,
    cut: tokio::sync::watch::Sender<bool>,
}

impl Relay {
    pub async fn start(target: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, cut_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut stop = cut_rx.clone();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((mut inbound, _)) = accepted else { return };
                        let target = target.clone();
                        let mut stop = cut_rx.clone();
                        tokio::spawn(async move {
                            let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else { return };
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                                _ = stop.changed() => {}
                            }
                        });
                    }
                    _ = stop.changed() => return,
                }
            }
        });
        Self { port, cut }
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Drops every connection and stops listening.
    pub fn cut(&self) {
        let _ = self.cut.send(true);
    }
}

/// A small SSH server (russh) that plays a host's own sshd for the fallback
/// route: it accepts one user with one password and answers `exec` with
/// `fallback ran: <command>`.
pub async fn password_server(user: &'static str, password: &'static str) -> (u16, PublicKey) {
    use russh::server::{Auth, Msg, Session};
    use russh::{Channel, ChannelId};

    struct Server {
        user: &'static str,
        password: &'static str,
    }

    impl russh::server::Handler for Server {
        type Error = russh::Error;
        async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
            Ok(if user == self.user && password == self.password { Auth::Accept } else { Auth::reject() })
        }
        async fn channel_open_session(
            &mut self,
            _channel: Channel<Msg>,
            reply: russh::server::ChannelOpenHandle,
            _session: &mut Session,
        ) -> Result<(), Self::Error> {
            reply.accept().await;
            Ok(())
        }
        async fn exec_request(
            &mut self,
            channel: ChannelId,
            data: &[u8],
            session: &mut Session,
        ) -> Result<(), Self::Error> {
            session.channel_success(channel)?;
            let handle = session.handle();
            let line = format!("fallback ran: {}\n", String::from_utf8_lossy(data));
            tokio::spawn(async move {
                let _ = handle.data(channel, line.into_bytes()).await;
                let _ = handle.exit_status_request(channel, 0).await;
                let _ = handle.eof(channel).await;
                let _ = handle.close(channel).await;
            });
            Ok(())
        }
    }

    let key = new_key();
    let public = key.public_key().clone();
    let config = Arc::new(russh::server::Config {
        keys: vec![key],
        auth_rejection_time: Duration::from_millis(10),
        auth_rejection_time_initial: Some(Duration::ZERO),
        ..Default::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let config = config.clone();
            tokio::spawn(async move {
                if let Ok(session) = russh::server::run_stream(config, stream, Server { user, password }).await {
                    let _ = session.await;
                }
            });
        }
    });
    (port, public)
}

/// The usual arrangement: an sshd, and a router with one route `alice` to
/// it that takes the password `secret` or the key of `user`.
pub struct Setup {
    pub sshd: Sshd,
    pub router: RunningRouter,
    pub user: UserKey,
}

pub async fn setup() -> Setup {
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let user = UserKey::new();
    let mut alice = route("alice", &sshd, &upstream_key);
    alice.authorized_keys = vec![user.key.public_key().clone()];
    let router = RunningRouter::start(static_backend(vec![alice]), test_options()).await;
    Setup { sshd, router, user }
}

/// A russh client handler that accepts any host key (each test's router has a fresh one).
pub struct AnyHostKey;

impl russh::client::Handler for AnyHostKey {
    type Error = russh::Error;
    async fn check_server_key(&mut self, _key: &russh::keys::PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        Ok(true)
    }
}

/// A russh client signed in through `router` as `alice` with `user`'s key.
pub async fn signed_in(router: &RunningRouter, user: &UserKey) -> russh::client::Handle<AnyHostKey> {
    let config = Arc::new(russh::client::Config::default());
    let mut handle = russh::client::connect(config, router.address(), AnyHostKey).await.unwrap();
    let key = russh::keys::PrivateKeyWithHashAlg::new(Arc::new(user.key.clone()), None);
    let signed = handle.authenticate_publickey("alice", key).await.unwrap();
    assert!(matches!(signed, russh::client::AuthResult::Success), "alice's key was refused: {signed:?}");
    handle
}

/// Reads a channel's stdout until `needle` shows up (10 s at most); what was read.
pub async fn read_until(channel: &mut russh::Channel<russh::client::Msg>, needle: &str) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut seen = String::new();
    while !seen.contains(needle) {
        match tokio::time::timeout_at(deadline, channel.wait()).await {
            Ok(Some(russh::ChannelMsg::Data { data })) => seen.push_str(&String::from_utf8_lossy(&data)),
            Ok(Some(_)) => {}
            other => panic!("no {needle:?} (saw {seen:?}): {other:?}"),
        }
    }
    seen
}
