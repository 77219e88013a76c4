//! Flow control through the router, in-process, with the real OpenSSH
//! client and `sshd`, signing in as `alice` with a key. The cases are in
//! flow_cases/mod.rs, shared with the outside embedder's test
//! (tests/embedder/tests/flow_control.rs), which runs them through the
//! book's port_router.

mod common;
mod flow_cases;

use common::*;
use flow_cases::*;
use std::process::Command;
use std::time::Duration;

/// `ssh` to `s`'s router as `alice`, with her key.
fn alice(s: &Setup) -> impl Fn() -> Command + Sync + '_ {
    || Ssh::to(&s.router, "alice").key(&s.user).command("ssh")
}

/// [`cat_echoes`] with more `ssh` options; returns what `ssh` wrote on stderr.
async fn cat_echoes_with(len: usize, limit: Duration, options: &[&str]) -> String {
    let s = setup().await;
    let mut ssh = Ssh::to(&s.router, "alice").key(&s.user);
    // ssh takes an option's first value: the options given here replace the defaults'.
    for option in options {
        let name = option.split('=').next().unwrap_or_default();
        if let Some(at) = ssh.args.iter().position(|arg| arg.starts_with(&format!("{name}="))) {
            ssh.args.drain(at - 1..=at);
        }
        ssh = ssh.opt(option);
    }
    cat_echoes(ssh.command("ssh"), len, limit).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_8_mib_both_ways_at_once() {
    cat_echoes_with(8 * MIB, Duration::from_secs(60), &[]).await;
}

/// The client asks for new keys every 256 KiB: the router's session must
/// carry on through each exchange (it keeps less of a spent exchange than
/// upstream russh does; vendor/kite-russh/KITE-PATCH.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_8_mib_while_the_client_rekeys_every_256_kib() {
    let log = cat_echoes_with(8 * MIB, Duration::from_secs(60), &["RekeyLimit=256K", "LogLevel=DEBUG1"]).await;
    let exchanges = log.matches("SSH2_MSG_NEWKEYS received").count();
    assert!(exchanges >= 8, "expected the keys to be renewed many times, saw {exchanges} exchanges:\n{log}");
    // The router still tells the client its signature algorithms (RFC 8308),
    // read from the client's KEXINIT that the spent exchange no longer keeps.
    assert!(log.contains("server-sig-algs="), "no SSH2_MSG_EXT_INFO from the router:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_64_mib_both_ways_at_once() {
    cat_echoes_with(64 * MIB, Duration::from_secs(120), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_256_mib_both_ways_at_once() {
    cat_echoes_with(256 * MIB, Duration::from_secs(240), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_channels_of_one_connection_each_echo_16_mib_at_once() {
    let s = setup().await;
    two_channels_of_one_connection_each_echo(&alice(&s), 16 * MIB, Duration::from_secs(90)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_forward_carries_64_mib_both_ways_and_then_a_second_connection() {
    let s = setup().await;
    a_local_forward_carries_both_ways_and_then_a_second_connection(&alice(&s), 64 * MIB, Duration::from_secs(120))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_who_stops_reading_one_channel_stalls_only_that_direction_of_that_channel() {
    let s = setup().await;
    flow_cases::a_user_who_stops_reading_one_channel_stalls_only_that_direction_of_that_channel(&alice(&s)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_that_stops_reading_one_channel_stalls_only_that_channel() {
    let s = setup().await;
    flow_cases::a_machine_that_stops_reading_one_channel_stalls_only_that_channel(&alice(&s)).await;
}
