//! The per-client rate limit: a token bucket per client IP address (`burst` requests at once,
//! refilled at `per_second`), off unless configured. Over it: `429` with `Retry-After`.
//! `/health` is not counted. A mutex around a map is enough: the critical section is a few
//! arithmetic operations, and the map is swept of full (idle) buckets when it grows.

use super::auth::OPEN_PATH;
use super::error::ApiError;
use super::guard::Check;
use crate::config::RateLimit;
use axum::extract::{ConnectInfo, Request};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Above this many tracked clients, buckets that have refilled completely are forgotten.
const SWEEP_ABOVE: usize = 10_000;

pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> Arc<RateLimiter> {
        Arc::new(RateLimiter {
            limit,
            buckets: Mutex::new(HashMap::new()),
        })
    }

    /// Takes one token for `client`, or says how long until one is available.
    pub fn take(&self, client: IpAddr, now: Instant) -> Result<(), Duration> {
        let RateLimit { per_second, burst } = self.limit;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > SWEEP_ABOVE {
            buckets.retain(|_, b| b.refilled(now, per_second, burst) < burst);
        }
        let bucket = buckets.entry(client).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        bucket.tokens = bucket.refilled(now, per_second, burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_second))
        }
    }
}

impl Bucket {
    fn refilled(&self, now: Instant, per_second: f64, burst: f64) -> f64 {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        (self.tokens + elapsed * per_second).min(burst)
    }
}

impl Check for RateLimiter {
    fn check(&self, request: &mut Request) -> Result<(), ApiError> {
        if request.uri().path() == OPEN_PATH {
            return Ok(());
        }
        let client = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
        self.take(client, Instant::now()).map_err(|wait| {
            tracing::debug!(%client, wait_ms = wait.as_millis() as u64, "rate limited");
            ApiError::TooManyRequests {
                retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_refill_rate() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 2.0,
            burst: 3.0,
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.take(a, t0), Ok(()));
        }
        let wait = limiter.take(a, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert_eq!(
            limiter.take(b, t0),
            Ok(()),
            "another client has its own bucket"
        );
        assert_eq!(limiter.take(a, t0 + Duration::from_millis(500)), Ok(()));
        assert!(limiter.take(a, t0 + Duration::from_millis(500)).is_err());
    }
}
