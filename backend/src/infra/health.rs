//! What the health check last found of each part we depend on, so that a part
//! going down (with the reason) and coming back are logged once each.

use std::sync::atomic::{AtomicU8, Ordering};

/// What the last `/healthz` found of each part, so that a part going down
/// (with the reason) and coming back are logged once each, not at every
/// check a load balancer or monitor makes.
pub struct HealthLog {
    database: AtomicU8,
    redis: AtomicU8,
}

impl Default for HealthLog {
    fn default() -> Self {
        Self {
            database: AtomicU8::new(UNKNOWN),
            redis: AtomicU8::new(UNKNOWN),
        }
    }
}

/// Not checked yet (a first check that finds a part up logs nothing).
const UNKNOWN: u8 = 0;
const UP: u8 = 1;
const DOWN: u8 = 2;

impl HealthLog {
    /// Records what a check found of PostgreSQL; logs a change.
    pub fn database(&self, found: Result<(), String>) {
        Self::note(&self.database, "database", found);
    }

    /// Records what a check found of Redis; logs a change.
    pub fn redis(&self, found: Result<(), String>) {
        Self::note(&self.redis, "redis", found);
    }

    /// Records what a check found of `part`; logs a change.
    fn note(seen: &AtomicU8, part: &'static str, found: Result<(), String>) {
        let now = if found.is_ok() { UP } else { DOWN };
        let before = seen.swap(now, Ordering::Relaxed);
        match found {
            Err(reason) if before != DOWN => {
                tracing::warn!(part, %reason, "health check: a part we depend on is down");
            }
            Ok(()) if before == DOWN => {
                tracing::info!(part, "health check: a part we depend on answers again");
            }
            _ => {}
        }
    }
}
