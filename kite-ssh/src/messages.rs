//! What users are told. Internal names, addresses and raw errors go to the
//! log, never here.

/// The prefix of every line the router writes to a user's stderr.
pub const PREFIX: &str = "kite: ";

/// While a backend is starting and the router retries.
pub fn retrying(message: &str, waited_seconds: u64) -> String {
    format!("{PREFIX}{message} (waited {waited_seconds}s, still trying)\r\n")
}

/// The last line when a backend did not become reachable in time.
pub fn gave_up(message: &str) -> String {
    format!("{PREFIX}{message}\r\n")
}

/// When the upstream could not be reached and no better reason is known.
pub const UNREACHABLE: &str = "The machine could not be reached; try again in a moment, or ask your administrator.";

/// When the machine answers but is not yet accepting SSH connections.
pub const NOT_ACCEPTING: &str = "The machine is not accepting SSH connections yet; retry in a moment.";

/// When the upstream's host key is not the pinned one.
pub const HOST_KEY_MISMATCH: &str = "The machine's host key does not match the one on record, so the connection was refused for your safety. Ask your administrator.";

/// When the upstream refused the router's own login.
pub const UPSTREAM_LOGIN_REFUSED: &str = "The machine refused the gateway's login; ask your administrator.";

/// When the upstream refused to start the command, shell or subsystem.
pub const START_REFUSED: &str = "The machine refused to start the session.";

/// When a channel held more than its budget before its session started or
/// its machine was connected.
pub const TOO_MUCH_BEFORE_START: &str =
    "This session sent more requests or input before it started than the gateway holds, so it was closed.";

/// When a channel did not ask for a shell, a command or a subsystem in time.
pub const NOT_STARTED_IN_TIME: &str = "This session did not ask for a shell or a command in time, so it was closed.";
