//! The audit events and their JSON form.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// One audit event of one connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    /// When it happened, RFC 3339 in UTC.
    pub time: String,
    /// The connection's id, the same in all its events.
    pub connection: String,
    /// The client's address (behind a PROXY-protocol load balancer, the one its header names).
    pub source: SocketAddr,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// An authentication attempt with a password or a signed key (offered
    /// keys without a signature are probes and not events).
    #[serde(rename_all = "camelCase")]
    Auth {
        /// How the client tried.
        method: AuthMethod,
        /// How it went.
        result: AuthResult,
        /// The login name, for an accepted attempt.
        ssh_id: Option<String>,
        /// The machine routed to, for an accepted attempt.
        route: Option<String>,
        /// A keyed digest of the login name, for an attempt that was not accepted.
        login_digest: Option<String>,
    },
    /// A channel opened, by the user or by the machine toward the user.
    #[serde(rename_all = "camelCase")]
    ChannelOpen {
        /// The channel's number on the user's connection, or the machine's
        /// connection for channels the machine opens.
        channel: u32,
        /// What kind of channel.
        #[serde(flatten)]
        kind: ChannelKind,
    },
    /// A session channel asked for a shell, a command or a subsystem.
    #[serde(rename_all = "camelCase")]
    SessionStart {
        /// The channel.
        channel: u32,
        /// What it asked for.
        #[serde(flatten)]
        request: SessionRequest,
        /// The terminal it asked for, if any.
        pty: Option<Pty>,
        /// Whether the store records it (see [`super::AuditSink::recording`]).
        #[serde(default)]
        recorded: bool,
    },
    /// A channel ended.
    #[serde(rename_all = "camelCase")]
    ChannelClose {
        /// The channel.
        channel: u32,
        /// The command's exit status, when the machine sent one.
        exit_status: Option<u32>,
        /// The signal that ended the command, when the machine sent one.
        exit_signal: Option<String>,
        /// Bytes from the user to the machine.
        bytes_to_machine: u64,
        /// Bytes from the machine to the user (stdout and stderr).
        bytes_to_user: u64,
        /// How long the channel was open, in seconds.
        seconds: f64,
        /// Why the gateway ended it, when it did (a budget, a timeout, a machine it could not reach).
        reason: Option<String>,
    },
    /// The connection ended.
    #[serde(rename_all = "camelCase")]
    Disconnect {
        /// How long it was open, in seconds.
        seconds: f64,
        /// Why the gateway ended it, when it did (it stopped, or someone
        /// ended the session).
        #[serde(default)]
        reason: Option<String>,
    },
}

/// An authentication method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AuthMethod {
    /// A password.
    Password,
    /// A password given through keyboard-interactive.
    KeyboardInteractive,
    /// A signed public key.
    Publickey,
}

/// How an authentication attempt went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AuthResult {
    /// Signed in.
    Accepted,
    /// Wrong credentials, or no such login.
    Rejected,
    /// Not looked at: the source or the login was banned for repeated failures.
    Refused,
}

/// A channel's kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ChannelKind {
    /// A session: a shell, a command or a subsystem.
    Session,
    /// A local forward (`ssh -L`) to `host:port` as the machine sees it.
    DirectTcpip {
        /// The host asked for.
        host: String,
        /// The port asked for.
        port: u32,
    },
    /// A connection to a remote forward (`ssh -R`), opened by the machine.
    ForwardedTcpip {
        /// The forwarded address on the machine.
        address: String,
        /// The forwarded port on the machine.
        port: u32,
    },
    /// An agent channel, opened by the machine.
    Agent,
}

/// What a session asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SessionRequest {
    /// A login shell.
    Shell,
    /// A command.
    Exec {
        /// The command, as sent (lossily decoded as UTF-8).
        command: String,
    },
    /// A subsystem such as `sftp`.
    Subsystem {
        /// Its name.
        name: String,
    },
}

/// A terminal's type and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pty {
    /// `TERM`.
    pub term: String,
    /// Columns.
    pub cols: u32,
    /// Rows.
    pub rows: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_flat_json_objects_named_as_the_schema_says() {
        let event = AuditEvent {
            time: "2026-12-05T08:00:00Z".into(),
            connection: "c1".into(),
            source: "203.0.113.7:40000".parse().unwrap(),
            event: Event::SessionStart {
                channel: 0,
                request: SessionRequest::Exec { command: "uptime".into() },
                pty: Some(Pty { term: "xterm".into(), cols: 80, rows: 24 }),
                recorded: true,
            },
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            serde_json::json!({
                "time": "2026-12-05T08:00:00Z", "connection": "c1", "source": "203.0.113.7:40000",
                "event": "session-start", "channel": 0, "request": "exec", "command": "uptime",
                "pty": {"term": "xterm", "cols": 80, "rows": 24}, "recorded": true
            })
        );
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(serde_json::from_str::<AuditEvent>(&line).unwrap(), event, "events read back as written");
        let open = Event::ChannelOpen { channel: 2, kind: ChannelKind::DirectTcpip { host: "db".into(), port: 5432 } };
        assert_eq!(
            serde_json::to_value(&open).unwrap(),
            serde_json::json!({"event": "channel-open", "channel": 2, "kind": "direct-tcpip", "host": "db", "port": 5432})
        );
    }
}
