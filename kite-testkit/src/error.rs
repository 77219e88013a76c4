//! The errors of kite-testkit's own API (not the ones it serves).

/// What can go wrong setting up or driving the fake API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No tokio runtime to run the server's background work on.
    #[error("the fake API server must be started inside a tokio runtime")]
    NoRuntime,
    /// Reading or writing a file, or listening on a socket, failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The server refused an object the test tried to create.
    #[error("the fake API server refused {what}: {message}")]
    Refused {
        /// What was refused.
        what: String,
        /// The server's Status message.
        message: String,
    },
    /// A value could not be turned into JSON or YAML.
    #[error("could not serialize {what}: {message}")]
    Serialize {
        /// What was being serialized.
        what: String,
        /// Why it failed.
        message: String,
    },
    /// Making the server's CA or certificates, or its TLS configuration, failed.
    #[error("TLS for the fake API server: {what}: {message}")]
    Tls {
        /// What was being made.
        what: String,
        /// Why it failed.
        message: String,
    },
}
