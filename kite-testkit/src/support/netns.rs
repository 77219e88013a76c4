//! A test in a network namespace of its own, for what needs the cluster's
//! network shape: every Service a name, every machine port 22.
//!
//! [`rerun_isolated`] runs one test of the current test binary again, in new
//! network and mount namespaces (`unshare --net --mount`, which needs root,
//! or user namespaces for anyone else), with loopback up and a hosts file of
//! the test's own bind-mounted over `/etc/hosts`. There, the test may bind
//! port 22 of any `127.x` address and name addresses in the hosts file
//! (see [`crate::sim::GuestNetwork::ServiceNames`]) without touching the
//! host's network, its port 22 or its `/etc/hosts`: the namespaces, and
//! everything the test started in them, go when the test ends.
//!
//! ```no_run
//! #[test]
//! fn the_gateway_dials_service_names() {
//!     let Some(hosts_file) = kite_testkit::netns::rerun_isolated("the_gateway_dials_service_names") else {
//!         return; // it ran, and passed, in its own namespaces
//!     };
//!     // Here in the namespaces: `hosts_file` is /etc/hosts.
//!     # let _ = hosts_file;
//! }
//! ```
//!
//! These are test fixtures: they panic with what went wrong.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set, to the hosts file, in the test run inside the namespaces.
pub const INSIDE: &str = "KITE_TESTKIT_HOSTS_FILE";

/// How long the test may take inside before it is stopped.
pub const TIMEOUT: Duration = Duration::from_secs(600);

/// Inside the namespaces: the hosts file mounted over `/etc/hosts` (writable
/// in place). Outside: runs `test` (a test function's full name in this
/// binary) again inside, waits for it (at most [`TIMEOUT`]), panics with its
/// output unless exactly that one test ran and passed, and returns `None`.
pub fn rerun_isolated(test: &str) -> Option<PathBuf> {
    if let Some(hosts) = std::env::var_os(INSIDE) {
        return Some(PathBuf::from(hosts));
    }
    let unshare = tool("unshare", "util-linux");
    tool("ip", "iproute2");
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n::1 localhost\n").unwrap();
    let log = dir.path().join("output");
    let mut command = Command::new(unshare);
    if std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0) != 0 {
        command.args(["--user", "--map-root-user"]);
    }
    let script = r#"ip link set lo up && mount --bind "$0" /etc/hosts && exec "$@""#;
    command
        .args(["--net", "--mount", "--propagation", "private", "sh", "-c", script])
        .arg(&hosts)
        .arg(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, &hosts)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::from(std::fs::File::options().append(true).open(&log).unwrap()));
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            // The whole group: the test and everything it started.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let ran = output.contains("running 1 test") && output.contains("test result: ok. 1 passed");
    match status {
        Some(status) if status.success() && ran => None,
        Some(status) => panic!("{test} in its own network namespace: {status}\n{output}"),
        None => panic!("{test} in its own network namespace was stopped after {TIMEOUT:?}\n{output}"),
    }
}

/// Where `name` is, or a panic that says which package has it.
fn tool(name: &str, package: &str) -> PathBuf {
    ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("{name} is missing: a test in its own network namespace needs it; install {package} (scripts/test.sh does)"))
}
