use std::sync::Arc;

use tokio::sync::Notify;
use tokio::sync::mpsc::Sender;
use tokio::sync::mpsc::error::{SendError, TrySendError};

use super::WindowSizeRef;
use super::flow::{Outbox, ReceiveFlow, Refused};
use crate::ChannelMsg;

/// A handle to the [`super::Channel`]'s to be able to transmit messages
/// to it and update it's `window_size`.
///
/// Kite patch: messages go through an [`Outbox`] that never makes the
/// session loop wait on the channel's reader (see `flow.rs`).
/// Kite patch: boxed, so that the channel-open messages that carry a
/// `ChannelRef` stay small (every queue of them allocates room for 32).
#[derive(Debug)]
pub struct ChannelRef {
    pub(super) outbox: Box<Outbox>,
    pub(super) window_size: WindowSizeRef,
}

impl ChannelRef {
    pub fn new(sender: Sender<ChannelMsg>) -> Self {
        Self {
            outbox: Box::new(Outbox::new(sender)),
            window_size: WindowSizeRef::new(0),
        }
    }

    pub(crate) fn window_size(&self) -> &WindowSizeRef {
        &self.window_size
    }

    /// What the session loop shares with the channel's reader.
    pub(crate) fn flow(&self) -> Arc<ReceiveFlow> {
        self.outbox.flow.clone()
    }

    /// Queues a message for the channel in order. It waits only when the
    /// reader has let more than a few thousand non-data messages pile up.
    pub async fn send(&self, message: ChannelMsg) -> Result<(), SendError<ChannelMsg>> {
        let mut message = message;
        loop {
            match self.outbox.push(message, true) {
                Ok(()) => return Ok(()),
                Err(Refused::Closed(message)) => return Err(SendError(message)),
                Err(Refused::Crowded(crowded)) => {
                    message = crowded;
                    // Wait for the reader to make room, as upstream russh always did.
                    match self.outbox.sender.reserve().await {
                        Ok(permit) => drop(permit),
                        Err(_) => return Err(SendError(message)),
                    }
                }
            }
        }
    }

    /// Queues a message for the channel in order, without waiting.
    pub fn try_send(&self, message: ChannelMsg) -> Result<(), TrySendError<ChannelMsg>> {
        match self.outbox.push(message, true) {
            Ok(()) => Ok(()),
            Err(Refused::Closed(message)) => Err(TrySendError::Closed(message)),
            Err(Refused::Crowded(message)) => Err(TrySendError::Full(message)),
        }
    }

    /// Delivers received data, counted against the window until it is read.
    /// False when nobody reads the channel any more.
    pub(crate) fn send_data(&self, message: ChannelMsg, len: usize, wake: &Arc<Notify>) -> bool {
        self.outbox.push_data(message, len, wake)
    }

    /// Moves what fits from the backlog into the queue; false when the reader is gone.
    pub(crate) fn pump(&self) -> bool {
        self.outbox.pump()
    }
}
