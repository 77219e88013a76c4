//! The router's side of the upstream connection: an SSH client that checks
//! the pinned host key, logs in with the platform's credentials, and hands
//! channels the upstream opens (forwarded ports, agent requests) to the user.

use crate::backend::{HostKeyCheck, Upstream, UpstreamAuth};
use crate::options::RouterOptions;
use crate::pump::pump;
use crate::user_side::UserSide;
use russh::client::{self, AuthResult, Handle, Session};
use russh::keys::{HashAlg, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use russh::{Channel, ChannelOpenFailure, Preferred, cipher, server};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The ciphers the router asks for on the upstream leg, best first. On this
/// leg the router is the client, so its order decides: AES-GCM first, which
/// runs on the processor's AES instructions and costs the router less per
/// byte than ChaCha20-Poly1305 (russh's default first choice). The user's
/// leg keeps the user's client's choice.
const UPSTREAM_CIPHERS: &[cipher::Name] = &[
    cipher::AES_256_GCM,
    cipher::AES_128_GCM,
    cipher::CHACHA20_POLY1305,
    cipher::AES_256_CTR,
    cipher::AES_192_CTR,
    cipher::AES_128_CTR,
];

/// The client handler of one upstream connection.
pub(crate) struct UpstreamClient {
    host_key: HostKeyCheck,
    mismatch: Arc<AtomicBool>,
    user: Arc<UserSide>,
}

impl client::Handler for UpstreamClient {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        match &self.host_key {
            HostKeyCheck::InsecureAcceptAny => Ok(true),
            HostKeyCheck::Pinned(pinned) => {
                let presented = key.public_key();
                let matches = presented.key_data() == pinned.key_data();
                if !matches {
                    tracing::warn!(
                        expected = %pinned.fingerprint(HashAlg::Sha256),
                        presented = %presented.fingerprint(HashAlg::Sha256),
                        "the upstream presented a host key that is not the pinned one"
                    );
                    self.mismatch.store(true, Ordering::SeqCst);
                }
                Ok(matches)
            }
        }
    }

    async fn server_channel_open_forwarded_tcpip(
        &mut self,
        channel: Channel<client::Msg>,
        connected_address: &str,
        connected_port: u32,
        originator_address: &str,
        originator_port: u32,
        reply: russh::client::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        let (connected, originator) = (connected_address.to_string(), originator_address.to_string());
        let kind = crate::audit::ChannelKind::ForwardedTcpip { address: connected.clone(), port: connected_port };
        self.hand_to_user(channel, reply, kind, move |user| async move {
            user.channel_open_forwarded_tcpip(connected, connected_port, originator, originator_port).await
        })
        .await;
        Ok(())
    }

    async fn server_channel_open_agent_forward(
        &mut self,
        channel: Channel<client::Msg>,
        reply: russh::client::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        let kind = crate::audit::ChannelKind::Agent;
        self.hand_to_user(channel, reply, kind, |user| async move { user.channel_open_agent().await }).await;
        Ok(())
    }
}

impl UpstreamClient {
    /// Accepts a channel the upstream opens and pipes it to a channel opened
    /// toward the user by `open`; without a user connection, refuses it.
    async fn hand_to_user<F, Fut>(
        &self,
        channel: Channel<client::Msg>,
        reply: client::ChannelOpenHandle,
        kind: crate::audit::ChannelKind,
        open: F,
    ) where
        F: FnOnce(server::Handle) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<Channel<server::Msg>, russh::Error>> + Send,
    {
        let Some(user) = self.user.handle() else {
            reply.reject(ChannelOpenFailure::ConnectFailed).await;
            return;
        };
        let what = format!("{kind:?}");
        let Some(audited) = self.user.open_channel(u32::from(channel.id()), kind) else {
            tracing::info!(
                channel = what,
                "refused a channel the upstream opened: the connection has all the channels it may"
            );
            reply.reject(ChannelOpenFailure::ResourceShortage).await;
            return;
        };
        reply.accept().await;
        let grace = self.user.close_grace;
        tokio::spawn(async move {
            match open(user.clone()).await {
                Ok(user_channel) => pump(user_channel, channel, Vec::new(), user, grace, None, audited).await,
                Err(error) => {
                    tracing::debug!(%error, channel = what, "the user refused a channel the upstream opened");
                    drop(audited);
                    let _ = channel.close().await;
                }
            }
        });
    }
}

/// Why an upstream connection failed.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// Not there yet (refused, reset, timed out): worth retrying.
    Retriable(String),
    /// The host key is not the pinned one.
    HostKeyMismatch,
    /// The upstream refused the router's login.
    LoginRefused,
}

/// Connects and logs in to `upstream`.
pub(crate) async fn connect(
    upstream: &Upstream,
    user: Arc<UserSide>,
    options: &RouterOptions,
) -> Result<Handle<UpstreamClient>, ConnectError> {
    let connect_timeout = options.connect_timeout;
    let mismatch = Arc::new(AtomicBool::new(false));
    let handler = UpstreamClient { host_key: upstream.host_key.clone(), mismatch: mismatch.clone(), user };
    let config = Arc::new(client::Config {
        // A machine that stops answering, keepalives included, is let go.
        inactivity_timeout: options.idle_timeout,
        keepalive_interval: options.keepalive_interval,
        nodelay: true,
        preferred: Preferred { cipher: Cow::Borrowed(UPSTREAM_CIPHERS), ..Preferred::DEFAULT },
        ..Default::default()
    });
    let connecting = client::connect(config, upstream.address.as_str(), handler);
    let mut handle = match tokio::time::timeout(connect_timeout, connecting).await {
        Err(_) => return Err(ConnectError::Retriable(format!("connecting to {} timed out", upstream.address))),
        Ok(Err(_)) if mismatch.load(Ordering::SeqCst) => return Err(ConnectError::HostKeyMismatch),
        Ok(Err(error)) => return Err(ConnectError::Retriable(format!("connecting to {}: {error}", upstream.address))),
        Ok(Ok(handle)) => handle,
    };
    let login = async {
        match &upstream.auth {
            UpstreamAuth::Key(key) => {
                let hash =
                    if key.algorithm().is_rsa() { handle.best_supported_rsa_hash().await?.flatten() } else { None };
                handle
                    .authenticate_publickey(upstream.user.clone(), PrivateKeyWithHashAlg::new(key.clone(), hash))
                    .await
            }
            UpstreamAuth::Password(password) => {
                handle.authenticate_password(upstream.user.clone(), password.clone()).await
            }
        }
    };
    match tokio::time::timeout(connect_timeout, login).await {
        Ok(Ok(AuthResult::Success)) => Ok(handle),
        Ok(Ok(AuthResult::Failure { .. })) => {
            let _ = handle.disconnect(russh::Disconnect::ByApplication, "", "en").await;
            Err(ConnectError::LoginRefused)
        }
        Ok(Err(error)) => Err(ConnectError::Retriable(format!("logging in to {}: {error}", upstream.address))),
        Err(_) => Err(ConnectError::Retriable(format!("logging in to {} timed out", upstream.address))),
    }
}
