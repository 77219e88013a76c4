//! kite-ssh's errors.

/// What can go wrong building or running the router. More kinds may come,
/// so a `match` on it needs a `_` arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The host key could not be read, generated or saved.
    #[error("host key {path}: {message}")]
    HostKey {
        /// The key file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A socket operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A [`crate::RouterBuilder`] was built without a part it needs.
    #[error("the router builder has no {missing}: call RouterBuilder::{missing} before build")]
    Incomplete {
        /// The builder's method that was not called: `backend` or `host_key`.
        missing: &'static str,
    },
    /// A route or option is not usable.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// An audit store could not be read or written.
    #[error("audit store: {0}")]
    Store(String),
    /// The SSH layer failed.
    #[error("ssh: {0}")]
    Ssh(#[from] russh::Error),
}
