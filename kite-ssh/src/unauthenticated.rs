//! Connections that have not authenticated yet, counted per source (an
//! IPv4 address or an IPv6 /64), so that one address cannot hold the
//! router's connection slots, or its password checks, with connections that
//! never sign in.

use crate::limiter::Source;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The per-source counts; a count is held by a [`Pending`].
#[derive(Debug)]
pub(crate) struct Unauthenticated {
    cap: usize,
    per_source: Mutex<HashMap<Source, usize>>,
}

/// One connection's place among the unauthenticated: given back when it
/// authenticates or ends, whichever comes first.
#[derive(Debug)]
pub(crate) struct Pending {
    table: Arc<Unauthenticated>,
    source: Source,
    authenticated: AtomicBool,
}

impl Unauthenticated {
    /// At most `cap` unauthenticated connections per source.
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self { cap: cap.max(1), per_source: Mutex::new(HashMap::new()) })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<Source, usize>> {
        self.per_source.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for a new connection from `address`; `None` when its source holds them all.
    pub(crate) fn enter(self: &Arc<Self>, address: IpAddr) -> Option<Arc<Pending>> {
        let source = Source::from(address);
        let mut counts = self.counts();
        let count = counts.entry(source).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(Arc::new(Pending { table: self.clone(), source, authenticated: AtomicBool::new(false) }))
    }

    fn leave(&self, source: Source) {
        let mut counts = self.counts();
        if let Some(count) = counts.get_mut(&source) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&source);
            }
        }
    }
}

impl Pending {
    /// The connection authenticated: its place is given back.
    pub(crate) fn authenticate(&self) {
        if !self.authenticated.swap(true, Ordering::SeqCst) {
            self.table.leave(self.source);
        }
    }

    /// Whether the connection authenticated.
    pub(crate) fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::SeqCst)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.authenticated.swap(true, Ordering::SeqCst) {
            self.table.leave(self.source);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_holds_at_most_its_cap_and_gets_places_back() {
        let table = Unauthenticated::new(2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let first = table.enter(a).unwrap();
        let second = table.enter(a).unwrap();
        assert!(table.enter(a).is_none(), "the third waits");
        assert!(table.enter("192.0.2.2".parse().unwrap()).is_some(), "another source does not");
        first.authenticate();
        let third = table.enter(a).unwrap();
        drop(second);
        drop(third);
        assert!(table.enter(a).is_some());
        first.authenticate();
        drop(first);
        assert_eq!(table.counts().get(&Source::from(a)), None, "an authenticated place is given back once");
    }
}
