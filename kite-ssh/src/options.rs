//! How the router behaves: timeouts, limits, retries, and the optional
//! fallback route.

use crate::backend::HostKeyCheck;
use std::time::Duration;

/// `with_<field>` for each field: the same value with that field replaced.
macro_rules! setters {
    ($type:ident { $($setter:ident => $field:ident: $value:ty),* $(,)? }) => {
        impl $type {
            $(
                #[doc = concat!("These options with [`", stringify!($type), "::", stringify!($field), "`] replaced.")]
                #[must_use]
                pub fn $setter(mut self, value: $value) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

/// Failed-login limits per source address and per login name.
///
/// Built from [`RateLimit::default`] and the `with_*` methods:
///
/// ```
/// let limits = kite_ssh::RateLimit::default().with_failures_per_login(3);
/// # assert_eq!(limits.failures_per_login, 3);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RateLimit {
    /// Failures from one address within `window` before it is banned.
    pub failures_per_address: u32,
    /// Failures for one login name within `window` before it is banned.
    pub failures_per_login: u32,
    /// The window failures are counted in.
    pub window: Duration,
    /// How long a ban lasts.
    pub ban: Duration,
    /// How many sources, and how many login names, are tracked at most; past
    /// that the least recently seen are forgotten.
    pub tracked: u64,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            failures_per_address: 20,
            failures_per_login: 10,
            window: Duration::from_secs(300),
            ban: Duration::from_secs(600),
            tracked: 100_000,
        }
    }
}

setters!(RateLimit {
    with_failures_per_address => failures_per_address: u32,
    with_failures_per_login => failures_per_login: u32,
    with_window => window: Duration,
    with_ban => ban: Duration,
    with_tracked => tracked: u64,
});

/// Where logins that match no route go: for example the host's own sshd on
/// another port. The user's password is passed through to it; public keys
/// cannot be (their signatures are bound to this connection).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Fallback {
    /// `host:port` of the fallback SSH server.
    pub address: String,
    /// How its host key is checked.
    pub host_key: HostKeyCheck,
}

impl Fallback {
    /// The SSH server at `address` (`host:port`), its host key checked by `host_key`.
    pub fn new(address: impl Into<String>, host_key: HostKeyCheck) -> Self {
        Self { address: address.into(), host_key }
    }
}

/// The router's options; [`Default`] is what a production gateway wants.
///
/// Built from [`RouterOptions::default`] and the `with_*` methods (the
/// fields are public to read, and to change on a value one holds):
///
/// ```
/// use kite_ssh::{RateLimit, RouterOptions};
/// use std::time::Duration;
///
/// let options = RouterOptions::default()
///     .with_idle_timeout(Some(Duration::from_secs(600)))
///     .with_rate_limit(RateLimit::default().with_failures_per_address(50));
/// # assert_eq!(options.rate_limit.failures_per_address, 50);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RouterOptions {
    /// The time a client has from connecting to authenticating.
    pub handshake_timeout: Duration,
    /// A connection with no traffic for this long is closed; keepalives count as traffic.
    pub idle_timeout: Option<Duration>,
    /// How often the router checks that an idle client is still there.
    pub keepalive_interval: Option<Duration>,
    /// Connections served at once; more are refused at accept.
    pub max_connections: usize,
    /// Connections from one source (an address, or an IPv6 /64) that have
    /// not authenticated yet; more are closed at once.
    pub max_unauthenticated_per_source: usize,
    /// Authentication attempts per connection.
    pub max_auth_attempts: usize,
    /// Channels one connection may have open at once (sessions and forwards
    /// alike); more are refused.
    pub max_channels_per_connection: usize,
    /// What one session channel may hold, in bytes (input, environment,
    /// terminal modes, the command), before its machine is connected; past
    /// it before the session starts the channel is closed, and while the
    /// machine is connecting its input waits (the client's window closes).
    pub max_held_bytes: usize,
    /// Requests one session channel may hold before its machine is
    /// connected; past it the channel is closed.
    pub max_held_messages: usize,
    /// The time a session channel has from opening to asking for a shell, a
    /// command or a subsystem.
    pub session_start_timeout: Duration,
    /// Once one side of a bridged channel has ended (the user's or the
    /// machine's), the time the other side has to end too before it is let go.
    pub close_grace: Duration,
    /// The delay after a failed authentication (the first `none` probe is never delayed).
    pub rejection_delay: Duration,
    /// How long the router retries a backend that is `Starting` or refuses connections.
    pub starting_timeout: Duration,
    /// The time between two retries.
    pub retry_interval: Duration,
    /// The time one upstream connection attempt may take.
    pub connect_timeout: Duration,
    /// Failed-login limits.
    pub rate_limit: RateLimit,
    /// Sources (load balancers) whose connections start with a PROXY
    /// protocol v2 header naming the client's address: from them the header
    /// is required, and the client's address it names is the one limits and
    /// logs use. Connections from anywhere else are taken as they come.
    pub proxy_protocol_from: Vec<ipnet::IpNet>,
    /// Where unmatched logins go; `None` refuses them.
    pub fallback: Option<Fallback>,
    /// A text shown before authentication, if any.
    pub banner: Option<String>,
}

impl Default for RouterOptions {
    fn default() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(30),
            idle_timeout: Some(Duration::from_secs(3600)),
            keepalive_interval: Some(Duration::from_secs(30)),
            max_connections: 4096,
            max_unauthenticated_per_source: 16,
            max_auth_attempts: 6,
            max_channels_per_connection: 64,
            max_held_bytes: 1 << 20,
            max_held_messages: 256,
            session_start_timeout: Duration::from_secs(60),
            close_grace: Duration::from_secs(5),
            rejection_delay: Duration::from_secs(1),
            starting_timeout: Duration::from_secs(90),
            retry_interval: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(10),
            rate_limit: RateLimit::default(),
            proxy_protocol_from: Vec::new(),
            fallback: None,
            banner: None,
        }
    }
}

setters!(RouterOptions {
    with_handshake_timeout => handshake_timeout: Duration,
    with_idle_timeout => idle_timeout: Option<Duration>,
    with_keepalive_interval => keepalive_interval: Option<Duration>,
    with_max_connections => max_connections: usize,
    with_max_unauthenticated_per_source => max_unauthenticated_per_source: usize,
    with_max_auth_attempts => max_auth_attempts: usize,
    with_max_channels_per_connection => max_channels_per_connection: usize,
    with_max_held_bytes => max_held_bytes: usize,
    with_max_held_messages => max_held_messages: usize,
    with_session_start_timeout => session_start_timeout: Duration,
    with_close_grace => close_grace: Duration,
    with_rejection_delay => rejection_delay: Duration,
    with_starting_timeout => starting_timeout: Duration,
    with_retry_interval => retry_interval: Duration,
    with_connect_timeout => connect_timeout: Duration,
    with_rate_limit => rate_limit: RateLimit,
    with_proxy_protocol_from => proxy_protocol_from: Vec<ipnet::IpNet>,
    with_fallback => fallback: Option<Fallback>,
    with_banner => banner: Option<String>,
});
