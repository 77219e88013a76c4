//! Sign-in and sign-up limits, with the gateway's limiter
//! ([`kite_ssh::limiter::Limiter`]): the tables are bounded and an IPv6
//! client is its /64.
//!
//! Sign-in counts failures only, per client address and per account; an
//! account banned by others' guesses still lets in an address its owner
//! signed in from before. Sign-up counts every sign-up that gets as far as
//! hashing a password, per client address and for everyone together, at
//! the rates `KitePlatform.spec.signup` sets.

use super::error::ApiError;
use kite_core::api::SignupSpec;
use kite_ssh::RateLimit;
use kite_ssh::limiter::Limiter;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The sign-in limiter: 20 failures from one address, or 10 against one
/// account, within 5 minutes ban it for 5 minutes.
pub fn login_limiter() -> Limiter {
    Limiter::new(
        RateLimit::default()
            .with_failures_per_address(20)
            .with_failures_per_login(10)
            .with_window(Duration::from_secs(300))
            .with_ban(Duration::from_secs(300))
            .with_tracked(100_000),
    )
}

/// Sign-ups per hour, per address and in all, at the platform's current rates.
#[derive(Default)]
pub struct SignupLimits {
    current: Mutex<Option<AtRates>>,
}

/// A limiter and the rates (per address, in all) it was made for.
type AtRates = ((u32, u32), Arc<Limiter>);

/// The one account every sign-up is counted against: the limit for everyone together.
const EVERYONE: &str = "every sign-up";
const HOUR: Duration = Duration::from_secs(3600);

impl SignupLimits {
    /// The limiter for `spec`'s rates; a change of rates starts new counts.
    fn limiter(&self, spec: &SignupSpec) -> Arc<Limiter> {
        let rates = (spec.per_address_per_hour, spec.per_hour);
        let mut current = self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match current.as_ref() {
            Some((held, limiter)) if *held == rates => limiter.clone(),
            _ => {
                let limiter = Arc::new(Limiter::new(
                    RateLimit::default()
                        .with_failures_per_address(rates.0)
                        .with_failures_per_login(rates.1)
                        .with_window(HOUR)
                        .with_ban(HOUR)
                        .with_tracked(100_000),
                ));
                *current = Some((rates, limiter.clone()));
                limiter
            }
        }
    }

    /// How long a sign-up from `client` must wait, if it must.
    pub fn refused_for(&self, spec: &SignupSpec, client: IpAddr) -> Option<Duration> {
        self.limiter(spec).refused_for(client, EVERYONE)
    }

    /// Counts a sign-up from `client`.
    pub fn count(&self, spec: &SignupSpec, client: IpAddr) {
        self.limiter(spec).record_failure(client, EVERYONE);
    }
}

/// The whole seconds to say in a refusal that must wait `wait`.
pub fn seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// Refuses with `429` while `client` or `account` is banned for failed
/// password checks (sign-in, or the current password of a password change):
/// "too many `attempts`; try again in N seconds".
pub fn refuse_while_banned(limits: &Limiter, client: IpAddr, account: &str, attempts: &str) -> Result<(), ApiError> {
    let Some(wait) = limits.refused_for(client, account) else { return Ok(()) };
    tracing::warn!(%client, "password attempts limited");
    let seconds = seconds(wait);
    Err(ApiError::too_many(format!("too many {attempts}; try again in {seconds} seconds"), seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    #[test]
    fn an_account_is_limited_whatever_the_address_but_not_for_its_owner() {
        let limits = login_limiter();
        limits.record_success(IpAddr::from([192, 0, 2, 1]), "alice@example.com");
        for i in 0..10u8 {
            assert!(limits.refused_for(IpAddr::from([10, 0, 0, i]), "alice@example.com").is_none());
            limits.record_failure(IpAddr::from([10, 0, 0, i]), "alice@example.com");
        }
        let wait = limits.refused_for(IpAddr::from([10, 0, 0, 99]), "alice@example.com").unwrap();
        assert!((1..=300).contains(&seconds(wait)), "{wait:?}");
        assert!(limits.refused_for(IpAddr::from([192, 0, 2, 1]), "alice@example.com").is_none());
        assert!(limits.refused_for(IpAddr::from([10, 0, 0, 99]), "bob@example.com").is_none());
    }

    #[test]
    fn sign_ups_are_limited_per_address_and_for_everyone() {
        let spec = SignupSpec { per_address_per_hour: 2, per_hour: 3, ..SignupSpec::default() };
        let limits = SignupLimits::default();
        let (a, b, c) = (IpAddr::from([192, 0, 2, 1]), IpAddr::from([192, 0, 2, 2]), IpAddr::from([192, 0, 2, 3]));
        for _ in 0..2 {
            assert!(limits.refused_for(&spec, a).is_none());
            limits.count(&spec, a);
        }
        assert!(limits.refused_for(&spec, a).is_some(), "the address used its two");
        assert!(limits.refused_for(&spec, b).is_none());
        limits.count(&spec, b);
        assert!(limits.refused_for(&spec, c).is_some(), "three in all closes sign-up for everyone");
        let wider = SignupSpec { per_hour: 10, ..spec };
        assert!(limits.refused_for(&wider, c).is_none(), "new rates start new counts");
    }

    #[test]
    fn an_address_is_limited_whatever_the_account() {
        let limits = login_limiter();
        let address = IpAddr::from([192, 0, 2, 1]);
        for i in 0..20 {
            assert!(limits.refused_for(address, &format!("user{i}@example.com")).is_none(), "attempt {i}");
            limits.record_failure(address, &format!("user{i}@example.com"));
        }
        assert!(limits.refused_for(address, "user20@example.com").is_some());
        assert!(limits.refused_for(IpAddr::from([192, 0, 2, 2]), "user21@example.com").is_none());
    }
}
