//! Receive-side flow control for one channel (a Kite patch, see `KITE-PATCH.md`).
//!
//! Upstream russh 0.65 gives the peer new window as soon as data arrives and
//! then awaits room in the channel's bounded queue from the session loop, so
//! one consumer that stops reading parks the whole connection: every other
//! channel, both directions, keepalives. Here the session loop never waits on
//! a consumer: what does not fit in the queue waits in a per-channel backlog,
//! and the window is replenished only for bytes the consumer has taken out
//! ([`ReceiveFlow::unread`]). A peer that honours the window therefore stops
//! sending on a channel whose reader is stuck, and only on that channel.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::mpsc::Sender;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::Notify;

use crate::ChannelMsg;

/// How many messages may wait in a channel's backlog before the session loop
/// waits for its consumer, as upstream russh always did. Data is not held to
/// this: the window bounds it. Only a peer flooding requests reaches it.
const MAX_BACKLOG: usize = 4096;

/// What the session loop and the channel's reader share.
#[derive(Debug, Default)]
pub(crate) struct ReceiveFlow {
    /// Bytes of data delivered to the channel and not yet taken out by its reader.
    unread: AtomicUsize,
    /// Set by the session loop when it holds back window or a backlog for
    /// this channel; the reader then wakes it after taking a message.
    starved: AtomicBool,
    /// The session loop's wake-up, attached when the first data arrives.
    wake: OnceLock<Arc<Notify>>,
}

impl ReceiveFlow {
    /// Bytes delivered and not yet read.
    pub(crate) fn unread(&self) -> usize {
        self.unread.load(Ordering::SeqCst)
    }

    /// The reader took `message` out of the queue.
    pub(crate) fn taken(&self, message: &ChannelMsg) {
        if let ChannelMsg::Data { data } | ChannelMsg::ExtendedData { data, .. } = message {
            self.unread.fetch_sub(data.len(), Ordering::SeqCst);
        }
        if self.starved.swap(false, Ordering::SeqCst)
            && let Some(wake) = self.wake.get()
        {
            wake.notify_one();
        }
    }

    /// The session loop holds something back for this channel: wake it when
    /// the reader takes a message. Set before looking at [`Self::unread`], so
    /// that a read in between is never missed.
    pub(crate) fn mark_starved(&self) {
        self.starved.store(true, Ordering::SeqCst);
    }
}

/// Why a message could not be queued without waiting.
pub(crate) enum Refused {
    /// The reader is gone; the message comes back.
    Closed(ChannelMsg),
    /// The backlog is full of messages the window does not bound.
    Crowded(ChannelMsg),
}

/// The session's end of a channel's queue: the bounded mpsc, and the backlog
/// of what did not fit yet, in order.
#[derive(Debug)]
pub(crate) struct Outbox {
    pub(crate) sender: Sender<ChannelMsg>,
    pub(crate) flow: Arc<ReceiveFlow>,
    backlog: Mutex<VecDeque<ChannelMsg>>,
}

impl Outbox {
    pub(crate) fn new(sender: Sender<ChannelMsg>) -> Self {
        Self {
            sender,
            flow: Arc::new(ReceiveFlow::default()),
            backlog: Mutex::new(VecDeque::new()),
        }
    }

    /// The backlog, locked. Only the session loop takes it, so it is never
    /// contended; a panic while it was held leaves a usable queue behind.
    fn backlog(&self) -> std::sync::MutexGuard<'_, VecDeque<ChannelMsg>> {
        self.backlog.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `message` behind anything already waiting, never waiting itself
    /// unless a non-data backlog is over [`MAX_BACKLOG`].
    pub(crate) fn push(&self, message: ChannelMsg, bounded: bool) -> Result<(), Refused> {
        let mut backlog = self.backlog();
        if !self.move_backlog(&mut backlog) {
            backlog.clear();
            return Err(Refused::Closed(message));
        }
        if backlog.is_empty() {
            return match self.sender.try_send(message) {
                Ok(()) => Ok(()),
                Err(TrySendError::Full(message)) => {
                    backlog.push_back(message);
                    self.flow.mark_starved();
                    Ok(())
                }
                Err(TrySendError::Closed(message)) => Err(Refused::Closed(message)),
            };
        }
        if bounded && backlog.len() >= MAX_BACKLOG {
            return Err(Refused::Crowded(message));
        }
        backlog.push_back(message);
        self.flow.mark_starved();
        Ok(())
    }

    /// Moves what fits from the backlog into the queue; false when the reader is gone.
    pub(crate) fn pump(&self) -> bool {
        let mut backlog = self.backlog();
        let open = self.move_backlog(&mut backlog);
        if !open {
            backlog.clear();
        }
        open
    }

    fn move_backlog(&self, backlog: &mut VecDeque<ChannelMsg>) -> bool {
        while let Some(message) = backlog.pop_front() {
            match self.sender.try_send(message) {
                Ok(()) => {}
                Err(TrySendError::Full(message)) => {
                    backlog.push_front(message);
                    self.flow.mark_starved();
                    return true;
                }
                Err(TrySendError::Closed(_)) => return false,
            }
        }
        true
    }

    /// Delivers data: counted as unread until the reader takes it. Returns
    /// false when the reader is gone (then it counts for nothing, and the
    /// window is replenished as upstream russh does).
    pub(crate) fn push_data(&self, message: ChannelMsg, len: usize, wake: &Arc<Notify>) -> bool {
        let _ = self.flow.wake.get_or_init(|| wake.clone());
        self.flow.unread.fetch_add(len, Ordering::SeqCst);
        match self.push(message, false) {
            Ok(()) => true,
            Err(_) => {
                self.flow.unread.fetch_sub(len, Ordering::SeqCst);
                false
            }
        }
    }
}

/// A peer that has more than this many target windows of data unread on one
/// channel is ignoring the window it was given (RFC 4254 §5.2); the session
/// ends rather than buffer without bound.
pub(crate) const MAX_UNREAD_WINDOWS: usize = 2;

impl Drop for Outbox {
    /// Messages still in the backlog when the session lets go of the channel
    /// (it was closed, or the connection ended) are still delivered, in order,
    /// as upstream russh delivered them before letting go.
    fn drop(&mut self) {
        let backlog = match self.backlog.get_mut() {
            Ok(backlog) => std::mem::take(backlog),
            Err(poisoned) => std::mem::take(poisoned.into_inner()),
        };
        if backlog.is_empty() || self.sender.is_closed() {
            return;
        }
        let sender = self.sender.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for message in backlog {
                    if sender.send(message).await.is_err() {
                        return;
                    }
                }
            });
        }
    }
}
