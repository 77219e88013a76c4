//! Sessions as people look for them: one summary per signed-in connection
//! (who, from where, to which machine, when, for how long, how many bytes,
//! which channels, which of them recorded), made from its audit events.

use super::{AuditArchive, AuditEvent, AuthResult, ChannelKind, Event, SessionRequest};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;

/// One signed-in connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionSummary {
    /// The connection's id.
    pub connection: String,
    /// The client's address.
    pub source: SocketAddr,
    /// The login name it signed in with.
    pub ssh_id: String,
    /// The machine it was routed to.
    pub route: String,
    /// When it signed in (RFC 3339, UTC).
    pub started: String,
    /// When it ended, once it has.
    pub ended: Option<String>,
    /// How long it lasted, once it has ended, in seconds.
    pub seconds: Option<f64>,
    /// Why the gateway ended it, when it did.
    pub end_reason: Option<String>,
    /// Bytes from the user to the machine, over the channels that have closed.
    pub bytes_to_machine: u64,
    /// Bytes from the machine to the user, over the channels that have closed.
    pub bytes_to_user: u64,
    /// Its channels, in the order they opened.
    pub channels: Vec<ChannelSummary>,
}

/// One channel of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ChannelSummary {
    /// The channel's number.
    pub channel: u32,
    /// What it was: `shell`, `exec`, `subsystem`, `session` (never
    /// started), `direct-tcpip`, `forwarded-tcpip` or `agent`.
    pub kind: String,
    /// The command, for `exec`; the subsystem, for `subsystem`; the
    /// address, for forwards.
    pub detail: Option<String>,
    /// Whether it was recorded.
    pub recorded: bool,
    /// Whether it has closed.
    pub closed: bool,
    /// The command's exit status, when the machine sent one.
    pub exit_status: Option<u32>,
    /// The signal that ended the command, when the machine sent one.
    pub exit_signal: Option<String>,
}

impl SessionSummary {
    /// Whether the connection is still open (as far as its events tell:
    /// a store whose gateway died mid-session never saw the end).
    pub fn is_open(&self) -> bool {
        self.ended.is_none()
    }
}

/// One summary per connection that signed in, in the order they signed in;
/// connections that never signed in (failed attempts) are left out.
pub fn summarize(events: impl IntoIterator<Item = AuditEvent>) -> Vec<SessionSummary> {
    let mut order: Vec<String> = Vec::new();
    let mut sessions: HashMap<String, SessionSummary> = HashMap::new();
    let mut pending: HashMap<String, Vec<AuditEvent>> = HashMap::new();
    for event in events {
        if let Event::Auth { result: AuthResult::Accepted, ssh_id: Some(ssh_id), route, .. } = &event.event {
            let summary = SessionSummary {
                connection: event.connection.clone(),
                source: event.source,
                ssh_id: ssh_id.clone(),
                route: route.clone().unwrap_or_default(),
                started: event.time.clone(),
                ended: None,
                seconds: None,
                end_reason: None,
                bytes_to_machine: 0,
                bytes_to_user: 0,
                channels: Vec::new(),
            };
            order.push(event.connection.clone());
            let mut summary = summary;
            for earlier in pending.remove(&event.connection).unwrap_or_default() {
                apply(&mut summary, earlier);
            }
            sessions.insert(event.connection.clone(), summary);
            continue;
        }
        match sessions.get_mut(&event.connection) {
            Some(summary) => apply(summary, event),
            // Events before the sign-in are kept, in case it comes.
            None => pending.entry(event.connection.clone()).or_default().push(event),
        }
    }
    order.into_iter().filter_map(|connection| sessions.remove(&connection)).collect()
}

fn apply(summary: &mut SessionSummary, event: AuditEvent) {
    match event.event {
        Event::ChannelOpen { channel, kind } => {
            let (kind, detail) = match kind {
                ChannelKind::Session => ("session".to_string(), None),
                ChannelKind::DirectTcpip { host, port } => ("direct-tcpip".to_string(), Some(format!("{host}:{port}"))),
                ChannelKind::ForwardedTcpip { address, port } => {
                    ("forwarded-tcpip".to_string(), Some(format!("{address}:{port}")))
                }
                ChannelKind::Agent => ("agent".to_string(), None),
            };
            summary.channels.push(ChannelSummary {
                channel,
                kind,
                detail,
                recorded: false,
                closed: false,
                exit_status: None,
                exit_signal: None,
            });
        }
        Event::SessionStart { channel, request, recorded, .. } => {
            if let Some(open) = channel_mut(summary, channel) {
                let (kind, detail) = match request {
                    SessionRequest::Shell => ("shell", None),
                    SessionRequest::Exec { command } => ("exec", Some(command)),
                    SessionRequest::Subsystem { name } => ("subsystem", Some(name)),
                };
                open.kind = kind.to_string();
                open.detail = detail;
                open.recorded = recorded;
            }
        }
        Event::ChannelClose { channel, exit_status, exit_signal, bytes_to_machine, bytes_to_user, .. } => {
            summary.bytes_to_machine += bytes_to_machine;
            summary.bytes_to_user += bytes_to_user;
            if let Some(open) = channel_mut(summary, channel) {
                open.closed = true;
                open.exit_status = exit_status;
                open.exit_signal = exit_signal;
            }
        }
        Event::Disconnect { seconds, reason } => {
            summary.ended = Some(event.time);
            summary.seconds = Some(seconds);
            summary.end_reason = reason;
        }
        Event::Auth { .. } => {}
    }
}

/// The last channel with this number (numbers are reused once closed).
fn channel_mut(summary: &mut SessionSummary, channel: u32) -> Option<&mut ChannelSummary> {
    summary.channels.iter_mut().rev().find(|open| open.channel == channel)
}

/// The newest sessions in `archive`, newest first, at most `limit` of
/// them, keeping only those `keep` accepts (for example the routes of one
/// user's machines). Days are read newest first until enough are found,
/// plus the day before, so that a session that began before midnight is
/// whole.
pub async fn recent_sessions(
    archive: &dyn AuditArchive,
    limit: usize,
    keep: impl Fn(&SessionSummary) -> bool,
) -> Result<Vec<SessionSummary>, crate::Error> {
    let days = archive.days().await?;
    let mut events: Vec<AuditEvent> = Vec::new();
    let mut enough_at: Option<usize> = None;
    for (read, day) in days.iter().rev().enumerate() {
        if enough_at.is_some_and(|at| read > at) {
            break;
        }
        let mut older = archive.events(day).await?;
        older.append(&mut events);
        events = older;
        if enough_at.is_none() && summarize(events.iter().cloned()).iter().filter(|s| keep(s)).count() >= limit {
            enough_at = Some(read);
        }
    }
    let mut sessions: Vec<SessionSummary> = summarize(events).into_iter().filter(|s| keep(s)).collect();
    sessions.reverse();
    sessions.truncate(limit);
    Ok(sessions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuthMethod, Pty};

    fn at(time: &str, connection: &str, event: Event) -> AuditEvent {
        AuditEvent {
            time: time.into(),
            connection: connection.into(),
            source: "192.0.2.7:4000".parse().unwrap(),
            event,
        }
    }

    fn accepted(ssh_id: &str, route: &str) -> Event {
        Event::Auth {
            method: AuthMethod::Publickey,
            result: AuthResult::Accepted,
            ssh_id: Some(ssh_id.into()),
            route: Some(route.into()),
            login_digest: None,
        }
    }

    fn closed(channel: u32, to_user: u64) -> Event {
        Event::ChannelClose {
            channel,
            exit_status: Some(0),
            exit_signal: None,
            bytes_to_machine: 3,
            bytes_to_user: to_user,
            seconds: 1.0,
            reason: None,
        }
    }

    #[test]
    fn a_signed_in_connection_becomes_one_summary_with_its_channels() {
        let rejected = Event::Auth {
            method: AuthMethod::Password,
            result: AuthResult::Rejected,
            ssh_id: None,
            route: None,
            login_digest: Some("d".into()),
        };
        let events = vec![
            at("t0", "failed", rejected),
            at("t1", "c1", accepted("alice", "kite-user-alice/web")),
            at("t2", "c1", Event::ChannelOpen { channel: 0, kind: ChannelKind::Session }),
            at(
                "t2",
                "c1",
                Event::SessionStart {
                    channel: 0,
                    request: SessionRequest::Shell,
                    pty: Some(Pty { term: "xterm".into(), cols: 80, rows: 24 }),
                    recorded: true,
                },
            ),
            at(
                "t3",
                "c1",
                Event::ChannelOpen { channel: 1, kind: ChannelKind::DirectTcpip { host: "db".into(), port: 5432 } },
            ),
            at("t4", "c1", closed(1, 10)),
            at("t5", "c1", closed(0, 100)),
            at("t6", "c1", Event::Disconnect { seconds: 5.0, reason: None }),
            at("t7", "c2", accepted("bob", "kite-user-bob/db")),
        ];
        let sessions = summarize(events);
        assert_eq!(sessions.len(), 2, "the failed attempt is not a session");
        let alice = &sessions[0];
        assert_eq!(
            (alice.ssh_id.as_str(), alice.route.as_str(), alice.started.as_str()),
            ("alice", "kite-user-alice/web", "t1")
        );
        assert_eq!(
            (alice.ended.as_deref(), alice.seconds, alice.bytes_to_user, alice.bytes_to_machine),
            (Some("t6"), Some(5.0), 110, 6)
        );
        assert_eq!(alice.channels[0].kind, "shell");
        assert!(alice.channels[0].recorded && alice.channels[0].closed);
        assert_eq!(
            (alice.channels[1].kind.as_str(), alice.channels[1].detail.as_deref()),
            ("direct-tcpip", Some("db:5432"))
        );
        assert!(!alice.channels[1].recorded);
        assert!(sessions[1].is_open() && !alice.is_open());
    }

    /// Days in memory.
    struct Days(Vec<(String, Vec<AuditEvent>)>);

    impl AuditArchive for Days {
        fn days(&self) -> super::super::ArchiveFuture<'_, Vec<String>> {
            Box::pin(async move { Ok(self.0.iter().map(|(day, _)| day.clone()).collect()) })
        }
        fn events<'a>(&'a self, day: &'a str) -> super::super::ArchiveFuture<'a, Vec<AuditEvent>> {
            Box::pin(
                async move { Ok(self.0.iter().find(|(d, _)| d == day).map(|(_, e)| e.clone()).unwrap_or_default()) },
            )
        }
        fn recording<'a>(&'a self, _: &'a str, _: u32) -> super::super::ArchiveFuture<'a, Option<Vec<u8>>> {
            Box::pin(async { Ok(None) })
        }
    }

    #[tokio::test]
    async fn recent_sessions_come_newest_first_and_whole_across_midnight() {
        let archive = Days(vec![
            ("2026-12-01".into(), vec![at("d1", "old", accepted("alice", "a/web"))]),
            (
                "2026-12-02".into(),
                vec![at("d2", "night", accepted("alice", "a/web")), at("d2", "bob", accepted("bob", "b/db"))],
            ),
            (
                "2026-12-03".into(),
                vec![
                    at("d3", "night", Event::Disconnect { seconds: 9.0, reason: Some("ended by an admin".into()) }),
                    at("d3", "new", accepted("alice", "a/web")),
                ],
            ),
        ]);
        let alice = |s: &SessionSummary| s.ssh_id == "alice";
        let sessions = recent_sessions(&archive, 2, alice).await.unwrap();
        let ids: Vec<&str> = sessions.iter().map(|s| s.connection.as_str()).collect();
        assert_eq!(ids, ["new", "night"]);
        assert_eq!(sessions[1].ended.as_deref(), Some("d3"), "the session that crossed midnight is whole");
        assert_eq!(sessions[1].end_reason.as_deref(), Some("ended by an admin"));
        assert_eq!(recent_sessions(&archive, 10, alice).await.unwrap().len(), 3);
        assert_eq!(recent_sessions(&archive, 10, |_| true).await.unwrap().len(), 4);
    }
}
