//! The SSH data path, three ways in one run: straight to sshd, through an
//! OpenSSH jump host (`ProxyCommand ssh -W`), and through the kite-ssh
//! router (`kite gateway`). Bulk throughput, interactive round trip and
//! connection setup, with ratios against direct.
//!
//! The machine is shared and noisy, so bulk and round trips are measured in
//! rounds that take the three paths in turn: a path's bulk figure is its
//! median round, its round trips are all its rounds' samples together. A
//! bulk transfer is timed from its first byte to its last: the session's
//! setup is measured on its own. The router's CPU time per MiB over its
//! bulk rounds is printed too: it is what the router adds to the cost of
//! every byte, whatever else the machine runs.
//!
//! `cargo bench -p kite-benches --bench ssh_data_path` (a full run: 256 MiB);
//! under `cargo test` it makes a small smoke pass.

mod common;

use common::*;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Path {
    name: &'static str,
    args: Vec<String>,
}

impl Path {
    fn ssh(&self, remote: &str) -> Command {
        let mut command = Command::new("ssh");
        command.args(&self.args).arg(remote);
        command
    }
}

/// One bulk download's rate, timed from its first byte to its last.
fn bulk_mib_per_s(path: &Path, mib: u64) -> f64 {
    let mut child = path
        .ssh(&format!("head -c {} /dev/zero", mib << 20))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buffer = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut started = None;
    loop {
        let n = out.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        started.get_or_insert_with(Instant::now);
        total += n as u64;
    }
    let elapsed = started.map(|s| s.elapsed()).unwrap_or_default();
    assert!(child.wait().unwrap().success(), "{}: the bulk transfer failed", path.name);
    assert_eq!(total, mib << 20, "{}: short transfer", path.name);
    mib as f64 / elapsed.as_secs_f64()
}

fn round_trips(path: &Path, count: usize) -> Vec<Duration> {
    let mut args = path.args.clone();
    args.insert(0, "-T".into());
    let mut child = Command::new("ssh")
        .args(&args)
        .arg("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    // Warm up: the first echo includes the session start.
    input.write_all(b"x").unwrap();
    output.read_exact(&mut byte).unwrap();
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        input.write_all(b"x").unwrap();
        input.flush().unwrap();
        output.read_exact(&mut byte).unwrap();
        samples.push(started.elapsed());
    }
    drop(input);
    let _ = child.wait();
    samples.sort();
    samples
}

fn setups(path: &Path, count: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        let status = path.ssh("true").stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
        assert!(status.success(), "{}: ssh true failed", path.name);
        samples.push(started.elapsed());
    }
    samples.sort();
    samples
}

fn main() {
    let full = full_run();
    let (mib, trips, connects, rounds) = if full { (256, 2000, 30, 5) } else { (1, 20, 2, 1) };
    let (sshd, upstream_key, key_path, _dir) = bench_sshd();
    let gateway = Gateway::start(&sshd, &upstream_key);
    let direct = ssh_base(&key_path, sshd.port);
    let mut direct_args = direct.clone();
    direct_args.push("root@127.0.0.1".into());
    let jump_command = format!("ssh {} -W %h:%p root@127.0.0.1", direct.join(" "));
    let mut jump_args = direct.clone();
    jump_args.extend(["-o".into(), format!("ProxyCommand={jump_command}"), "root@127.0.0.1".into()]);
    let mut router_args = ssh_base(&gateway.user_key, gateway.port);
    router_args.push("bench@127.0.0.1".into());
    let paths = [
        Path { name: "direct", args: direct_args },
        Path { name: "jump host", args: jump_args },
        Path { name: "kite-ssh", args: router_args },
    ];
    println!(
        "SSH data path ({} run: the median of {rounds} rounds of {mib} MiB bulk, {trips} round trips in all, {connects} connections)",
        if full { "full" } else { "smoke" }
    );
    println!("| path | bulk MiB/s | × direct | RTT p50 µs | RTT p99 µs | +p50 µs | setup p50 ms | setup p99 ms |");
    println!("|---|---|---|---|---|---|---|---|");
    // Rounds taking the paths in turn: the median bulk, all round trips.
    let mut bulk: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    let mut rtt: Vec<Vec<Duration>> = vec![Vec::new(); paths.len()];
    // The router's CPU time per MiB over each of its bulk rounds (its
    // session setups included: a few milliseconds against hundreds).
    let mut router_cpu = Vec::new();
    for _ in 0..rounds {
        for (i, path) in paths.iter().enumerate() {
            let cpu_before = gateway.cpu_time();
            bulk[i].push(bulk_mib_per_s(path, mib));
            if path.name == "kite-ssh" {
                let ((user_before, system_before), (user, system)) = (cpu_before, gateway.cpu_time());
                let per_mib = |d: Duration| d.as_secs_f64() * 1e3 / mib as f64;
                router_cpu.push((per_mib(user - user_before), per_mib(system - system_before)));
            }
            rtt[i].extend(round_trips(path, trips / rounds));
        }
    }
    let mut direct_figures = None;
    for (i, path) in paths.iter().enumerate() {
        bulk[i].sort_by(f64::total_cmp);
        let bulk = bulk[i][bulk[i].len() / 2];
        rtt[i].sort();
        let rtt = &rtt[i];
        let setup = setups(path, connects);
        let (p50, p99) = (percentile(rtt, 50), percentile(rtt, 99));
        let (base_bulk, base_p50) = *direct_figures.get_or_insert((bulk, p50));
        println!(
            "| {} | {bulk:.0} | {:.2} | {:.0} | {:.0} | {:+.0} | {:.1} | {:.1} |",
            path.name,
            bulk / base_bulk,
            micros(p50),
            micros(p99),
            micros(p50) - micros(base_p50),
            percentile(&setup, 50).as_secs_f64() * 1e3,
            percentile(&setup, 99).as_secs_f64() * 1e3
        );
    }
    router_cpu.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
    let (user, system) = router_cpu[router_cpu.len() / 2];
    if std::env::var_os("KITE_BENCH_WRAPPER").is_some() {
        println!("\nThe router's CPU time is not measured under KITE_BENCH_WRAPPER (it would be the wrapper's).");
    } else {
        println!(
            "\nThe router's CPU time per MiB of bulk, both legs (the median round): {:.2} ms, {user:.2} user and {system:.2} system",
            user + system
        );
    }
    drop(gateway);
}
