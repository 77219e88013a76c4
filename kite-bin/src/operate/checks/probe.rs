//! `kite doctor --probe-machine`: signs in to one machine through the
//! public SSH address with a key, as its user would, and runs a command.
//! It proves the whole path (the load balancer, the gateway, its routing,
//! the machine's sshd) and, when it fails, says what a user would have
//! been told. The host key is the `--ssh-address` check's business: this
//! one signs in with a key, whose signature is bound to the connection.

use crate::operate::plan::Check;
use russh::ChannelMsg;
use russh::client::{self, AuthResult};
use russh::keys::{PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the probe may take: a machine that is starting keeps the
/// gateway retrying for a while, and the doctor must not hang on it.
const LIMIT: Duration = Duration::from_secs(30);

/// What the probe runs in the machine.
const COMMAND: &str = "true";

struct AnyHostKey;

impl client::Handler for AnyHostKey {
    type Error = russh::Error;

    async fn check_server_key(&mut self, _key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        Ok(true)
    }
}

/// Signs in to `ssh_id` at `address` with the private key in `key_file` and runs `true`.
pub async fn machine_login(address: &str, ssh_id: &str, key_file: &Path) -> Check {
    let name = format!("machine login {ssh_id}@{address}");
    let key = match russh::keys::load_secret_key(key_file, None) {
        Ok(key) => key,
        Err(error) => {
            return Check::fail(
                name,
                format!("cannot read the private key {}: {error}", key_file.display()),
                "give --probe-key an unencrypted OpenSSH private key whose public half the machine's owner added on their account page",
            );
        }
    };
    let started = Instant::now();
    match tokio::time::timeout(LIMIT, login(address, ssh_id, key)).await {
        Ok(Ok(0)) => Check::ok(
            name,
            format!("signed in with the key and ran `{COMMAND}` in {:.1}s", started.elapsed().as_secs_f64()),
        ),
        Ok(Ok(status)) => Check::fail(
            name,
            format!("signed in, but `{COMMAND}` exited with {status}"),
            "look at the machine's console or its sshd's log",
        ),
        Ok(Err(Probe::Refused)) => Check::fail(
            name,
            format!("the gateway refused the key for {ssh_id}"),
            "the machine's owner adds the key's public half on their account page (or it is in KiteUser spec.sshAuthorizedKeys); check the sshId with kubectl get ktvm -A",
        ),
        Ok(Err(Probe::Told(sentence))) => Check::fail(
            name,
            format!("signed in, and the gateway said: {sentence}"),
            "kubectl get ktvm -A shows the machine's phase; kubectl -n kite logs deployment/kite-gateway says why",
        ),
        Ok(Err(Probe::Broken(error))) => Check::fail(
            name,
            format!("no SSH session: {error}"),
            "check the address, the KitePlatform's exposure and the firewall",
        ),
        Err(_) => Check::fail(
            name,
            format!("no answer within {}s", LIMIT.as_secs()),
            "the machine may still be starting: kubectl get ktvm -A; run the doctor again once it is Running",
        ),
    }
}

/// Why a probe did not run its command.
enum Probe {
    /// The key was not accepted.
    Refused,
    /// The gateway ended the session with a sentence on stderr.
    Told(String),
    /// The connection or the protocol failed.
    Broken(String),
}

async fn login(address: &str, ssh_id: &str, key: russh::keys::PrivateKey) -> Result<u32, Probe> {
    let broken = |error: russh::Error| Probe::Broken(error.to_string());
    let config = Arc::new(client::Config::default());
    let mut handle = client::connect(config, address, AnyHostKey).await.map_err(broken)?;
    let hash =
        if key.algorithm().is_rsa() { handle.best_supported_rsa_hash().await.map_err(broken)?.flatten() } else { None };
    let signed = PrivateKeyWithHashAlg::new(Arc::new(key), hash);
    match handle.authenticate_publickey(ssh_id, signed).await.map_err(broken)? {
        AuthResult::Success => {}
        AuthResult::Failure { .. } => return Err(Probe::Refused),
    }
    let mut channel = handle.channel_open_session().await.map_err(broken)?;
    channel.exec(true, COMMAND).await.map_err(broken)?;
    let mut stderr = String::new();
    let mut status = None;
    while let Some(message) = channel.wait().await {
        match message {
            ChannelMsg::ExtendedData { data, .. } => stderr.push_str(&String::from_utf8_lossy(&data)),
            ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
            ChannelMsg::Close => break,
            _ => {}
        }
    }
    let _ = handle.disconnect(russh::Disconnect::ByApplication, "", "en").await;
    let told = stderr.lines().rev().find_map(|line| line.trim().strip_prefix(kite_ssh::messages::KITE_PREFIX.trim()));
    match (status, told) {
        (Some(0), _) => Ok(0),
        (_, Some(sentence)) => Err(Probe::Told(sentence.trim().to_string())),
        (Some(status), None) => Ok(status),
        (None, None) => Err(Probe::Broken("the session ended without an exit status".into())),
    }
}
