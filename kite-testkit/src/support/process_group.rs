//! Signals to a child's process group: a process started with
//! `process_group(0)` (a `kite demo` and the `sshd`s of its machines, or a
//! profiler and the `kite` it runs) is stopped with what it started.

use std::process::{Child, Command, Stdio};

/// Sends `signal` (a name: `TERM`, `KILL`) to the process group `child`
/// leads, with the shell's own `kill` (a fresh machine may have no `kill`
/// program). Call it before `child` is reaped: until then no other group
/// can have its number, and a child that leads no group makes the `kill`
/// fail, harmlessly.
pub fn signal_group(child: &Child, signal: &str) {
    let _ = Command::new("sh").arg("-c").arg(format!("kill -{signal} -{}", child.id())).stderr(Stdio::null()).status();
}
