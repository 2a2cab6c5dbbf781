//! Rate limits, decided by `governor` (GCRA): every limit is "N per minute" with a
//! burst of N, keyed by what it protects. Over a limit the API answers
//! `429 RATE_LIMITED` with `Retry-After`. Callbacks are never limited.
//!
//! Two kinds:
//! - [`Limiter`] counts every request of a kind per shopper (orders, request
//!   tokens, pays): a hijacked or buggy session cannot flood the platform.
//! - [`FailureLimiter`] counts failures only (wrong passwords per IP and per
//!   email, wrong admin tokens and merchant keys per IP), so honest use never
//!   runs into it. Once a key is over its limit it is refused *before* the
//!   credential is checked, until the limit has room again, so a right guess
//!   looks exactly like a wrong one while it is blocked.

use crate::env;
use crate::error::ApiError;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The limits, per minute; 0 switches one off.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitsConfig {
    /// Failed sign-ins per client IP per minute.
    #[arg(long, env = env::RATE_LIMIT_SIGNIN_FAILURES_PER_IP, default_value_t = 20)]
    pub signin_failures_per_ip: u32,
    /// Failed sign-ins per email per minute.
    #[arg(long, env = env::RATE_LIMIT_SIGNIN_FAILURES_PER_EMAIL, default_value_t = 5)]
    pub signin_failures_per_email: u32,
    /// Failed admin-token or merchant-key authentications per client IP per minute.
    #[arg(long, env = env::RATE_LIMIT_AUTH_FAILURES_PER_IP, default_value_t = 10)]
    pub auth_failures_per_ip: u32,
    /// Orders a shopper may place per minute.
    #[arg(long, env = env::RATE_LIMIT_ORDERS_PER_SHOPPER, default_value_t = 30)]
    pub orders_per_shopper: u32,
    /// Request tokens a shopper may take per minute.
    #[arg(long, env = env::RATE_LIMIT_TOKENS_PER_SHOPPER, default_value_t = 60)]
    pub tokens_per_shopper: u32,
    /// Pay requests a shopper may send per minute.
    #[arg(long, env = env::RATE_LIMIT_PAYS_PER_SHOPPER, default_value_t = 60)]
    pub pays_per_shopper: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            signin_failures_per_ip: 20,
            signin_failures_per_email: 5,
            auth_failures_per_ip: 10,
            orders_per_shopper: 30,
            tokens_per_shopper: 60,
            pays_per_shopper: 60,
        }
    }
}

impl LimitsConfig {
    /// Every limit switched off (load tools that drive one shopper hard).
    pub fn off() -> Self {
        Self {
            signin_failures_per_ip: 0,
            signin_failures_per_email: 0,
            auth_failures_per_ip: 0,
            orders_per_shopper: 0,
            tokens_per_shopper: 0,
            pays_per_shopper: 0,
        }
    }
}

/// The limiters every handler shares.
#[derive(Clone)]
pub struct Limits {
    /// Failed sign-ins per client IP.
    pub signin_ip: FailureLimiter<IpAddr>,
    /// Failed sign-ins per email, keyed as the shopper look-up compares
    /// emails (PostgreSQL's `lower()`, `db::shoppers::SignInLookup`).
    pub signin_email: FailureLimiter<String>,
    /// Failed admin or merchant authentications per client IP.
    pub auth_ip: FailureLimiter<IpAddr>,
    /// Orders per shopper.
    pub orders: Limiter<Uuid>,
    /// Request tokens per shopper.
    pub tokens: Limiter<Uuid>,
    /// Pay requests per shopper.
    pub pays: Limiter<Uuid>,
}

impl Limits {
    /// Builds the limiters of `config`.
    pub fn new(config: &LimitsConfig) -> Self {
        Self {
            signin_ip: FailureLimiter::per_minute(config.signin_failures_per_ip),
            signin_email: FailureLimiter::per_minute(config.signin_failures_per_email),
            auth_ip: FailureLimiter::per_minute(config.auth_failures_per_ip),
            orders: Limiter::per_minute(config.orders_per_shopper),
            tokens: Limiter::per_minute(config.tokens_per_shopper),
            pays: Limiter::per_minute(config.pays_per_shopper),
        }
    }
}

fn quota(per_minute: u32) -> Option<Quota> {
    NonZeroU32::new(per_minute).map(Quota::per_minute)
}

/// Whole seconds to wait, at least 1 (what `Retry-After` carries).
fn retry_secs(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// Counts every request per key.
#[derive(Clone)]
pub struct Limiter<K: Hash + Eq + Clone> {
    inner: Option<Arc<DefaultKeyedRateLimiter<K>>>,
}

impl<K: Hash + Eq + Clone> Limiter<K> {
    /// `per_minute` requests per key per minute (burst `per_minute`); 0 is no limit.
    pub fn per_minute(per_minute: u32) -> Self {
        Self {
            inner: quota(per_minute).map(|q| Arc::new(RateLimiter::keyed(q))),
        }
    }

    /// Counts one request of `key`: `Err(RateLimited)` when over the limit.
    pub fn check(&self, key: &K) -> Result<(), ApiError> {
        let Some(limiter) = &self.inner else {
            return Ok(());
        };
        limiter.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ApiError::RateLimited {
                retry_after_secs: retry_secs(wait),
            }
        })
    }
}

/// Counts failures per key, and blocks a key that went over its limit until
/// the limit has room again (see the module doc).
#[derive(Clone)]
pub struct FailureLimiter<K: Hash + Eq + Clone> {
    limiter: Limiter<K>,
    blocked: Arc<Mutex<HashMap<K, Instant>>>,
}

impl<K: Hash + Eq + Clone> FailureLimiter<K> {
    /// `per_minute` failures per key per minute; 0 is no limit.
    pub fn per_minute(per_minute: u32) -> Self {
        Self {
            limiter: Limiter::per_minute(per_minute),
            blocked: Arc::default(),
        }
    }

    /// Before checking a credential: `Err(RateLimited)` while `key` is blocked.
    pub fn check(&self, key: &K) -> Result<(), ApiError> {
        let blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        match blocked.get(key) {
            Some(until) => {
                let wait = until.saturating_duration_since(Instant::now());
                if wait.is_zero() {
                    Ok(())
                } else {
                    Err(ApiError::RateLimited {
                        retry_after_secs: retry_secs(wait),
                    })
                }
            }
            None => Ok(()),
        }
    }

    /// After a failed credential: counts it, and when that goes over the limit
    /// blocks `key` and returns `Err(RateLimited)` to answer with instead.
    pub fn record_failure(&self, key: &K) -> Result<(), ApiError> {
        let result = self.limiter.check(key);
        if let Err(ApiError::RateLimited { retry_after_secs }) = &result {
            let now = Instant::now();
            let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
            // Forget keys whose block is over, so the map stays as small as the attack.
            blocked.retain(|_, until| *until > now);
            blocked.insert(key.clone(), now + Duration::from_secs(*retry_after_secs));
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limiter_refuses_the_request_past_its_burst_with_a_wait() {
        let limiter = Limiter::per_minute(3);
        for _ in 0..3 {
            assert!(limiter.check(&1).is_ok());
        }
        match limiter.check(&1) {
            Err(ApiError::RateLimited { retry_after_secs }) => {
                assert!((1..=20).contains(&retry_after_secs), "{retry_after_secs}");
            }
            other => panic!("expected RateLimited, got {other:?}"),
        }
        assert!(limiter.check(&2).is_ok(), "keys are counted apart");
    }

    #[test]
    fn zero_is_no_limit() {
        let limiter = Limiter::per_minute(0);
        for _ in 0..1_000 {
            assert!(limiter.check(&1).is_ok());
        }
    }

    #[test]
    fn a_failure_limiter_blocks_a_key_only_after_its_failures() {
        let limiter = FailureLimiter::per_minute(2);
        for _ in 0..100 {
            assert!(limiter.check(&"a").is_ok(), "checks alone never block");
        }
        assert!(limiter.record_failure(&"a").is_ok());
        assert!(limiter.record_failure(&"a").is_ok());
        assert!(limiter.record_failure(&"a").is_err());
        assert!(
            limiter.check(&"a").is_err(),
            "blocked before the credential is looked at"
        );
        assert!(limiter.check(&"b").is_ok());
    }
}
