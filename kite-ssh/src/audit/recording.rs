//! One channel's recording while it runs: the channel's tasks hand it
//! output, input (when the store wants it) and resizes; it writes asciicast
//! lines to the store's [`CastWriter`], and its last lines (how the session
//! ended) when the last task lets go of it, however the channel ended.

use super::cast::{CastEncoder, CastHeader};
use crate::live::LiveCast;
use std::sync::{Arc, Mutex};

/// Where a recording's lines go, from the store.
pub trait CastWriter: Send {
    /// Keeps one line (the header first, then events), without its newline.
    fn line(&mut self, line: &str);

    /// Whether the user's input is recorded too (typed passwords land in
    /// it, so stores leave it off unless told).
    fn wants_input(&self) -> bool {
        false
    }
}

/// What a store is told of a recording it may keep.
#[derive(Debug, Clone)]
pub struct RecordingAbout {
    /// The connection's id, as its audit events give it.
    pub connection: String,
    /// The channel.
    pub channel: u32,
    /// The route (the machine).
    pub route: String,
    /// The cast's header.
    pub header: CastHeader,
}

/// A running recording, shared by a channel's two directions.
#[derive(Clone)]
pub(crate) struct Recording {
    inner: Arc<Mutex<Active>>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recording")
    }
}

struct Active {
    encoder: CastEncoder,
    writer: Box<dyn CastWriter>,
    live: LiveCast,
    input: bool,
    how: String,
}

impl Recording {
    /// Starts a recording: the header goes out at once, to the store and
    /// to the live feed.
    pub(crate) fn start(writer: Box<dyn CastWriter>, header: &CastHeader, live: LiveCast) -> Self {
        let input = writer.wants_input();
        let mut active = Active { encoder: CastEncoder::new(), writer, live, input, how: "closed".into() };
        active.line(&header.line());
        Self { inner: Arc::new(Mutex::new(active)) }
    }

    fn active(&self) -> std::sync::MutexGuard<'_, Active> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The machine wrote `bytes` to the terminal (stdout or stderr).
    pub(crate) fn output(&self, bytes: &[u8]) {
        let mut active = self.active();
        if let Some(line) = active.encoder.output(bytes) {
            active.line(&line);
        }
    }

    /// The user typed `bytes`; kept only when the store wants input.
    pub(crate) fn input(&self, bytes: &[u8]) {
        let mut active = self.active();
        if active.input
            && let Some(line) = active.encoder.input(bytes)
        {
            active.line(&line);
        }
    }

    /// The user's terminal was resized.
    pub(crate) fn resize(&self, cols: u32, rows: u32) {
        let mut active = self.active();
        let line = active.encoder.resize(cols, rows);
        active.line(&line);
    }

    /// How the session ended, for the last marker (`exit 0`, `signal TERM`).
    pub(crate) fn ended(&self, how: String) {
        self.active().how = how;
    }
}

impl Active {
    fn line(&mut self, line: &str) {
        self.writer.line(line);
        self.live.line(line);
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        let how = std::mem::take(&mut self.how);
        for line in self.encoder.finish(&how) {
            self.line(&line);
        }
    }
}
