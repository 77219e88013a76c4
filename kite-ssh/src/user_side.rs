//! The user's side of one connection, as its channels' tasks share it: the
//! connection's handle (set once the user has signed in), for channels the
//! machine opens toward the user, and the places for open channels, so that
//! one connection cannot open channels, or keep their tasks, without bound.

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
}

/// A place held by one channel's task, given back when the task ends.
pub(crate) type ChannelPlace = OwnedSemaphorePermit;

impl UserSide {
    /// A user side that allows `max_channels` channels at once.
    pub(crate) fn new(max_channels: usize, close_grace: Duration) -> Arc<Self> {
        Arc::new(Self { handle: OnceLock::new(), channels: Arc::new(Semaphore::new(max_channels)), close_grace })
    }

    /// Records the connection's handle, once it has signed in.
    pub(crate) fn signed_in(&self, handle: server::Handle) {
        let _ = self.handle.set(handle);
    }

    /// The connection's handle, once it has signed in.
    pub(crate) fn handle(&self) -> Option<server::Handle> {
        self.handle.get().cloned()
    }

    /// A place for one more channel; `None` when the connection holds them all.
    pub(crate) fn channel_place(&self) -> Option<ChannelPlace> {
        self.channels.clone().try_acquire_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_holds_at_most_its_channels_and_gets_places_back() {
        let side = UserSide::new(2, Duration::ZERO);
        let first = side.channel_place().unwrap();
        let _second = side.channel_place().unwrap();
        assert!(side.channel_place().is_none());
        drop(first);
        assert!(side.channel_place().is_some());
    }
}
