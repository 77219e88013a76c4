//! Sign-in attempt limits, per client address and per account, so that
//! guessing passwords is slow from one machine and against one account
//! from many machines.

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::IpAddr;
use std::num::NonZeroU32;

/// The two keyed limiters.
pub struct LoginLimits {
    per_address: DefaultKeyedRateLimiter<IpAddr>,
    per_account: DefaultKeyedRateLimiter<String>,
}

const PER_ADDRESS_PER_MINUTE: NonZeroU32 = match NonZeroU32::new(20) {
    Some(n) => n,
    None => NonZeroU32::MIN,
};
const PER_ACCOUNT_PER_MINUTE: NonZeroU32 = match NonZeroU32::new(5) {
    Some(n) => n,
    None => NonZeroU32::MIN,
};

impl Default for LoginLimits {
    /// 20 attempts a minute from one address, 5 a minute against one account (each with that burst).
    fn default() -> Self {
        Self {
            per_address: RateLimiter::keyed(Quota::per_minute(PER_ADDRESS_PER_MINUTE)),
            per_account: RateLimiter::keyed(Quota::per_minute(PER_ACCOUNT_PER_MINUTE)),
        }
    }
}

impl LoginLimits {
    /// `Ok` when an attempt from `address` against `account` may go ahead;
    /// otherwise the seconds to wait. Both limits are charged.
    pub fn check(&self, address: IpAddr, account: &str) -> Result<(), u64> {
        let now = DefaultClock::default().now();
        let by_address = self.per_address.check_key(&address);
        let by_account = self.per_account.check_key(&account.to_lowercase());
        let wait = [by_address.err(), by_account.err()]
            .into_iter()
            .flatten()
            .map(|not_until| not_until.wait_time_from(now).as_secs() + 1)
            .max();
        match wait {
            Some(seconds) => Err(seconds),
            None => Ok(()),
        }
    }

    /// Forgets stale keys, so the limiters do not grow without bound.
    pub fn shrink(&self) {
        self.per_address.retain_recent();
        self.per_account.retain_recent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_is_limited_whatever_the_address() {
        let limits = LoginLimits::default();
        for i in 0..5u8 {
            assert!(limits.check(IpAddr::from([10, 0, 0, i]), "Alice@example.com").is_ok());
        }
        let wait = limits.check(IpAddr::from([10, 0, 0, 9]), "alice@example.com").unwrap_err();
        assert!((1..=61).contains(&wait), "{wait}");
        assert!(limits.check(IpAddr::from([10, 0, 0, 9]), "bob@example.com").is_ok());
    }

    #[test]
    fn an_address_is_limited_whatever_the_account() {
        let limits = LoginLimits::default();
        let address = IpAddr::from([192, 0, 2, 1]);
        for i in 0..20 {
            assert!(limits.check(address, &format!("user{i}@example.com")).is_ok(), "attempt {i}");
        }
        assert!(limits.check(address, "user20@example.com").is_err());
        assert!(limits.check(IpAddr::from([192, 0, 2, 2]), "user21@example.com").is_ok());
    }
}
