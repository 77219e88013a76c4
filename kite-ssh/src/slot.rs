//! One connection's upstream, connected lazily at the first channel that
//! needs it, shared by all the connection's channels, retried while the
//! backend is starting.

use crate::backend::{Backend, Readiness, Route, Upstream};
use crate::messages::Messages;
use crate::options::RouterOptions;
use crate::upstream::{self, ConnectError, UpstreamClient};
use crate::user_side::UserSide;
use russh::client::Handle;
use russh::{ChannelId, server};
use std::sync::Arc;
use tokio::time::Instant;

/// Where the connection's upstream comes from.
pub(crate) enum Target {
    /// A backend route: ask the backend for the upstream.
    Route(Route),
    /// A fixed upstream (the fallback route, with the user's password).
    Fixed(Upstream),
}

/// Where progress lines go: the user's channel, on stderr.
pub(crate) type Progress<'a> = Option<(&'a server::Handle, ChannelId)>;

/// The upstream of one user connection.
pub(crate) struct UpstreamSlot<B> {
    backend: Arc<B>,
    target: Target,
    options: Arc<RouterOptions>,
    messages: Arc<Messages>,
    user: Arc<UserSide>,
    handle: tokio::sync::Mutex<Option<Arc<Handle<UpstreamClient>>>>,
}

impl<B: Backend> UpstreamSlot<B> {
    pub(crate) fn new(
        backend: Arc<B>,
        target: Target,
        options: Arc<RouterOptions>,
        messages: Arc<Messages>,
        user: Arc<UserSide>,
    ) -> Self {
        Self { backend, target, options, messages, user, handle: tokio::sync::Mutex::new(None) }
    }

    /// What the router says to users.
    pub(crate) fn messages(&self) -> &Arc<Messages> {
        &self.messages
    }

    /// A slot whose upstream is already connected (the fallback, connected to check the password).
    pub(crate) fn connected(self, handle: Handle<UpstreamClient>) -> Self {
        Self { handle: tokio::sync::Mutex::new(Some(Arc::new(handle))), ..self }
    }

    /// The route's id, for logs.
    pub(crate) fn describe(&self) -> String {
        match &self.target {
            Target::Route(route) => route.id.clone(),
            Target::Fixed(upstream) => format!("fallback {}", upstream.address),
        }
    }

    /// The connected upstream, connecting (and retrying while the backend is
    /// starting) when there is none. On failure, the sentence for the user.
    pub(crate) async fn get(&self, progress: Progress<'_>) -> Result<Arc<Handle<UpstreamClient>>, String> {
        let mut current = self.handle.lock().await;
        if let Some(handle) = current.as_ref()
            && !handle.is_closed()
        {
            return Ok(handle.clone());
        }
        let started = Instant::now();
        let deadline = started + self.options.starting_timeout;
        loop {
            let readiness = match &self.target {
                Target::Route(route) => self.backend.upstream(route).await,
                Target::Fixed(upstream) => Readiness::Ready(upstream.clone()),
            };
            let message = match readiness {
                Readiness::Ready(upstream) => {
                    let connected = upstream::connect(&upstream, self.user.clone(), &self.options).await;
                    match connected {
                        Ok(handle) => {
                            tracing::info!(route = %self.describe(), address = %upstream.address, "connected upstream");
                            let handle = Arc::new(handle);
                            *current = Some(handle.clone());
                            return Ok(handle);
                        }
                        Err(ConnectError::Retriable(detail)) => {
                            tracing::info!(route = %self.describe(), %detail, "the upstream is not reachable yet");
                            self.messages.not_accepting.clone()
                        }
                        Err(ConnectError::HostKeyMismatch) => return Err(self.messages.host_key_mismatch.clone()),
                        Err(ConnectError::LoginRefused) => {
                            tracing::warn!(route = %self.describe(), "the upstream refused the router's login");
                            return Err(self.messages.upstream_login_refused.clone());
                        }
                    }
                }
                Readiness::Starting { message } => message,
                Readiness::Unavailable { message } => return Err(message),
            };
            if Instant::now() + self.options.retry_interval > deadline {
                return Err(message);
            }
            if let Some((user, channel)) = progress {
                let line = self.messages.retrying(&message, started.elapsed().as_secs());
                let _ = user.extended_data(channel, 1, line.into_bytes()).await;
            }
            tokio::time::sleep(self.options.retry_interval).await;
        }
    }
}
