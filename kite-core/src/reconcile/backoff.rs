//! Per-object exponential backoff for the error policy.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

const FIRST: Duration = Duration::from_secs(1);
const LAST: Duration = Duration::from_secs(300);

/// Counts consecutive failures per object: the next retry waits 1 s, then
/// 2 s, 4 s and so on up to 5 minutes; a success starts over.
///
/// ```
/// use std::time::Duration;
/// let backoff = kite_core::reconcile::Backoff::default();
/// assert_eq!(backoff.failed("kite/a"), Duration::from_secs(1));
/// assert_eq!(backoff.failed("kite/a"), Duration::from_secs(2));
/// backoff.succeeded("kite/a");
/// assert_eq!(backoff.failed("kite/a"), Duration::from_secs(1));
/// ```
#[derive(Debug, Default)]
pub struct Backoff {
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a failure of `key`; returns how long to wait before retrying.
    pub fn failed(&self, key: &str) -> Duration {
        let mut failures = self.failures();
        let count = failures.entry(key.to_string()).or_insert(0);
        let delay = FIRST.saturating_mul(1u32 << (*count).min(16)).min(LAST);
        *count = count.saturating_add(1);
        delay
    }

    /// Records a success of `key`: its next failure waits the shortest time again.
    pub fn succeeded(&self, key: &str) {
        self.failures().remove(key);
    }
}
