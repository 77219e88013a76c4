//! Failed-login counting and temporary bans, per source and per account,
//! shared by the SSH gateway (accounts are login names) and the web API
//! (accounts are emails).
//!
//! What it holds out against, each kept by a test below:
//! - **A full table.** The tables are bounded caches with
//!   least-recently-used eviction and idle expiry: a flood of new keys
//!   evicts the stalest entries, it never stops new keys being counted, and
//!   no call sweeps the table under a lock.
//! - **A banned source filling the table.** Once a source is banned its
//!   failures are no longer recorded, for it or for the accounts it names.
//! - **IPv6 rotation.** An IPv6 source is its /64: one client holds at least
//!   that many addresses, and counting per /128 would give it 2^64 tries.
//! - **Locking the owner out.** An account ban stops sources that have never
//!   signed in to the account; a source the account signed in from before
//!   still gets its attempts (it is still held by its own source limit).
//!
//! # Example
//! ```
//! use kite_ssh::RateLimit;
//! use kite_ssh::limiter::Limiter;
//! use std::net::IpAddr;
//!
//! let limiter = Limiter::new(RateLimit::default().with_failures_per_login(2));
//! let (home, attacker): (IpAddr, IpAddr) = ("192.0.2.1".parse()?, "198.51.100.7".parse()?);
//! limiter.record_success(home, "alice");
//! limiter.record_failure(attacker, "alice");
//! limiter.record_failure(attacker, "alice");
//! assert!(limiter.refused_for(attacker, "alice").is_some(), "the account is banned for strangers");
//! assert!(limiter.refused_for(home, "alice").is_none(), "its owner's address still gets in");
//! # Ok::<(), std::net::AddrParseError>(())
//! ```

use crate::options::RateLimit;
use moka::ops::compute::Op;
use moka::policy::EvictionPolicy;
use moka::sync::Cache;
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

/// The longest account name kept as a key; longer ones are cut (at a
/// character boundary), so a client cannot make one key take kilobytes.
pub const MAX_ACCOUNT_KEY: usize = 256;

/// Where attempts come from: an IPv4 address, or an IPv6 /64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl From<IpAddr> for Source {
    fn from(address: IpAddr) -> Self {
        match address {
            IpAddr::V4(v4) => Source(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source(IpAddr::V4(v4)),
                None => Source(IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX)))),
            },
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    failures: u32,
    window_start: Instant,
    banned_until: Option<Instant>,
}

impl Entry {
    fn banned_for(&self, now: Instant) -> Option<Duration> {
        self.banned_until.filter(|until| *until > now).map(|until| until - now)
    }

    /// This entry after one more failure at `now`, with a ban once `limit` is reached.
    fn failed(entry: Option<Entry>, now: Instant, limits: &RateLimit, limit: u32) -> Entry {
        let mut entry = entry.unwrap_or(Entry { failures: 0, window_start: now, banned_until: None });
        if now.duration_since(entry.window_start) > limits.window {
            entry = Entry { failures: 0, window_start: now, banned_until: entry.banned_until };
        }
        entry.failures = entry.failures.saturating_add(1);
        if entry.failures >= limit {
            entry = Entry { failures: 0, window_start: now, banned_until: Some(now + limits.ban) };
        }
        entry
    }
}

/// Counts failures and says who is refused, and for how long.
pub struct Limiter {
    limits: RateLimit,
    sources: Cache<Source, Entry>,
    accounts: Cache<String, Entry>,
    /// (account, source) pairs that signed in: the account's owner.
    known: Cache<(String, Source), ()>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("limits", &self.limits)
            .field("sources", &self.sources.entry_count())
            .field("accounts", &self.accounts.entry_count())
            .finish_non_exhaustive()
    }
}

fn table<K, V>(capacity: u64, idle: Duration) -> Cache<K, V>
where
    K: std::hash::Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    Cache::builder().max_capacity(capacity).eviction_policy(EvictionPolicy::lru()).time_to_idle(idle).build()
}

fn account_key(account: &str) -> String {
    let mut end = account.len().min(MAX_ACCOUNT_KEY);
    while !account.is_char_boundary(end) {
        end -= 1;
    }
    account[..end].to_string()
}

impl Limiter {
    /// A limiter with these limits; each table holds at most `limits.tracked` keys.
    pub fn new(limits: RateLimit) -> Self {
        let idle = limits.window.max(limits.ban);
        let capacity = limits.tracked.max(1);
        Self {
            sources: table(capacity, idle),
            accounts: table(capacity, idle),
            // An owner's address is remembered for as long as a ban could matter, and a little more.
            known: table(capacity, idle.saturating_mul(4)),
            limits,
        }
    }

    /// How long attempts from `source` on `account` stay refused; `None`
    /// when they may go ahead. A banned account refuses only sources that
    /// never signed in to it.
    pub fn refused_for(&self, source: IpAddr, account: &str) -> Option<Duration> {
        let now = Instant::now();
        let source = Source::from(source);
        let by_source = self.sources.get(&source).and_then(|e| e.banned_for(now));
        let account = account_key(account);
        let by_account = self
            .accounts
            .get(&account)
            .and_then(|e| e.banned_for(now))
            .filter(|_| !self.known.contains_key(&(account.clone(), source)));
        by_source.max(by_account)
    }

    /// Counts a failed attempt for the source and the account, and bans
    /// whichever reached its limit. Nothing is counted for a source that is
    /// banned already (its attempts are refused before they are checked),
    /// nor for an account banned already.
    pub fn record_failure(&self, source: IpAddr, account: &str) {
        let now = Instant::now();
        let source = Source::from(source);
        if self.sources.get(&source).and_then(|e| e.banned_for(now)).is_some() {
            return;
        }
        let limits = &self.limits;
        self.sources.entry(source).and_compute_with(|entry| {
            Op::Put(Entry::failed(entry.map(|e| e.into_value()), now, limits, limits.failures_per_address))
        });
        self.accounts.entry(account_key(account)).and_compute_with(|entry| {
            let entry = entry.map(|e| e.into_value());
            if entry.is_some_and(|e| e.banned_for(now).is_some()) {
                return Op::Nop;
            }
            Op::Put(Entry::failed(entry, now, limits, limits.failures_per_login))
        });
    }

    /// Records that `account` signed in from `source`: a later ban of the
    /// account does not stop this source.
    pub fn record_success(&self, source: IpAddr, account: &str) {
        self.known.insert((account_key(account), Source::from(source)), ());
    }

    /// How many sources and accounts are tracked now (after pending evictions).
    pub fn tracked(&self) -> (u64, u64) {
        self.sources.run_pending_tasks();
        self.accounts.run_pending_tasks();
        (self.sources.entry_count(), self.accounts.entry_count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter() -> Limiter {
        Limiter::new(RateLimit {
            failures_per_address: 3,
            failures_per_login: 2,
            window: Duration::from_secs(60),
            ban: Duration::from_secs(60),
            tracked: 1000,
        })
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_login_is_banned_after_its_limit_from_any_address() {
        let limiter = limiter();
        limiter.record_failure(ip("127.0.0.1"), "alice");
        assert!(limiter.refused_for(ip("127.0.0.1"), "alice").is_none());
        limiter.record_failure(ip("127.0.0.2"), "alice");
        assert!(limiter.refused_for(ip("127.0.0.1"), "alice").is_some());
        assert!(limiter.refused_for(ip("127.0.0.2"), "alice").is_some());
        assert!(limiter.refused_for(ip("127.0.0.2"), "bob").is_none(), "another login from another address");
    }

    #[test]
    fn an_address_is_banned_after_its_limit_for_any_login() {
        let limiter = limiter();
        for login in ["a", "b", "c"] {
            limiter.record_failure(ip("127.0.0.1"), login);
        }
        let wait = limiter.refused_for(ip("127.0.0.1"), "d").unwrap();
        assert!(wait > Duration::from_secs(55) && wait <= Duration::from_secs(60), "{wait:?}");
    }

    #[test]
    fn a_banned_account_still_lets_in_an_address_its_owner_used() {
        let limiter = limiter();
        limiter.record_success(ip("192.0.2.1"), "alice");
        limiter.record_failure(ip("198.51.100.1"), "alice");
        limiter.record_failure(ip("198.51.100.2"), "alice");
        assert!(limiter.refused_for(ip("198.51.100.3"), "alice").is_some());
        assert!(limiter.refused_for(ip("192.0.2.1"), "alice").is_none());
    }

    #[test]
    fn a_banned_address_records_nothing_more() {
        let limiter = limiter();
        for login in ["a", "b", "c"] {
            limiter.record_failure(ip("203.0.113.9"), login);
        }
        for i in 0..500 {
            limiter.record_failure(ip("203.0.113.9"), &format!("guess{i}"));
        }
        assert_eq!(limiter.tracked(), (1, 3), "only the three failures before the ban are kept");
    }

    #[test]
    fn a_full_table_evicts_the_stalest_and_still_counts_new_keys() {
        let limiter = limiter();
        for i in 0..5000u32 {
            let [_, a, b, c] = i.to_be_bytes();
            limiter.record_failure(IpAddr::from([10, a, b, c]), "x");
        }
        let (sources, _) = limiter.tracked();
        assert!(sources <= 1000, "{sources} sources tracked");
        for _ in 0..3 {
            limiter.record_failure(ip("192.0.2.200"), "y");
        }
        assert!(limiter.refused_for(ip("192.0.2.200"), "z").is_some(), "a new key on a full table is counted");
    }

    #[test]
    fn an_ipv6_source_is_its_64() {
        let limiter = limiter();
        for host in 1..=3 {
            limiter.record_failure(ip(&format!("2001:db8:1:2::{host}")), &format!("u{host}"));
        }
        assert!(limiter.refused_for(ip("2001:db8:1:2:ffff::1"), "v").is_some());
        assert!(limiter.refused_for(ip("2001:db8:1:3::1"), "v").is_none(), "the next /64 is another source");
        assert_eq!(Source::from(ip("::ffff:192.0.2.1")), Source::from(ip("192.0.2.1")));
        assert_eq!(Source::from(ip("2001:db8:1:2::7")).to_string(), "2001:db8:1:2::/64");
    }

    #[test]
    fn a_long_account_name_is_cut_to_a_bounded_key() {
        let long = "é".repeat(4000);
        assert!(account_key(&long).len() <= MAX_ACCOUNT_KEY);
        assert!(long.starts_with(&account_key(&long)));
    }
}
