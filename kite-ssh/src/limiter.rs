//! Failed-login counting and temporary bans, per source address and per
//! login name. Memory is bounded: old entries are dropped.

use crate::options::RateLimit;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

const MAX_ENTRIES: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Address(IpAddr),
    Login(String),
}

#[derive(Debug)]
struct Entry {
    failures: u32,
    window_start: Instant,
    banned_until: Option<Instant>,
}

/// Counts failures and says who is banned.
#[derive(Debug)]
pub struct Limiter {
    limits: RateLimit,
    entries: Mutex<HashMap<Key, Entry>>,
}

impl Limiter {
    /// A limiter with these limits.
    pub fn new(limits: RateLimit) -> Self {
        Self { limits, entries: Mutex::new(HashMap::new()) }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the address or the login is banned now.
    pub fn is_banned(&self, address: IpAddr, login: &str) -> bool {
        let now = Instant::now();
        let entries = self.entries();
        [Key::Address(address), Key::Login(login.to_string())]
            .iter()
            .any(|key| entries.get(key).and_then(|e| e.banned_until).is_some_and(|until| until > now))
    }

    /// Counts a failure for both; bans whichever reached its limit.
    pub fn record_failure(&self, address: IpAddr, login: &str) {
        let now = Instant::now();
        let mut entries = self.entries();
        if entries.len() >= MAX_ENTRIES {
            let window = self.limits.window;
            entries
                .retain(|_, e| e.banned_until.is_some_and(|u| u > now) || now.duration_since(e.window_start) < window);
        }
        for (key, limit) in [
            (Key::Address(address), self.limits.failures_per_address),
            (Key::Login(login.to_string()), self.limits.failures_per_login),
        ] {
            if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
                continue;
            }
            let entry = entries.entry(key).or_insert(Entry { failures: 0, window_start: now, banned_until: None });
            if now.duration_since(entry.window_start) > self.limits.window {
                entry.failures = 0;
                entry.window_start = now;
            }
            entry.failures += 1;
            if entry.failures >= limit {
                entry.banned_until = Some(now + self.limits.ban);
                entry.failures = 0;
                entry.window_start = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limiter() -> Limiter {
        Limiter::new(RateLimit {
            failures_per_address: 3,
            failures_per_login: 2,
            window: Duration::from_secs(60),
            ban: Duration::from_secs(60),
        })
    }

    #[test]
    fn a_login_is_banned_after_its_limit_from_any_address() {
        let limiter = limiter();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        limiter.record_failure(a, "alice");
        assert!(!limiter.is_banned(a, "alice"));
        limiter.record_failure(b, "alice");
        assert!(limiter.is_banned(a, "alice") && limiter.is_banned(b, "alice"));
        assert!(!limiter.is_banned(b, "bob"), "another login from another address is not banned");
    }

    #[test]
    fn an_address_is_banned_after_its_limit_for_any_login() {
        let limiter = limiter();
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        for login in ["a", "b", "c"] {
            limiter.record_failure(a, login);
        }
        assert!(limiter.is_banned(a, "d"));
    }
}
