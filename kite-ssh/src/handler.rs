//! The per-connection SSH server handler: authentication against the
//! backend (or the fallback), and channel opens, each handed to its own task.

use crate::audit::{AuditSink, AuthMethod, AuthResult, ChannelKind, ConnectionAudit, Event};
use crate::backend::{Backend, Route, Upstream, UpstreamAuth};
use crate::limiter::Limiter;
use crate::live::LiveInfo;
use crate::login_digest::login_digest;
use crate::messages::Messages;
use crate::options::RouterOptions;
use crate::slot::{Target, UpstreamSlot};
use crate::unauthenticated::Pending;
use crate::upstream::{self, ConnectError};
use crate::user_side::{OpenChannel, UserSide};
use crate::{password, pump, session};
use russh::keys::{HashAlg, PublicKey};
use russh::server::{Auth, Msg, PublicKeyOffer, Response, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, ChannelOpenFailure, MethodKind, MethodSet, Pty};
use std::net::SocketAddr;
use std::sync::Arc;

/// What every connection of a router shares.
pub(crate) struct Shared<B> {
    pub backend: Arc<B>,
    pub options: Arc<RouterOptions>,
    pub messages: Arc<Messages>,
    pub limiter: Limiter,
    pub audit: Arc<dyn AuditSink>,
}

/// One user connection.
pub(crate) struct Connection<B> {
    shared: Arc<Shared<B>>,
    peer: SocketAddr,
    slot: Option<Arc<UpstreamSlot<B>>>,
    user: Arc<UserSide>,
    pending: Arc<Pending>,
    failures: usize,
}

fn methods() -> MethodSet {
    MethodSet::from(&[MethodKind::PublicKey, MethodKind::Password, MethodKind::KeyboardInteractive][..])
}

fn reject() -> Auth {
    Auth::Reject { proceed_with_methods: Some(methods()), partial_success: false }
}

impl<B: Backend> Connection<B> {
    pub(crate) fn new(shared: Arc<Shared<B>>, peer: SocketAddr, pending: Arc<Pending>, live: Arc<LiveInfo>) -> Self {
        let audit = ConnectionAudit::new(shared.audit.clone(), live);
        let user = UserSide::new(shared.options.max_channels_per_connection, shared.options.close_grace, audit);
        Self { shared, peer, slot: None, user, pending, failures: 0 }
    }

    fn slot(&self, target: Target) -> UpstreamSlot<B> {
        UpstreamSlot::new(
            self.shared.backend.clone(),
            target,
            self.shared.options.clone(),
            self.shared.messages.clone(),
            self.user.clone(),
        )
    }

    /// Counts a failed attempt, waits the rejection delay, and rejects; the
    /// attempt that reaches the per-connection cap ends the connection.
    async fn fail(&mut self, login: &str, method: AuthMethod, result: AuthResult) -> Result<Auth, russh::Error> {
        let login_digest = login_digest(login);
        tracing::info!(peer = %self.peer, %login_digest, ?method, "authentication rejected");
        self.user.audit.emit(Event::Auth {
            method,
            result,
            ssh_id: None,
            route: None,
            login_digest: Some(login_digest.to_string()),
        });
        self.shared.limiter.record_failure(self.peer.ip(), login);
        self.failures += 1;
        tokio::time::sleep(self.shared.options.rejection_delay).await;
        if self.failures >= self.shared.options.max_auth_attempts {
            tracing::info!(peer = %self.peer, %login_digest, "too many authentication attempts; closing the connection");
            return Err(russh::Error::Disconnect);
        }
        Ok(reject())
    }

    fn accept(&mut self, login: &str, method: AuthMethod, slot: UpstreamSlot<B>) -> Auth {
        self.shared.limiter.record_success(self.peer.ip(), login);
        let route = slot.describe();
        tracing::info!(peer = %self.peer, login, ?method, %route, "authenticated");
        self.user.audit.live().signed_in(login, &route);
        self.user.audit.emit(Event::Auth {
            method,
            result: AuthResult::Accepted,
            ssh_id: Some(login.to_string()),
            route: Some(route),
            login_digest: None,
        });
        self.slot = Some(Arc::new(slot));
        Auth::Accept
    }

    async fn password(&mut self, login: &str, password: &str, method: AuthMethod) -> Result<Auth, russh::Error> {
        if let Some(wait) = self.shared.limiter.refused_for(self.peer.ip(), login) {
            tracing::warn!(peer = %self.peer, login_digest = %login_digest(login), seconds = wait.as_secs(), "refused: the address or login is temporarily banned");
            return self.fail(login, method, AuthResult::Refused).await;
        }
        match self.shared.backend.resolve(login).await {
            Some(route) => {
                if self.shared.backend.check_password(&route, password).await {
                    let slot = self.slot(Target::Route(route));
                    return Ok(self.accept(login, method, slot));
                }
            }
            None => match self.shared.options.fallback.clone() {
                Some(fallback) => {
                    let upstream = Upstream {
                        address: fallback.address,
                        user: login.to_string(),
                        auth: UpstreamAuth::Password(password.to_string()),
                        host_key: fallback.host_key,
                    };
                    let options = &self.shared.options;
                    // Boxed: inline, connecting would grow every connection's session future by its size.
                    match Box::pin(upstream::connect(&upstream, self.user.clone(), options)).await {
                        Ok(handle) => {
                            let slot = self.slot(Target::Fixed(upstream)).connected(handle);
                            return Ok(self.accept(login, method, slot));
                        }
                        Err(ConnectError::LoginRefused) => {}
                        Err(error) => tracing::warn!(?error, "the fallback route could not check a password"),
                    }
                }
                // The same work as for a known login, so names cannot be told apart by timing.
                None => {
                    password::verify_off_runtime(password, None).await;
                }
            },
        }
        self.fail(login, method, AuthResult::Rejected).await
    }

    /// A place for one more channel, audited as opened, or `None` (logged)
    /// when the connection has all it may.
    fn open_channel(&self, channel: ChannelId, kind: ChannelKind) -> Option<OpenChannel> {
        let place = self.user.open_channel(u32::from(channel), kind);
        if place.is_none() {
            tracing::info!(peer = %self.peer, limit = self.shared.options.max_channels_per_connection, "refused a channel: the connection has all the channels it may");
        }
        place
    }

    async fn key_allowed(&self, login: &str, key: &PublicKey) -> Option<Route> {
        if self.shared.limiter.refused_for(self.peer.ip(), login).is_some() {
            return None;
        }
        let route = self.shared.backend.resolve(login).await?;
        self.shared.backend.check_public_key(&route, key).await.then_some(route)
    }
}

impl<B: Backend> russh::server::Handler for Connection<B> {
    type Error = russh::Error;

    async fn auth_none(&mut self, _user: &str) -> Result<Auth, Self::Error> {
        Ok(reject())
    }

    async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
        self.password(user, password, AuthMethod::Password).await
    }

    async fn auth_keyboard_interactive<'a>(
        &mut self,
        user: &str,
        _submethods: &str,
        response: Option<Response<'a>>,
    ) -> Result<Auth, Self::Error> {
        let answer = response.and_then(|mut r| r.next());
        match answer {
            None => Ok(Auth::Partial {
                name: "".into(),
                instructions: "".into(),
                prompts: vec![(self.shared.messages.password_prompt.clone().into(), false)].into(),
            }),
            Some(bytes) => {
                let password = String::from_utf8_lossy(&bytes).into_owned();
                self.password(user, &password, AuthMethod::KeyboardInteractive).await
            }
        }
    }

    async fn auth_publickey_offered(&mut self, user: &str, offer: PublicKeyOffer<'_>) -> Result<Auth, Self::Error> {
        // A probe: no signature yet. Never a failure, never delayed, so a client with several keys goes on.
        Ok(if self.key_allowed(user, offer.public_key).await.is_some() { Auth::Accept } else { reject() })
    }

    async fn auth_publickey(&mut self, user: &str, key: VerifiedPublicKey<'_>) -> Result<Auth, Self::Error> {
        match self.key_allowed(user, key.public_key).await {
            Some(route) => {
                tracing::debug!(fingerprint = %key.public_key.fingerprint(HashAlg::Sha256), "public key accepted");
                let slot = self.slot(Target::Route(route));
                Ok(self.accept(user, AuthMethod::Publickey, slot))
            }
            None => {
                let refused = self.shared.limiter.refused_for(self.peer.ip(), user).is_some();
                let result = if refused { AuthResult::Refused } else { AuthResult::Rejected };
                self.fail(user, AuthMethod::Publickey, result).await
            }
        }
    }

    async fn auth_succeeded(&mut self, session: &mut Session) -> Result<(), Self::Error> {
        self.user.signed_in(session.handle());
        self.pending.authenticate();
        Ok(())
    }

    async fn authentication_banner(&mut self) -> Result<Option<String>, Self::Error> {
        Ok(self.shared.options.banner.clone())
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: russh::server::ChannelOpenHandle,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let Some(slot) = self.slot.clone() else {
            reply.reject(ChannelOpenFailure::AdministrativelyProhibited).await;
            return Ok(());
        };
        let Some(open) = self.open_channel(channel.id(), ChannelKind::Session) else {
            reply.reject(ChannelOpenFailure::ResourceShortage).await;
            return Ok(());
        };
        reply.accept().await;
        tokio::spawn(session::bridge(channel, slot, session.handle(), self.shared.options.clone(), open));
        Ok(())
    }

    async fn channel_open_direct_tcpip(
        &mut self,
        channel: Channel<Msg>,
        host: &str,
        port: u32,
        originator_address: &str,
        originator_port: u32,
        reply: russh::server::ChannelOpenHandle,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let Some(slot) = self.slot.clone() else {
            reply.reject(ChannelOpenFailure::AdministrativelyProhibited).await;
            return Ok(());
        };
        let kind = ChannelKind::DirectTcpip { host: host.to_string(), port };
        let Some(mut open) = self.open_channel(channel.id(), kind) else {
            reply.reject(ChannelOpenFailure::ResourceShortage).await;
            return Ok(());
        };
        let (host, originator) = (host.to_string(), originator_address.to_string());
        let (user, grace) = (session.handle(), self.shared.options.close_grace);
        tokio::spawn(async move {
            let upstream = match slot.get(None).await {
                Ok(upstream) => upstream,
                Err(message) => {
                    tracing::info!(%message, "a direct-tcpip channel found no upstream");
                    open.ended_by_gateway("the machine could not be reached");
                    return reply.reject(ChannelOpenFailure::ConnectFailed).await;
                }
            };
            match upstream.channel_open_direct_tcpip(host, port, originator, originator_port).await {
                Ok(upstream_channel) => {
                    reply.accept().await;
                    pump::pump(channel, upstream_channel, Vec::new(), user, grace, None, open).await;
                }
                Err(error) => {
                    tracing::info!(%error, "the upstream refused a direct-tcpip channel");
                    open.ended_by_gateway("the machine refused the forward");
                    reply.reject(ChannelOpenFailure::ConnectFailed).await;
                }
            }
        });
        Ok(())
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        _value: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn shell_request(&mut self, channel: ChannelId, session: &mut Session) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn x11_request(
        &mut self,
        channel: ChannelId,
        _single_connection: bool,
        _protocol: &str,
        _cookie: &str,
        _screen: u32,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        tracing::info!(peer = %self.peer, "refused X11 forwarding: not supported");
        session.channel_failure(channel)
    }

    async fn agent_request(&mut self, _channel: ChannelId, _session: &mut Session) -> Result<bool, Self::Error> {
        Ok(self.slot.is_some())
    }

    async fn tcpip_forward(
        &mut self,
        address: &str,
        port: &mut u32,
        _session: &mut Session,
    ) -> Result<bool, Self::Error> {
        let Some(slot) = self.slot.clone() else { return Ok(false) };
        let upstream = match slot.get(None).await {
            Ok(upstream) => upstream,
            Err(message) => {
                tracing::info!(%message, "a remote forward found no upstream");
                return Ok(false);
            }
        };
        match upstream.tcpip_forward(address.to_string(), *port).await {
            Ok(allocated) => {
                if allocated != 0 {
                    *port = allocated;
                }
                Ok(true)
            }
            Err(error) => {
                tracing::info!(%error, address, port = *port, "the upstream refused a remote forward");
                Ok(false)
            }
        }
    }

    async fn cancel_tcpip_forward(
        &mut self,
        address: &str,
        port: u32,
        _session: &mut Session,
    ) -> Result<bool, Self::Error> {
        let Some(slot) = self.slot.clone() else { return Ok(false) };
        match slot.get(None).await {
            Ok(upstream) => Ok(upstream.cancel_tcpip_forward(address.to_string(), port).await.is_ok()),
            Err(_) => Ok(false),
        }
    }
}
