//! The user's side of one connection, as its channels' tasks share it: the
//! connection's handle (set once the user has signed in), for channels the
//! machine opens toward the user; the places for open channels, so that
//! one connection cannot open channels, or keep their tasks, without bound;
//! and the connection's audit.

use crate::audit::{CastHeader, ChannelKind, ChannelTally, ConnectionAudit, Event, Recording};
use russh::server;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// One connection's user side.
#[derive(Debug)]
pub(crate) struct UserSide {
    handle: OnceLock<server::Handle>,
    channels: Arc<Semaphore>,
    /// The time the other side of a bridged channel has to end once one side has.
    pub(crate) close_grace: Duration,
    /// The connection's audit.
    pub(crate) audit: ConnectionAudit,
}

/// One open channel: its place in the connection, given back when it is
/// dropped, and its tally, reported in its close event at the same moment,
/// however the channel's task ends (the gateway's shutdown included).
#[derive(Debug)]
pub(crate) struct OpenChannel {
    _place: OwnedSemaphorePermit,
    /// What the channel's tasks count.
    pub(crate) tally: Arc<ChannelTally>,
    recording: Option<Recording>,
    audit: ConnectionAudit,
    reason: Option<&'static str>,
}

/// What a channel's tasks report what passes to: its tally, and its
/// recording when it is recorded.
#[derive(Clone)]
pub(crate) struct Tap {
    /// Bytes and how the channel ended.
    pub(crate) tally: Arc<ChannelTally>,
    /// The session's recording, if any.
    pub(crate) recording: Option<Recording>,
}

impl OpenChannel {
    /// Audits `event` as the channel's.
    pub(crate) fn emit(&self, event: Event) {
        self.audit.emit(event);
    }

    /// Records this channel, when the store records sessions.
    pub(crate) fn start_recording(&mut self, route: String, header: CastHeader) {
        self.recording = self.audit.recording(self.tally.channel(), route, header);
    }

    /// Whether this channel is recorded.
    pub(crate) fn is_recorded(&self) -> bool {
        self.recording.is_some()
    }

    /// What the channel's tasks report to.
    pub(crate) fn tap(&self) -> Tap {
        Tap { tally: self.tally.clone(), recording: self.recording.clone() }
    }

    /// Records why the gateway ended the channel, for its close event.
    pub(crate) fn ended_by_gateway(&mut self, reason: &'static str) {
        self.reason = Some(reason);
    }
}

impl Drop for OpenChannel {
    fn drop(&mut self) {
        self.audit.emit(self.tally.closed(self.reason));
    }
}

impl UserSide {
    /// A user side that allows `max_channels` channels at once.
    pub(crate) fn new(max_channels: usize, close_grace: Duration, audit: ConnectionAudit) -> Arc<Self> {
        Arc::new(Self { handle: OnceLock::new(), channels: Arc::new(Semaphore::new(max_channels)), close_grace, audit })
    }

    /// Records the connection's handle, once it has signed in.
    pub(crate) fn signed_in(&self, handle: server::Handle) {
        let _ = self.handle.set(handle);
    }

    /// The connection's handle, once it has signed in.
    pub(crate) fn handle(&self) -> Option<server::Handle> {
        self.handle.get().cloned()
    }

    /// A place for one more channel, audited as opened; `None` when the
    /// connection holds them all.
    pub(crate) fn open_channel(&self, channel: u32, kind: ChannelKind) -> Option<OpenChannel> {
        let place = self.channels.clone().try_acquire_owned().ok()?;
        self.audit.emit(Event::ChannelOpen { channel, kind });
        Some(OpenChannel {
            _place: place,
            tally: ChannelTally::new(channel),
            recording: None,
            audit: self.audit.clone(),
            reason: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::LogOnly;

    #[test]
    fn a_connection_holds_at_most_its_channels_and_gets_places_back() {
        let audit = ConnectionAudit::new(Arc::new(LogOnly), crate::live::LiveInfo::new("192.0.2.1:1".parse().unwrap()));
        let side = UserSide::new(2, Duration::ZERO, audit);
        let first = side.open_channel(0, ChannelKind::Session).unwrap();
        let _second = side.open_channel(1, ChannelKind::Session).unwrap();
        assert!(side.open_channel(2, ChannelKind::Session).is_none());
        drop(first);
        assert!(side.open_channel(3, ChannelKind::Session).is_some());
    }
}
