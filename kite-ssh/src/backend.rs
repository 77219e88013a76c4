//! The backend traits: how the router finds where a login goes, checks its
//! credentials, and reaches the machine behind it.

use russh::keys::{PrivateKey, PublicKey};
use std::future::Future;
use std::sync::Arc;

/// A login the backend accepted the name of: its route.
///
/// The router treats it as opaque and hands it back to the backend.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    /// The backend's id for the route, for example `namespace/vm`. It goes to
    /// the logs, never to the user.
    pub id: String,
}

impl Route {
    /// A route with this id.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

/// How the upstream's host key is checked.
#[derive(Clone, Debug)]
pub enum HostKeyCheck {
    /// The upstream must present this key; any other refuses the connection.
    Pinned(PublicKey),
    /// Any key is accepted. Only for tests and for an operator who said so explicitly.
    InsecureAcceptAny,
}

/// How the router logs in to the upstream.
#[derive(Clone)]
pub enum UpstreamAuth {
    /// With a private key the platform holds.
    Key(Arc<PrivateKey>),
    /// With the password the user typed (the fallback route passes it through).
    Password(String),
}

impl std::fmt::Debug for UpstreamAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamAuth::Key(key) => write!(f, "Key({})", key.algorithm()),
            UpstreamAuth::Password(_) => f.write_str("Password(<redacted>)"),
        }
    }
}

/// Where and how to reach the machine behind a route.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// `host:port` to connect to.
    pub address: String,
    /// The user to log in as there.
    pub user: String,
    /// How to log in.
    pub auth: UpstreamAuth,
    /// How to check the upstream's host key.
    pub host_key: HostKeyCheck,
}

/// Whether the machine behind a route can be reached now.
#[derive(Clone, Debug)]
pub enum Readiness {
    /// Connect to it.
    Ready(Upstream),
    /// It is coming up (a VM booting, sshd not started yet): try again.
    /// The message is shown to the user while the router retries.
    Starting {
        /// A sentence for the user, such as `VirtualMachine is starting its SSH server; retry in a moment.`
        message: String,
    },
    /// It cannot be reached and will not be soon. The message is shown to the user.
    Unavailable {
        /// A sentence for the user, such as `VirtualMachine is stopped; start it from the dashboard.`
        message: String,
    },
}

/// A source of routes: a static table, Kubernetes objects, or anything an
/// embedder writes. The router asks it on every authentication attempt, so
/// a change takes effect for the next login.
///
/// ```
/// use kite_ssh::backend::{Backend, Readiness, Route};
/// use kite_ssh::russh::keys::PublicKey;
///
/// /// One machine, reached by the login `demo`, with a fixed password.
/// struct One;
///
/// impl Backend for One {
///     async fn resolve(&self, login: &str) -> Option<Route> {
///         (login == "demo").then(|| Route::new("demo"))
///     }
///     async fn check_password(&self, _route: &Route, password: &str) -> bool {
///         password == "correct horse"
///     }
///     async fn check_public_key(&self, _route: &Route, _key: &PublicKey) -> bool {
///         false
///     }
///     async fn upstream(&self, _route: &Route) -> Readiness {
///         Readiness::Unavailable { message: "The demo machine is switched off.".into() }
///     }
/// }
/// ```
#[cfg_attr(test, mockall::automock)]
pub trait Backend: Send + Sync + 'static {
    /// The route of a login name, or `None` when no route has it.
    fn resolve(&self, login: &str) -> impl Future<Output = Option<Route>> + Send;

    /// Whether `password` is the route's password.
    fn check_password(&self, route: &Route, password: &str) -> impl Future<Output = bool> + Send;

    /// Whether `key` may log in to the route.
    fn check_public_key(&self, route: &Route, key: &PublicKey) -> impl Future<Output = bool> + Send;

    /// Where the route leads, and whether it can be reached now. Called when
    /// the user opens the first channel, and again while it is `Starting`.
    fn upstream(&self, route: &Route) -> impl Future<Output = Readiness> + Send;
}
