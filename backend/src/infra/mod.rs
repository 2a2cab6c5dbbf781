//! What the guarantees run on, and no rule of their own: the Redis connection
//! and the request-token store, group commit, readiness and drain, metrics,
//! logs, and the crash points of the fault-injection build.

pub mod faults;
pub mod group_commit;
pub mod health;
pub mod metrics;
pub mod redis;
pub mod shutdown;
pub mod telemetry;
pub mod tokens;
