//! The sessions a router is serving, so that its shutdown can end each of
//! them: russh runs a session on a task of its own, which outlives the
//! connection's task, so stopping that task alone would leave the session,
//! its channels and their recordings running.

use russh::server::Handle;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a user is told when the gateway stops.
const SHUTTING_DOWN: &str = "The gateway is restarting; connect again in a moment.";

/// The live sessions.
#[derive(Debug, Default)]
pub(crate) struct LiveSessions {
    next: AtomicU64,
    sessions: Mutex<HashMap<u64, Handle>>,
}

/// A session's entry, removed when dropped.
pub(crate) struct Entry {
    live: Arc<LiveSessions>,
    id: u64,
}

impl LiveSessions {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Handle>> {
        self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds a session while the returned entry lives.
    pub(crate) fn add(self: &Arc<Self>, handle: Handle) -> Entry {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.sessions().insert(id, handle);
        Entry { live: self.clone(), id }
    }

    /// Disconnects every live session, telling its user why.
    pub(crate) async fn disconnect_all(&self) {
        let handles: Vec<Handle> = self.sessions().values().cloned().collect();
        if !handles.is_empty() {
            tracing::info!(sessions = handles.len(), "disconnecting the sessions still open");
        }
        for handle in handles {
            let _ = handle.disconnect(russh::Disconnect::ByApplication, SHUTTING_DOWN.into(), "en".into()).await;
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.live.sessions().remove(&self.id);
    }
}
