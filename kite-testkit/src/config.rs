//! The configuration of a fake API server: how long deletions take, how
//! much history watches can resume from, how often bookmarks come.

use std::time::Duration;

/// How the fake server behaves.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long a deleted namespace stays `Terminating` before its objects
    /// are removed; make it long to reproduce a reinstall racing the deletion.
    pub namespace_termination: Duration,
    /// How many events the server keeps for watches; older versions get `410 Gone`.
    pub event_log_limit: usize,
    /// How often a watch that asked for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// How requests are authorized.
    pub authorization: crate::identity::AuthorizationMode,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            namespace_termination: Duration::from_millis(200),
            event_log_limit: 100_000,
            bookmark_interval: Duration::from_secs(1),
            authorization: crate::identity::AuthorizationMode::AlwaysAllow,
        }
    }
}
