//! Assembling a router: its backend and host key (required), its options,
//! audit sink and messages (each with a default).

use crate::Error;
use crate::audit::{AuditSink, LogOnly};
use crate::backend::Backend;
use crate::messages::Messages;
use crate::options::RouterOptions;
use crate::router::Router;
use russh::keys::PrivateKey;
use std::sync::Arc;

impl<B: Backend> Router<B> {
    /// A builder: give it the backend and the host key, optionally options,
    /// an audit sink and the messages users see, then [`RouterBuilder::build`].
    ///
    /// ```no_run
    /// # async fn run(backend: kite_ssh::StaticBackend) -> Result<(), kite_ssh::Error> {
    /// use kite_ssh::messages::Messages;
    /// use kite_ssh::{Router, RouterOptions};
    /// use std::time::Duration;
    ///
    /// let router = Router::builder()
    ///     .backend(backend)
    ///     .host_key(kite_ssh::host_key::load_or_generate("gateway_host_ed25519_key".as_ref())?)
    ///     .options(RouterOptions::default().with_idle_timeout(Some(Duration::from_secs(600))))
    ///     .audit(kite_ssh::audit::FileStore::open("audit".as_ref())?)
    ///     .messages(Messages::default().with_prefix("acme: "))
    ///     .build()?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:2222")
    ///     .await
    ///     .map_err(|source| kite_ssh::Error::Io { what: "bind".into(), source })?;
    /// router.serve(listener, async { let _ = tokio::signal::ctrl_c().await; }).await
    /// # }
    /// ```
    pub fn builder() -> RouterBuilder<B> {
        RouterBuilder::default()
    }
}

/// Builds a [`Router`]; made by [`Router::builder`].
///
/// [`RouterBuilder::backend`] and [`RouterBuilder::host_key`] are required;
/// the options default to [`RouterOptions::default`], the audit sink to
/// [`LogOnly`] (events are logged with `tracing` and kept nowhere), and the
/// messages to Kite's wording ([`Messages::default`]).
#[must_use = "a builder does nothing until `build` is called"]
pub struct RouterBuilder<B> {
    backend: Option<B>,
    host_key: Option<PrivateKey>,
    options: RouterOptions,
    audit: Arc<dyn AuditSink>,
    messages: Messages,
}

impl<B: Backend> Default for RouterBuilder<B> {
    fn default() -> Self {
        Self {
            backend: None,
            host_key: None,
            options: RouterOptions::default(),
            audit: Arc::new(LogOnly),
            messages: Messages::default(),
        }
    }
}

impl<B: Backend> RouterBuilder<B> {
    /// The source of routes (required).
    pub fn backend(mut self, backend: B) -> Self {
        self.backend = Some(backend);
        self
    }

    /// The key the router presents to users (required); see
    /// [`crate::host_key::load_or_generate`] for one kept across restarts.
    pub fn host_key(mut self, host_key: PrivateKey) -> Self {
        self.host_key = Some(host_key);
        self
    }

    /// How the router behaves; [`RouterOptions::default`] when not given.
    pub fn options(mut self, options: RouterOptions) -> Self {
        self.options = options;
        self
    }

    /// Where audit events go besides the log: for example
    /// [`crate::audit::FileStore`], or an embedder's own [`AuditSink`]
    /// (an `Arc` of one is one too). [`LogOnly`] when not given.
    pub fn audit(mut self, audit: impl AuditSink) -> Self {
        self.audit = Arc::new(audit);
        self
    }

    /// What users are told; Kite's wording ([`Messages::default`]) when not given.
    pub fn messages(mut self, messages: Messages) -> Self {
        self.messages = messages;
        self
    }

    /// The router, or [`Error::Incomplete`] naming the first required
    /// part that was not given.
    pub fn build(self) -> Result<Router<B>, Error> {
        let Some(backend) = self.backend else { return Err(Error::Incomplete { missing: "backend" }) };
        let Some(host_key) = self.host_key else { return Err(Error::Incomplete { missing: "host_key" }) };
        Ok(Router::assemble(backend, host_key, self.options, self.audit, self.messages))
    }
}

#[cfg(test)]
mod tests {
    use super::RouterBuilder;
    use crate::{Error, StaticBackend};

    #[test]
    fn a_builder_without_a_backend_or_a_host_key_names_what_is_missing() {
        let missing = |builder: RouterBuilder<StaticBackend>| match builder.build() {
            Err(Error::Incomplete { missing }) => missing,
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => panic!("built without everything"),
        };
        assert_eq!(missing(RouterBuilder::default()), "backend");
        assert_eq!(missing(RouterBuilder::default().backend(StaticBackend::default())), "host_key");
        let error = RouterBuilder::<StaticBackend>::default().build().err().map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("the router builder has no backend: call RouterBuilder::backend before build")
        );
    }
}
