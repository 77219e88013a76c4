//! Flow control through a router with the real OpenSSH client and `sshd`
//! (issue 11): data flowing both ways at full rate on one channel, on
//! several channels of one connection at once, and a stuck reader on one
//! channel that must slow only its own direction of its own channel.
//!
//! The cases are shared, one file included by two tests: kite-ssh's own
//! (kite-ssh/tests/flow_control.rs: the router in-process, a key login) and
//! an outside embedder's (tests/embedder/tests/flow_control.rs: the book's
//! port_router as a process, a password login). Each case is given how to
//! reach the router: a function that makes a new `ssh` command with the
//! client's options, the router's port, the login and its authentication,
//! to which the case adds its own options, the host and the remote command.
//!
//! Every payload is compared by its SHA-256; every wait is bounded in time;
//! every process a case starts is stopped when the case ends.
#![allow(dead_code)]

use kite_testkit::openssh::{Background, echo_server, free_port, run_bounded, text};
use sha2::{Digest, Sha256};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How a case reaches the router: a new `ssh` command, without host.
pub type Reach<'a> = &'a (dyn Fn() -> Command + Sync);

pub const MIB: usize = 1 << 20;

/// `len` bytes that do not repeat in any short period (xorshift), so a lost,
/// doubled or reordered packet changes the hash.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Sends `len` bytes through `<ssh> 127.0.0.1 cat` and checks what comes
/// back by hash; returns what `ssh` wrote on stderr.
pub async fn cat_echoes(mut ssh: Command, len: usize, limit: Duration) -> String {
    let input = payload(len, len as u64);
    let expected = sha256(&input);
    ssh.arg("127.0.0.1").arg("cat");
    let output = tokio::task::spawn_blocking(move || run_bounded(ssh, Some(input), limit)).await.unwrap();
    assert!(output.status.success(), "ssh cat failed: {}", text(&output.stderr));
    assert_eq!(output.stdout.len(), len, "cat echoed {} of {len} bytes", output.stdout.len());
    assert_eq!(sha256(&output.stdout), expected, "the echo of {len} bytes differs from what was sent");
    text(&output.stderr)
}

/// `<ssh> <extra> 127.0.0.1` with no standard streams, running until the
/// returned [`Background`] is dropped.
fn background(mut ssh: Command, extra: &[&str]) -> Background {
    ssh.args(extra).arg("127.0.0.1").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    Background(ssh.spawn().unwrap())
}

/// A ControlMaster connection to the router: later `ssh -S` runs are new
/// channels of this one SSH connection.
pub struct Master<'a> {
    reach: Reach<'a>,
    control_path: String,
    _process: Background,
    _dir: tempfile::TempDir,
}

impl<'a> Master<'a> {
    pub async fn start(reach: Reach<'a>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("control.sock");
        let control_path = format!("ControlPath={}", socket.display());
        let process = background(reach(), &["-o", &control_path, "-o", "ControlMaster=yes", "-N"]);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while !socket.exists() {
            assert!(tokio::time::Instant::now() < deadline, "the ControlMaster connection did not come up");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self { reach, control_path, _process: process, _dir: dir }
    }

    /// `ssh -S <socket> 127.0.0.1 <remote>`: a new channel of the master's connection.
    pub fn channel(&self, remote: &str) -> Command {
        let mut command = (self.reach)();
        command.args(["-o", &self.control_path, "-o", "ControlMaster=no", "127.0.0.1", remote]);
        command
    }
}

/// Two `cat` channels of one connection, each echoing `len` bytes at once.
pub async fn two_channels_of_one_connection_each_echo(reach: Reach<'_>, len: usize, limit: Duration) {
    let master = Master::start(reach).await;
    let runs: Vec<_> = (0..2u64)
        .map(|seed| {
            let input = payload(len, 100 + seed);
            let expected = sha256(&input);
            let command = master.channel("cat");
            std::thread::spawn(move || (expected, run_bounded(command, Some(input), limit)))
        })
        .collect();
    for run in runs {
        let (expected, output) = run.join().unwrap();
        assert!(output.status.success(), "a channel's cat failed: {}", text(&output.stderr));
        assert_eq!(sha256(&output.stdout), expected, "a channel echoed {} of its {len} bytes", output.stdout.len());
    }
}

/// Writes `input` to a TCP connection on `port` while reading the echo, and
/// returns what came back, within `limit`.
pub async fn echo_over_tcp(port: u16, input: Vec<u8>, limit: Duration) -> Vec<u8> {
    let exchange = async {
        let stream = connect_when_listening(port).await;
        let (mut read, mut write) = stream.into_split();
        let len = input.len();
        let writer = tokio::spawn(async move {
            write.write_all(&input).await.unwrap();
            write.shutdown().await.unwrap();
        });
        let mut back = Vec::with_capacity(len);
        read.read_to_end(&mut back).await.unwrap();
        writer.await.unwrap();
        back
    };
    tokio::time::timeout(limit, exchange).await.unwrap_or_else(|_| panic!("the echo through port {port} stalled"))
}

pub async fn connect_when_listening(port: u16) -> tokio::net::TcpStream {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            return stream;
        }
        assert!(tokio::time::Instant::now() < deadline, "nothing listens on the forwarded port {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `ssh -N -L <port>:127.0.0.1:<target>` through the router, to a TCP echo
/// server: `len` bytes both ways at full rate, then a second connection (a
/// new channel of the same SSH connection, after the first one's traffic).
pub async fn a_local_forward_carries_both_ways_and_then_a_second_connection(
    reach: Reach<'_>,
    len: usize,
    limit: Duration,
) {
    let echo = echo_server().await;
    let port = free_port();
    let _forward = background(reach(), &["-N", "-L", &format!("{port}:127.0.0.1:{echo}")]);
    let input = payload(len, 7);
    let expected = sha256(&input);
    let back = echo_over_tcp(port, input, limit).await;
    assert_eq!(back.len(), len, "the forward echoed {} of {len} bytes", back.len());
    assert_eq!(sha256(&back), expected);
    let second = payload(2 * MIB, 8);
    let expected = sha256(&second);
    let back = echo_over_tcp(port, second, Duration::from_secs(30)).await;
    assert_eq!(sha256(&back), expected, "the second connection through the forward got {} bytes", back.len());
}

/// A server that counts what it reads and, at the same time, writes without
/// end: its client will not read, so its writes back up while its reads
/// must go on.
async fn counting_spammer() -> (u16, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let counted = Arc::new(AtomicU64::new(0));
    let total = counted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let total = total.clone();
            tokio::spawn(async move {
                let (mut read, mut write) = stream.into_split();
                let spam = tokio::spawn(async move {
                    let chunk = vec![b'x'; 64 * 1024];
                    while write.write_all(&chunk).await.is_ok() {}
                });
                let mut buffer = vec![0u8; 64 * 1024];
                while let Ok(n) = read.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    total.fetch_add(n as u64, Ordering::SeqCst);
                }
                spam.abort();
            });
        }
    });
    (port, counted)
}

/// The user stops reading one forwarded channel (16 MiB up, a flood down
/// that is never read) while another channel of the same connection
/// carries 32 MiB both ways.
pub async fn a_user_who_stops_reading_one_channel_stalls_only_that_direction_of_that_channel(reach: Reach<'_>) {
    let (spammer, counted) = counting_spammer().await;
    let echo = echo_server().await;
    // One SSH connection with two forwards: two channels of it.
    let (stuck_port, free_port_) = (free_port(), free_port());
    let (stuck_forward, free_forward) =
        (format!("{stuck_port}:127.0.0.1:{spammer}"), format!("{free_port_}:127.0.0.1:{echo}"));
    let _forward = background(reach(), &["-N", "-L", &stuck_forward, "-L", &free_forward]);

    // Channel one: the user sends 16 MiB and never reads the flood coming back.
    let mut stuck = connect_when_listening(stuck_port).await;
    let upload = payload(16 * MIB, 21);
    let sender = tokio::spawn(async move {
        stuck.write_all(&upload).await.unwrap();
        stuck // kept open, unread, until the test ends
    });
    // Its other direction still flows: every byte the user sent arrives.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while counted.load(Ordering::SeqCst) < (16 * MIB) as u64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stuck channel's upload stopped at {} of 16 MiB: its other direction was blocked",
            counted.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _stuck = sender.await.unwrap();

    // Channel two, of the same connection, carries 32 MiB both ways meanwhile.
    let input = payload(32 * MIB, 22);
    let expected = sha256(&input);
    let back = echo_over_tcp(free_port_, input, Duration::from_secs(60)).await;
    assert_eq!(sha256(&back), expected, "the free channel got {} of 32 MiB", back.len());
}

/// The machine's command stops reading one channel while another channel
/// of the same connection echoes 32 MiB.
pub async fn a_machine_that_stops_reading_one_channel_stalls_only_that_channel(reach: Reach<'_>) {
    let master = Master::start(reach).await;
    // Channel one: the machine's command never reads its input, so the
    // upload into it stops once the windows and pipes are full; it prints a
    // line first, which must arrive although its input is stuck. It then
    // prints a dot a second, so that it ends (SIGPIPE) soon after its
    // channel is gone rather than outliving the test.
    let mut stuck = master.channel("echo started; for i in $(seq 600); do sleep 1; printf .; done");
    stuck.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut stuck = Background(stuck.spawn().unwrap());
    let mut stuck_input = stuck.0.stdin.take().unwrap();
    let mut stuck_output = stuck.0.stdout.take().unwrap();
    let fed = Arc::new(AtomicU64::new(0));
    let feeding = fed.clone();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let chunk = payload(64 * 1024, 31);
        // Blocks once every window and pipe on the way is full; ends with an
        // error once the process is killed at the end of the test.
        for _ in 0..1024 {
            if stuck_input.write_all(&chunk).is_err() {
                break;
            }
            feeding.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
    });
    let banner = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut line = [0u8; 8];
        stuck_output.read_exact(&mut line).map(|_| line)
    });
    let banner =
        tokio::time::timeout(Duration::from_secs(30), banner).await.expect("the stuck channel's output never came");
    assert_eq!(&banner.unwrap().unwrap(), b"started\n");
    // Wait until the upload into the stuck channel has stopped moving.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut last = u64::MAX;
    loop {
        let now = fed.load(Ordering::SeqCst);
        if now == last && now > 0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the upload into the stuck channel never stopped");
        last = now;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(last < 64 * MIB as u64, "the stuck channel took all {last} bytes: its command did read them");

    // Channel two, of the same connection, echoes 32 MiB meanwhile.
    let input = payload(32 * MIB, 32);
    let expected = sha256(&input);
    let command = master.channel("cat");
    let output =
        tokio::task::spawn_blocking(move || run_bounded(command, Some(input), Duration::from_secs(60))).await.unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(sha256(&output.stdout), expected, "the free channel got {} of 32 MiB", output.stdout.len());
    drop(stuck);
    let _ = feeder.join();
}
