//! The sessions a router is serving, as its [`Sessions`] handle shows them:
//! who is signed in to which machine from where, the recordings running
//! now (watchable line by line as they are written), and a way to end a
//! session with a sentence to its user. The router's shutdown ends each of
//! them too: russh runs a session on a task of its own, which outlives the
//! connection's task, so stopping that task alone would leave the session,
//! its channels and their recordings running.

use russh::server::Handle;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// How many bytes of a live recording's latest lines a new watcher is
/// given before the lines that follow (its header always).
const BACKLOG_BYTES: usize = 256 * 1024;

/// How many lines a watcher may fall behind before its watch ends.
const WATCH_LAG_LINES: usize = 1024;

/// How long an ended session is remembered, for stores still writing its end.
const REMEMBER_ENDED: Duration = Duration::from_secs(120);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The live sessions of a router, and those that ended a moment ago.
#[derive(Debug, Default)]
pub(crate) struct LiveSessions {
    sessions: Mutex<HashMap<String, (Handle, Arc<LiveInfo>)>>,
    ended: Mutex<VecDeque<(Instant, EndedSession)>>,
}

/// A session's entry, removed when dropped.
pub(crate) struct Entry {
    live: Arc<LiveSessions>,
    connection: String,
}

impl LiveSessions {
    /// Adds a connection. It stays listed until both the returned entry is
    /// dropped (the SSH session ended) and its audit has ended (its
    /// `disconnect` event is out), so a session is never shown neither
    /// live nor ended.
    pub(crate) fn add(self: &Arc<Self>, handle: Handle, info: Arc<LiveInfo>) -> Entry {
        let connection = info.connection.clone();
        let _ = info.registry.set(Arc::downgrade(self));
        lock(&self.sessions).insert(connection.clone(), (handle, info));
        Entry { live: self.clone(), connection }
    }

    /// Removes `connection` once both its session and its audit have ended.
    fn done(&self, connection: &str, which: &AtomicBool) {
        let mut sessions = lock(&self.sessions);
        which.store(true, Ordering::SeqCst);
        if let Some((_, info)) = sessions.get(connection)
            && info.session_done.load(Ordering::SeqCst)
            && info.audit_done.load(Ordering::SeqCst)
        {
            sessions.remove(connection);
        }
    }

    fn remember(&self, ended: EndedSession) {
        let mut remembered = lock(&self.ended);
        while remembered.front().is_some_and(|(at, _)| at.elapsed() > REMEMBER_ENDED) {
            remembered.pop_front();
        }
        remembered.push_back((Instant::now(), ended));
    }

    /// Disconnects every live session, telling its user `message`.
    pub(crate) async fn disconnect_all(&self, message: &str) {
        let handles: Vec<(Handle, Arc<LiveInfo>)> = lock(&self.sessions).values().cloned().collect();
        if !handles.is_empty() {
            tracing::info!(sessions = handles.len(), "disconnecting the sessions still open");
        }
        for (handle, info) in handles {
            info.ended_because("the gateway stopped");
            let _ = handle.disconnect(russh::Disconnect::ByApplication, message.into(), "en".into()).await;
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let info = lock(&self.live.sessions).get(&self.connection).map(|(_, info)| info.clone());
        if let Some(info) = info {
            self.live.done(&self.connection, &info.session_done);
        }
    }
}

/// What is known of one connection while it is open.
#[derive(Debug)]
pub(crate) struct LiveInfo {
    pub(crate) connection: String,
    pub(crate) source: SocketAddr,
    started: String,
    signed_in: OnceLock<(String, String)>,
    casts: Mutex<HashMap<u32, Arc<CastFeed>>>,
    reason: Mutex<Option<String>>,
    registry: OnceLock<Weak<LiveSessions>>,
    session_done: AtomicBool,
    audit_done: AtomicBool,
}

impl LiveInfo {
    /// A new connection from `source`, with a new id.
    pub(crate) fn new(source: SocketAddr) -> Arc<Self> {
        Arc::new(Self {
            connection: uuid::Uuid::new_v4().simple().to_string(),
            source,
            started: jiff::Timestamp::now().to_string(),
            signed_in: OnceLock::new(),
            casts: Mutex::default(),
            reason: Mutex::default(),
            registry: OnceLock::new(),
            session_done: AtomicBool::new(false),
            audit_done: AtomicBool::new(false),
        })
    }

    /// The connection signed in as `ssh_id` and was routed to `route`.
    pub(crate) fn signed_in(&self, ssh_id: &str, route: &str) {
        let _ = self.signed_in.set((ssh_id.to_string(), route.to_string()));
    }

    /// Why the gateway ended the connection, for its `disconnect` event.
    pub(crate) fn ended_because(&self, reason: &str) {
        lock(&self.reason).get_or_insert_with(|| reason.to_string());
    }

    /// Why the gateway ended the connection, if it did.
    pub(crate) fn reason(&self) -> Option<String> {
        lock(&self.reason).clone()
    }

    /// The connection's audit has ended: its `disconnect` event (at `time`,
    /// after `seconds`) is out.
    pub(crate) fn audit_ended(&self, time: &str, seconds: f64) {
        let Some(registry) = self.registry.get().and_then(Weak::upgrade) else {
            // Never listed (or the router is gone): nothing to remove later.
            self.audit_done.store(true, Ordering::SeqCst);
            return;
        };
        if self.signed_in.get().is_some() {
            registry.remember(EndedSession {
                connection: self.connection.clone(),
                ended: time.to_string(),
                seconds,
                reason: self.reason(),
            });
        }
        registry.done(&self.connection, &self.audit_done);
    }

    /// A live feed of `channel`'s recording, until the returned feed is dropped.
    pub(crate) fn cast(self: &Arc<Self>, channel: u32) -> LiveCast {
        let feed = Arc::new(CastFeed { sender: broadcast::channel(WATCH_LAG_LINES).0, backlog: Mutex::default() });
        lock(&self.casts).insert(channel, feed.clone());
        LiveCast { info: self.clone(), channel, feed }
    }
}

/// One live recording's lines: the header, the latest events, and the
/// watchers' channel.
#[derive(Debug)]
struct CastFeed {
    sender: broadcast::Sender<Arc<str>>,
    backlog: Mutex<Backlog>,
}

#[derive(Debug, Default)]
struct Backlog {
    header: Option<Arc<str>>,
    events: VecDeque<Arc<str>>,
    bytes: usize,
}

/// A recording's side of its live feed.
pub(crate) struct LiveCast {
    info: Arc<LiveInfo>,
    channel: u32,
    feed: Arc<CastFeed>,
}

impl LiveCast {
    /// A line was recorded (the header first).
    pub(crate) fn line(&self, line: &str) {
        let line: Arc<str> = Arc::from(line);
        let mut backlog = lock(&self.feed.backlog);
        if backlog.header.is_none() {
            backlog.header = Some(line.clone());
        } else {
            backlog.bytes += line.len();
            backlog.events.push_back(line.clone());
            while backlog.bytes > BACKLOG_BYTES {
                let Some(oldest) = backlog.events.pop_front() else { break };
                backlog.bytes -= oldest.len();
            }
        }
        // Sent under the lock, so a watcher's snapshot and subscription see every line once.
        let _ = self.feed.sender.send(line);
    }
}

impl Drop for LiveCast {
    fn drop(&mut self) {
        let mut casts = lock(&self.info.casts);
        if casts.get(&self.channel).is_some_and(|feed| Arc::ptr_eq(feed, &self.feed)) {
            casts.remove(&self.channel);
        }
    }
}

/// A router's live sessions, for pages and control APIs: list them, watch a
/// recording as it is written, end one. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Sessions {
    pub(crate) live: Arc<LiveSessions>,
}

/// One signed-in connection, as it is now.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LiveSession {
    /// The connection's id, as its audit events give it.
    pub connection: String,
    /// The client's address.
    pub source: SocketAddr,
    /// The login name it signed in with.
    pub ssh_id: String,
    /// The machine it is routed to.
    pub route: String,
    /// When the connection was accepted (RFC 3339, UTC).
    pub started: String,
    /// The channels being recorded now, watchable with [`Sessions::watch`].
    pub recording: Vec<u32>,
}

/// A session that ended a moment ago, as its `disconnect` event says it,
/// for stores that may still be writing that event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EndedSession {
    /// The connection's id.
    pub connection: String,
    /// When it ended (RFC 3339, UTC).
    pub ended: String,
    /// How long it lasted, in seconds.
    pub seconds: f64,
    /// Why the gateway ended it, when it did.
    pub reason: Option<String>,
}

/// A live recording being watched: the lines so far (the header, then the
/// latest events), then each line as it is written.
#[derive(Debug)]
pub struct LiveWatch {
    /// The header and the latest events, in order.
    pub backlog: Vec<String>,
    receiver: broadcast::Receiver<Arc<str>>,
}

impl LiveWatch {
    /// The next line; `None` once the recording has ended, or when this
    /// watcher fell too far behind (watch again for a fresh backlog).
    pub async fn next(&mut self) -> Option<String> {
        match self.receiver.recv().await {
            Ok(line) => Some(line.to_string()),
            Err(broadcast::error::RecvError::Closed) => None,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::info!(missed, "a watcher of a live recording fell behind; ending its watch");
                None
            }
        }
    }
}

impl Sessions {
    /// The signed-in connections, oldest first.
    pub fn list(&self) -> Vec<LiveSession> {
        let sessions = lock(&self.live.sessions);
        let mut list: Vec<LiveSession> = sessions
            .values()
            .filter_map(|(_, info)| {
                let (ssh_id, route) = info.signed_in.get()?.clone();
                let mut recording: Vec<u32> = lock(&info.casts).keys().copied().collect();
                recording.sort_unstable();
                Some(LiveSession {
                    connection: info.connection.clone(),
                    source: info.source,
                    ssh_id,
                    route,
                    started: info.started.clone(),
                    recording,
                })
            })
            .collect();
        list.sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.connection.cmp(&b.connection)));
        list
    }

    /// The sessions that ended in the last two minutes, oldest first.
    pub fn recently_ended(&self) -> Vec<EndedSession> {
        lock(&self.live.ended)
            .iter()
            .filter(|(at, _)| at.elapsed() <= REMEMBER_ENDED)
            .map(|(_, ended)| ended.clone())
            .collect()
    }

    /// Watches `channel`'s recording on `connection`, while it is being written.
    pub fn watch(&self, connection: &str, channel: u32) -> Option<LiveWatch> {
        let feed = {
            let sessions = lock(&self.live.sessions);
            let (_, info) = sessions.get(connection)?;
            lock(&info.casts).get(&channel)?.clone()
        };
        let backlog = lock(&feed.backlog);
        let receiver = feed.sender.subscribe();
        let lines = backlog.header.iter().chain(backlog.events.iter()).map(|line| line.to_string()).collect();
        Some(LiveWatch { backlog: lines, receiver })
    }

    /// Ends `connection`, telling its user `message`; false when no such
    /// connection is open. Its `disconnect` event gives `reason`.
    pub async fn terminate(&self, connection: &str, message: &str, reason: &str) -> bool {
        let Some((handle, info)) = lock(&self.live.sessions).get(connection).cloned() else { return false };
        tracing::info!(connection, reason, "ending a session on request");
        info.ended_because(reason);
        let _ = handle.disconnect(russh::Disconnect::ByApplication, message.into(), "en".into()).await;
        true
    }
}
