//! One connection's audit: its id, source and start, and the tally of each
//! channel (bytes each way, how it ended) that its close event reports.

use super::{AuditEvent, AuditSink, CastHeader, Event, Recording, RecordingAbout};
use crate::live::LiveInfo;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The audit of one connection; cheap to clone into its channels' tasks.
/// When the last clone goes (the user's connection, its channels' tasks and
/// the connection to the machine have all ended), the connection's
/// `disconnect` is audited, if it ever tried to sign in: port scans and
/// load balancers' probes are not events.
#[derive(Clone)]
pub(crate) struct ConnectionAudit {
    inner: Arc<Inner>,
}

struct Inner {
    sink: Arc<dyn AuditSink>,
    live: Arc<LiveInfo>,
    started: Instant,
    tried_to_sign_in: AtomicBool,
}

impl std::fmt::Debug for ConnectionAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionAudit")
            .field("connection", &self.inner.live.connection)
            .field("source", &self.inner.live.source)
            .finish()
    }
}

impl ConnectionAudit {
    /// The audit of a new connection, as `live` shows it.
    pub(crate) fn new(sink: Arc<dyn AuditSink>, live: Arc<LiveInfo>) -> Self {
        let inner = Inner { sink, live, started: Instant::now(), tried_to_sign_in: AtomicBool::new(false) };
        Self { inner: Arc::new(inner) }
    }

    /// Logs `event` and hands it to the sink.
    pub(crate) fn emit(&self, event: Event) {
        self.inner.emit(event);
    }

    /// A recording of `channel`, when the sink records sessions; it can
    /// be watched while it runs.
    pub(crate) fn recording(&self, channel: u32, route: String, header: CastHeader) -> Option<Recording> {
        let about = RecordingAbout { connection: self.inner.live.connection.clone(), channel, route, header };
        let writer = self.inner.sink.recording(&about)?;
        Some(Recording::start(writer, &about.header, self.inner.live.cast(channel)))
    }

    /// The connection's live view.
    pub(crate) fn live(&self) -> &Arc<LiveInfo> {
        &self.inner.live
    }
}

impl Inner {
    fn emit(&self, event: Event) {
        if matches!(event, Event::Auth { .. }) {
            self.tried_to_sign_in.store(true, Ordering::Relaxed);
        }
        let event = AuditEvent {
            time: jiff::Timestamp::now().to_string(),
            connection: self.live.connection.clone(),
            source: self.live.source,
            event,
        };
        match serde_json::to_string(&event) {
            Ok(json) => tracing::info!(target: "kite_ssh::audit", connection = %event.connection, audit = %json),
            Err(error) => tracing::warn!(%error, "an audit event could not be encoded"),
        }
        self.sink.record(&event);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.tried_to_sign_in.load(Ordering::Relaxed) {
            let reason = self.live.reason();
            let seconds = self.started.elapsed().as_secs_f64();
            self.emit(Event::Disconnect { seconds, reason });
            self.live.audit_ended(&jiff::Timestamp::now().to_string(), seconds);
        } else {
            self.live.audit_ended("", 0.0);
        }
    }
}

/// What one channel did, counted by its tasks and reported when it closes.
#[derive(Debug)]
pub(crate) struct ChannelTally {
    channel: u32,
    opened: Instant,
    to_machine: AtomicU64,
    to_user: AtomicU64,
    exit: Mutex<(Option<u32>, Option<String>)>,
}

impl ChannelTally {
    /// A tally for `channel`, opened now.
    pub(crate) fn new(channel: u32) -> Arc<Self> {
        Arc::new(Self {
            channel,
            opened: Instant::now(),
            to_machine: AtomicU64::new(0),
            to_user: AtomicU64::new(0),
            exit: Mutex::new((None, None)),
        })
    }

    /// The channel's number.
    pub(crate) fn channel(&self) -> u32 {
        self.channel
    }

    /// Bytes went from the user to the machine.
    pub(crate) fn to_machine(&self, bytes: usize) {
        self.to_machine.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Bytes went from the machine to the user.
    pub(crate) fn to_user(&self, bytes: usize) {
        self.to_user.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn exit(&self) -> std::sync::MutexGuard<'_, (Option<u32>, Option<String>)> {
        self.exit.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The machine sent the command's exit status.
    pub(crate) fn exit_status(&self, status: u32) {
        self.exit().0 = Some(status);
    }

    /// The machine sent the signal that ended the command.
    pub(crate) fn exit_signal(&self, signal: String) {
        self.exit().1 = Some(signal);
    }

    /// The close event: what was counted, and why the gateway ended it, if it did.
    pub(crate) fn closed(&self, reason: Option<&str>) -> Event {
        let (exit_status, exit_signal) = self.exit().clone();
        Event::ChannelClose {
            channel: self.channel,
            exit_status,
            exit_signal,
            bytes_to_machine: self.to_machine.load(Ordering::Relaxed),
            bytes_to_user: self.to_user.load(Ordering::Relaxed),
            seconds: self.opened.elapsed().as_secs_f64(),
            reason: reason.map(str::to_string),
        }
    }
}
