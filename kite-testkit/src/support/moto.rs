//! moto's S3 server (from PyPI: `pip install 'moto[server]'`), started on a
//! loopback port for a test and killed when dropped: a real S3-compatible
//! service for the audit store's tests. Without Python 3 or moto, starting
//! it fails the test with the command that installs it.
// A test helper: a failure here is the test's failure, said where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The keys moto accepts (any) that tests sign with.
pub const ACCESS_KEY_ID: &str = "kite-test";
/// The secret key that goes with [`ACCESS_KEY_ID`].
pub const SECRET_ACCESS_KEY: &str = "kite-test-secret";

/// A moto S3 server on a loopback port, killed when dropped.
pub struct Moto {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: tempfile::NamedTempFile,
}

impl Moto {
    /// Starts one and waits (at most 60 s) until it answers.
    pub fn start() -> Self {
        match Command::new("python3").args(["-c", "import moto.server, flask"]).output() {
            Err(error) => panic!(
                "python3 is missing ({error}): the S3 store's tests need Python 3 and moto's server: pip install 'moto[server]'"
            ),
            Ok(output) if !output.status.success() => panic!(
                "moto's server is missing: pip install 'moto[server]' (python3 said: {})",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Ok(_) => {}
        }
        // A port that was free a moment ago; if moto loses it to someone
        // else in between, it exits, and another is tried.
        let mut last_log = String::new();
        for _ in 0..3 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port();
            let log = tempfile::NamedTempFile::new().unwrap();
            let child = Command::new("python3")
                .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(log.reopen().unwrap())
                .stderr(log.reopen().unwrap())
                .spawn()
                .unwrap();
            let mut moto = Self { child, port, log };
            if moto.wait_until_it_answers() {
                return moto;
            }
            last_log = std::fs::read_to_string(moto.log.path()).unwrap_or_default();
        }
        panic!("moto's server did not start on a loopback port; its last output:\n{last_log}");
    }

    /// Its URL, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Whether the server answers HTTP within 60 s (false if it exited).
    fn wait_until_it_answers(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if let Some(response) = self.http("GET", "/")
                && response.starts_with("HTTP/1.1 200")
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// One plain HTTP request without a body; the whole response.
    pub fn http(&self, method: &str, path: &str) -> Option<String> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        );
        stream.write_all(request.as_bytes()).ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        Some(response)
    }

    /// Creates the bucket `name`; returns its name.
    pub fn bucket(&self, name: &str) -> String {
        let response = self.http("PUT", &format!("/{name}")).unwrap_or_default();
        assert!(response.starts_with("HTTP/1.1 200"), "creating bucket {name}: {response}");
        name.to_string()
    }

    /// The keys of the objects in `bucket` (its first thousand), from a plain listing.
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        let response = self.http("GET", &format!("/{bucket}?list-type=2")).unwrap_or_default();
        response
            .split("<Key>")
            .skip(1)
            .filter_map(|rest| rest.split_once("</Key>").map(|(key, _)| key.to_string()))
            .collect()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
