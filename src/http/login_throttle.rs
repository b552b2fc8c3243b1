//! Wrong tokens at `POST /login`, per client address: after [`FREE`] wrong tokens in a row,
//! the address must wait before its next try is even looked at, one second after the first
//! of those, doubling with each further wrong token, at most [`LONGEST`]. A right token clears
//! the count. Tries made while waiting are answered `429` and do not count.
//!
//! The map of addresses is bounded ([`MOST`]): past it, addresses whose wait is over and
//! whose last wrong token is older than [`LONGEST`] are forgotten, then the oldest.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong tokens in a row an address may send before it must wait.
pub const FREE: u32 = 5;
/// The longest wait.
pub const LONGEST: Duration = Duration::from_secs(60);
/// The most addresses remembered.
const MOST: usize = 10_000;

#[derive(Default)]
pub struct LoginThrottle {
    failures: Mutex<HashMap<IpAddr, Failures>>,
}

#[derive(Clone, Copy)]
struct Failures {
    in_a_row: u32,
    last: Instant,
}

impl Failures {
    /// When the address may try again.
    fn until(&self) -> Instant {
        match self.in_a_row.checked_sub(FREE) {
            None => self.last,
            Some(past) => {
                let wait = Duration::from_secs(1u64 << past.min(6)).min(LONGEST);
                self.last + wait
            }
        }
    }
}

impl LoginThrottle {
    /// `Ok` if `client` may try a token at `now`, else how long it must still wait.
    pub fn check(&self, client: IpAddr, now: Instant) -> Result<(), Duration> {
        let failures = self.lock();
        match failures.get(&client).map(Failures::until) {
            Some(until) if now < until => Err(until - now),
            _ => Ok(()),
        }
    }

    /// `client` sent a wrong token at `now`.
    pub fn failed(&self, client: IpAddr, now: Instant) {
        let mut failures = self.lock();
        if failures.len() >= MOST && !failures.contains_key(&client) {
            failures.retain(|_, f| now < f.until() || now < f.last + LONGEST);
            if failures.len() >= MOST
                && let Some(oldest) = failures.iter().min_by_key(|(_, f)| f.last).map(|(a, _)| *a)
            {
                failures.remove(&oldest);
            }
        }
        let entry = failures.entry(client).or_insert(Failures {
            in_a_row: 0,
            last: now,
        });
        entry.in_a_row = entry.in_a_row.saturating_add(1);
        entry.last = now;
    }

    /// `client` sent the right token: its count starts again.
    pub fn succeeded(&self, client: IpAddr) {
        self.lock().remove(&client);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Failures>> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_wrong_tokens_free_then_a_doubling_wait_until_a_right_one() {
        let throttle = LoginThrottle::default();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "::1".parse().unwrap());
        let t0 = Instant::now();
        for _ in 0..FREE {
            assert_eq!(throttle.check(a, t0), Ok(()));
            throttle.failed(a, t0);
        }
        assert_eq!(throttle.check(a, t0), Err(Duration::from_secs(1)));
        assert_eq!(throttle.check(b, t0), Ok(()), "another address");
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(throttle.check(a, t1), Ok(()));
        throttle.failed(a, t1);
        assert_eq!(throttle.check(a, t1), Err(Duration::from_secs(2)));
        let mut now = t1;
        for _ in 0..20 {
            now += LONGEST;
            throttle.failed(a, now);
        }
        assert_eq!(throttle.check(a, now), Err(LONGEST), "at most a minute");
        throttle.succeeded(a);
        assert_eq!(throttle.check(a, now), Ok(()));
    }

    #[test]
    fn the_addresses_remembered_are_bounded() {
        let throttle = LoginThrottle::default();
        let t0 = Instant::now();
        for i in 0..(MOST as u32 + 10) {
            throttle.failed(IpAddr::from(i.to_be_bytes()), t0);
        }
        assert!(throttle.lock().len() <= MOST);
    }
}
