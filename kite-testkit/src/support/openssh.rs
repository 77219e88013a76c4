//! OpenSSH peers for tests: a real `sshd` on loopback with a generated
//! configuration, keys in OpenSSH files, and bounded runs of the OpenSSH
//! programs. Tests only talk to loopback, and every process they start is
//! stopped when its handle is dropped.
//!
//! These are test fixtures: a failure here means the test's environment is
//! broken, and the test must stop there, so they panic rather than return errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use russh::keys::ssh_key::LineEnding;
use russh::keys::{Algorithm, PrivateKey, PublicKey};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Fails with a clear message when a tool the tests drive is missing.
pub fn require(tool: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"] {
        let path = Path::new(dir).join(tool);
        if path.exists() {
            return path;
        }
    }
    panic!(
        "{tool} is missing: these tests drive the real OpenSSH programs; install openssh-client and openssh-server (scripts/test.sh does)"
    );
}

/// A new ed25519 key.
pub fn new_key() -> PrivateKey {
    PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).unwrap()
}

/// Writes a private key as an OpenSSH file with mode 0600.
pub fn write_key(path: &Path, key: &PrivateKey) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, key.to_openssh(LineEnding::LF).unwrap().as_bytes()).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The `authorized_keys` line of a public key.
pub fn public_line(key: &PublicKey) -> String {
    key.to_openssh().unwrap()
}

/// A free loopback port (released for the caller to bind).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits, up to ten seconds, until something listens on the loopback port.
pub fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on 127.0.0.1:{port} after 10s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An sshd configuration for a server on `127.0.0.1:<port>` whose host key,
/// `authorized_keys`, pid file and log are in `dir`: key login only, no
/// PAM, verbose logs; `extra` lines are appended.
pub fn sshd_config(dir: &Path, port: u16, extra: &str) -> String {
    sshd_config_at(dir, std::net::SocketAddr::from(([127, 0, 0, 1], port)), extra)
}

/// [`sshd_config`] for a server listening on `address`.
pub fn sshd_config_at(dir: &Path, address: std::net::SocketAddr, extra: &str) -> String {
    format!(
        "ListenAddress {address}\nHostKey {dir}/host_key\nAuthorizedKeysFile {dir}/authorized_keys\n\
         PidFile {dir}/sshd.pid\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
         PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\nLogLevel VERBOSE\n{extra}",
        dir = dir.display()
    )
}

/// A real sshd on loopback, logging in as this user with one authorized key.
pub struct Sshd {
    /// Its loopback port.
    pub port: u16,
    /// Its host key, to pin.
    pub host_key: PrivateKey,
    /// Its configuration, keys and log.
    pub dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Sshd {
    /// Starts sshd that accepts `authorized` for any user (key login only).
    pub fn start(authorized: &PublicKey) -> Self {
        Self::start_with(authorized, new_key(), free_port())
    }

    /// Starts sshd with a given host key on a given port.
    pub fn start_with(authorized: &PublicKey, host_key: PrivateKey, port: u16) -> Self {
        Self::launch(authorized, host_key, port, &[])
    }

    /// Starts sshd with options given as `-o` on its command line, which
    /// win over its configuration file (`LogLevel=DEBUG1`, to read what it
    /// negotiated).
    pub fn start_with_options(authorized: &PublicKey, options: &[&str]) -> Self {
        Self::launch(authorized, new_key(), free_port(), options)
    }

    fn launch(authorized: &PublicKey, host_key: PrivateKey, port: u16, options: &[&str]) -> Self {
        let sshd = require("sshd");
        std::fs::create_dir_all("/run/sshd").unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_key(&dir.path().join("host_key"), &host_key);
        std::fs::write(dir.path().join("authorized_keys"), public_line(authorized) + "\n").unwrap();
        let extra = "AllowTcpForwarding yes\nAllowAgentForwarding yes\nGatewayPorts no\nAcceptEnv KITE_*\n\
                     MaxStartups 100:30:200\nMaxSessions 100\n";
        let config = sshd_config(dir.path(), port, extra);
        std::fs::write(dir.path().join("sshd_config"), config).unwrap();
        let log = std::fs::File::create(dir.path().join("sshd.log")).unwrap();
        let child = Command::new(sshd)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(dir.path().join("sshd_config"))
            .args(options.iter().flat_map(|option| ["-o", option]))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        wait_for_port(port);
        Self { port, host_key, dir, child: Some(child) }
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What sshd logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// Stops sshd.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A process (an `ssh -N` forward, a ControlMaster, a router) killed and
/// reaped when dropped.
pub struct Background(pub std::process::Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TCP echo server on loopback, for port-forwarding tests; it serves
/// until the test's runtime ends.
pub async fn echo_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    port
}

/// The user's side: a key file for `ssh -i` and its public key.
pub struct UserKey {
    /// The key.
    pub key: PrivateKey,
    /// Its file.
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Default for UserKey {
    fn default() -> Self {
        Self::new()
    }
}

impl UserKey {
    /// A new key in a new private file.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let key = new_key();
        let path = dir.path().join("id_ed25519");
        write_key(&path, &key);
        Self { key, path, _dir: dir }
    }
}

/// Runs a command, feeding `stdin`, killing it after `limit`. Its output is
/// read while it runs, so a command that prints more than a pipe holds does
/// not wait on the test.
pub fn run_bounded(mut command: Command, stdin: Option<Vec<u8>>, limit: Duration) -> Output {
    use std::io::{Read, Write};
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        if let Some(bytes) = stdin {
            let _ = input.write_all(&bytes);
        }
    });
    // Read on threads that hand their bytes over a channel: a pipe can stay
    // open after the command ends (an `ssh -S` client passes its standard
    // streams to the ControlMaster), so they are waited for a bounded time.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        let (done, bytes) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut read = Vec::new();
            let _ = pipe.read_to_end(&mut read);
            let _ = done.send(read);
        });
        bytes
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // A writer still blocked on a pipe the killed command handed on is left
    // behind, not waited for.
    if status.is_some() {
        let _ = writer.join();
    }
    let collect =
        |bytes: std::sync::mpsc::Receiver<Vec<u8>>| bytes.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    let Some(status) = status else {
        panic!(
            "{command:?} did not finish within {limit:?}\nstdout ({} bytes): {}\nstderr: {}",
            stdout.len(),
            String::from_utf8_lossy(&stdout[..stdout.len().min(2048)]),
            String::from_utf8_lossy(&stderr)
        );
    };
    Output { status, stdout, stderr }
}

/// Bytes as text, lossily.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The OpenSSH client options every test and benchmark uses: no user
/// configuration, no host-key prompts or records, quiet.
pub fn ssh_client_options() -> Vec<String> {
    ["-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}
