//! What the S3 store's parts share: where its objects go ([`Layout`]),
//! what its writer is asked ([`Job`]), and its sizes and times.

use super::super::retention::Retention;
use object_store::path::Path;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How often the events waiting in memory are written, when there are any.
pub(super) const FLUSH_EVERY: Duration = Duration::from_secs(2);

/// The size of a recording's multipart parts (S3's smallest but for the last).
pub(super) const PART_SIZE: usize = 5 * 1024 * 1024;

/// How many parts of one recording may be on their way at once; past that,
/// its lines wait in memory until a part is written.
pub(super) const PARTS_IN_FLIGHT: usize = 2;

/// How often the store prunes what its retention no longer allows.
pub(super) const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// How long a request may wait for its response's head (object_store
/// retries a request that timed out, with backoff).
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting to the service may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long dropping the store waits for what is queued to be written.
pub(super) const DROP_WAIT: Duration = Duration::from_secs(60);

/// What the writer is asked to do, in the order asked.
pub(super) enum Job {
    /// Keep an event's line (with its newline) for its day's next batch.
    Event { day: String, line: String },
    /// A recording ended: its upload is being completed by this task.
    Ended(JoinHandle<Result<(), String>>),
    /// Keep within these limits from now on (pruning at once, then hourly).
    Retain(Retention),
    /// Write everything asked before this, then say how it went.
    Flush(Box<dyn FnOnce(Result<(), String>) + Send>),
}

/// Where the store's objects are: keys under the prefix.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    /// The prefix, without leading or trailing slashes; empty for the root.
    pub(super) prefix: String,
}

impl Layout {
    pub(super) fn key(&self, rest: &str) -> Path {
        if self.prefix.is_empty() { Path::from(rest) } else { Path::from(format!("{}/{rest}", self.prefix)) }
    }

    pub(super) fn audit(&self) -> Path {
        self.key("audit")
    }

    pub(super) fn recordings(&self) -> Path {
        self.key("recordings")
    }
}
