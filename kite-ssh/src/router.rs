//! The router: accepts connections, runs one SSH server session per
//! connection on a task of its own, and shuts down gracefully.

use crate::audit::AuditSink;
use crate::backend::Backend;
use crate::handler::{Connection, Shared};
use crate::limiter::Limiter;
use crate::live::{LiveInfo, LiveSessions, Sessions};
use crate::messages::Messages;
use crate::options::RouterOptions;
use crate::unauthenticated::Unauthenticated;
use crate::{Error, host_key, proxy_protocol};
use russh::keys::PrivateKey;
use russh::server::Config;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// An SSH router: one entry point that routes each login to its machine.
/// Built with [`Router::builder`]; cheap to clone (clones share everything).
pub struct Router<B> {
    shared: Arc<Shared<B>>,
    config: Arc<Config>,
    connections: Arc<Semaphore>,
    unauthenticated: Arc<Unauthenticated>,
    live: Arc<LiveSessions>,
}

impl<B> Clone for Router<B> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            config: self.config.clone(),
            connections: self.connections.clone(),
            unauthenticated: self.unauthenticated.clone(),
            live: self.live.clone(),
        }
    }
}

impl<B: Backend> Router<B> {
    /// The router of a builder that has all it needs.
    pub(crate) fn assemble(
        backend: B,
        host_key: PrivateKey,
        options: RouterOptions,
        audit: Arc<dyn AuditSink>,
        messages: Messages,
    ) -> Self {
        tracing::info!(fingerprint = %host_key::fingerprint(&host_key), "SSH router host key");
        let config = Config {
            server_id: russh::SshId::Standard(format!("SSH-2.0-kite-ssh_{}", env!("CARGO_PKG_VERSION")).into()),
            methods: russh::MethodSet::from(
                &[russh::MethodKind::PublicKey, russh::MethodKind::Password, russh::MethodKind::KeyboardInteractive][..],
            ),
            // The router delays failures itself, so that probes of offered keys are not slowed down.
            auth_rejection_time: std::time::Duration::ZERO,
            auth_rejection_time_initial: Some(std::time::Duration::ZERO),
            keys: vec![host_key],
            max_auth_attempts: options.max_auth_attempts,
            inactivity_timeout: options.idle_timeout,
            keepalive_interval: options.keepalive_interval,
            nodelay: true,
            ..Default::default()
        };
        let connections = Arc::new(Semaphore::new(options.max_connections));
        let unauthenticated = Unauthenticated::new(options.max_unauthenticated_per_source);
        let limiter = Limiter::new(options.rate_limit.clone());
        let shared = Arc::new(Shared {
            backend: Arc::new(backend),
            options: Arc::new(options),
            messages: Arc::new(messages),
            limiter,
            audit,
        });
        Self { shared, config: Arc::new(config), connections, unauthenticated, live: Arc::default() }
    }

    /// The sessions this router serves now: list them, watch a recording
    /// while it is written, end one.
    pub fn sessions(&self) -> Sessions {
        Sessions { live: self.live.clone() }
    }

    /// Serves one accepted stream (for embedders that own their listener)
    /// until the client disconnects.
    ///
    /// From a source named in [`RouterOptions::proxy_protocol_from`], the
    /// stream must start with a PROXY protocol v2 header, and `peer` is
    /// replaced by the client's address it names.
    pub async fn serve_stream<S>(&self, mut stream: S, peer: SocketAddr) -> Result<(), Error>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let options = &self.shared.options;
        let peer = if options.proxy_protocol_from.iter().any(|net| net.contains(&peer.ip())) {
            let header = proxy_protocol::client_address(&mut stream, peer);
            match tokio::time::timeout(options.handshake_timeout, header).await {
                Ok(Ok(client)) => client,
                Ok(Err(error)) => {
                    tracing::warn!(%peer, %error, "refused a connection from a load balancer");
                    return Ok(());
                }
                Err(_) => {
                    tracing::warn!(%peer, "a load balancer sent no PROXY protocol header in time");
                    return Ok(());
                }
            }
        } else {
            peer
        };
        let Some(pending) = self.unauthenticated.enter(peer.ip()) else {
            tracing::warn!(%peer, "refused a connection: its address holds too many that have not signed in");
            return Ok(());
        };
        let info = LiveInfo::new(peer);
        let handler = Connection::new(self.shared.clone(), peer, pending.clone(), info.clone());
        let handshake = tokio::time::timeout(
            self.shared.options.handshake_timeout,
            russh::server::run_stream(self.config.clone(), stream, handler),
        );
        let session = match handshake.await {
            Ok(session) => session?,
            Err(_) => {
                tracing::info!(%peer, "the client did not finish the handshake in time");
                return Ok(());
            }
        };
        let handle = session.handle();
        let _live = self.live.add(handle.clone(), info);
        let timeout = self.shared.options.handshake_timeout;
        let timed_out = self.shared.messages.auth_timed_out.clone();
        let watchdog = tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            if !pending.is_authenticated() {
                tracing::info!(%peer, "the client did not authenticate in time");
                let _ = handle.disconnect(russh::Disconnect::ByApplication, timed_out, "en".into()).await;
            }
        });
        let result = session.await;
        watchdog.abort();
        match result {
            Ok(()) => Ok(()),
            Err(russh::Error::IO(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(()),
            Err(error) => {
                tracing::debug!(%peer, %error, "a connection ended with an error");
                Ok(())
            }
        }
    }

    /// Accepts connections on `listener` until `shutdown` completes; then
    /// stops accepting, disconnects the sessions still open (telling their
    /// users why) and waits up to five seconds for them to end.
    pub async fn serve(&self, listener: TcpListener, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
        let mut tasks = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(accepted) => accepted,
                        Err(error) => {
                            tracing::warn!(%error, "accepting a connection failed");
                            continue;
                        }
                    };
                    let Ok(permit) = self.connections.clone().try_acquire_owned() else {
                        tracing::warn!(%peer, "refused a connection: the connection limit is reached");
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let router = self.clone();
                    tasks.spawn(async move {
                        let _permit = permit;
                        if let Err(error) = router.serve_stream(stream, peer).await {
                            tracing::debug!(%peer, %error, "a connection failed");
                        }
                    });
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        tracing::info!("the SSH router stops accepting connections");
        self.live.disconnect_all(&self.shared.messages.shutting_down).await;
        let drain = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(std::time::Duration::from_secs(5), drain).await.is_err() {
            tasks.abort_all();
        }
        Ok(())
    }
}
