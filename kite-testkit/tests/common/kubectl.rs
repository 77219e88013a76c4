//! The real `kubectl` against a `kite-fake-apiserver` process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The fake server's process, stopped when dropped.
pub struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    /// A kubectl for another kubeconfig, with its own cache.
    pub fn with_kubeconfig(kubeconfig: PathBuf, cache: PathBuf) -> Self {
        Self { kubeconfig, cache }
    }

    /// The kubeconfig this kubectl reads.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command.arg("--kubeconfig").arg(&self.kubeconfig).arg("--cache-dir").arg(&self.cache).args(args);
        command.current_dir(repo_root());
        command
    }

    /// Runs kubectl with a 30 s bound; returns (success, stdout, stderr).
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        let mut child =
            self.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        if let Some(input) = stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        } else {
            drop(child.stdin.take());
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("kubectl {args:?} did not finish within 30s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into(),
            String::from_utf8_lossy(&output.stderr).into(),
        )
    }

    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, None)
    }

    pub fn ok_with(&self, args: &[&str], stdin: Option<&str>) -> String {
        let (success, stdout, stderr) = self.run(args, stdin);
        assert!(success, "kubectl {args:?} failed:\n{stdout}\n{stderr}");
        stdout
    }
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn require_kubectl() {
    let found = Command::new("kubectl").args(["version", "--client"]).output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "kubectl is missing: this test drives the real kubectl against kite-fake-apiserver; install kubectl"
    );
}

/// Starts `kite-fake-apiserver` with `extra` arguments on a free loopback port; the server and a kubectl for it.
pub fn start_server(dir: &Path, extra: &[&str]) -> (Server, Kubectl) {
    let kubeconfig = dir.join("kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_kite-fake-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !kubeconfig.exists() {
        assert!(Instant::now() < deadline, "kite-fake-apiserver wrote no kubeconfig within 10s");
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, Kubectl { kubeconfig, cache: dir.join("cache") })
}

/// Checks kubectl is there, then starts a server with `extra` arguments in
/// a fresh directory; keep the directory and the server alive while testing.
pub fn fresh(extra: &[&str]) -> (tempfile::TempDir, Server, Kubectl) {
    require_kubectl();
    let dir = tempfile::tempdir().unwrap();
    let (server, kubectl) = start_server(dir.path(), extra);
    (dir, server, kubectl)
}

/// kubectl's JSON output, parsed.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Runs `kubectl get ... -o json` (`args`) every 50 ms, at most 10 s, until
/// `check` holds; the object then.
pub fn until(
    kubectl: &Kubectl,
    args: &[&str],
    what: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let object = json(&kubectl.ok(args));
        if check(&object) {
            return object;
        }
        assert!(Instant::now() < deadline, "{what} within 10 s: {object}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
