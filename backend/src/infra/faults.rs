//! Crash points for fault-injection tests.
//!
//! They exist only in builds with the `fault-injection` cargo feature, which
//! only the fault tests turn on (`backend-fault-injection` binary). Every other
//! build — `scripts/run.sh`, `cargo build --release` — compiles
//! [`crash_point`] to nothing and ignores `CRASH_POINTS`, so no environment
//! variable can make a production process abort.
//!
//! A crash point aborts the process on the spot — no unwinding, no destructors,
//! no answer sent — exactly like `kill -9` at that line. Fault tests run the
//! backend as a child process with, e.g.,
//! `CRASH_POINTS=callback.in_tx=0.05,callback.after_commit=0.05 CRASH_SEED=7`,
//! restart it when it dies, and check that the platform's retries still end in
//! exactly one charge. The named points:
//!
//! | point | where |
//! |---|---|
//! | `callback.before_tx` | signature checked, nothing written yet |
//! | `callback.in_tx` | the general transaction: ledger row, status change and deduction written, not committed |
//! | `callback.in_statement` | the common case's one statement sent, in autocommit as in production, and the process killed before its answer: PostgreSQL commits it or not, never half of it |
//! | `callback.after_commit` | committed, answer not sent |
//! | `pay.after_getdel` | token consumed in Redis, no attempt row yet |
//! | `refund.in_tx` | a refund result's REFUND row, refunded total and credit written, not committed |
//! | `pay.after_commit` | attempt committed, answer not sent, platform not called |
//! | `query.in_tx` | a query's answer applied (or its next query scheduled), not committed; the order's row lock held |
//! | `expiry.in_tx` | an expired order's payment queried or closed at the platform and the result written, not committed |

#[cfg(feature = "fault-injection")]
pub use armed::{arm, arm_from_env, crash_point, fires};

/// Does nothing: this build has no crash points.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn crash_point(_name: &'static str) {}

/// Never: this build has no crash points.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub const fn fires(_name: &'static str) -> bool {
    false
}

/// Says, once at start, that `CRASH_POINTS` is ignored by this build when it is set.
#[cfg(not(feature = "fault-injection"))]
pub fn arm_from_env() -> anyhow::Result<()> {
    if std::env::var_os(crate::env::CRASH_POINTS).is_some() {
        tracing::warn!(
            "CRASH_POINTS is set but ignored: this build has no crash points \
             (only builds with the fault-injection feature have them)"
        );
    }
    Ok(())
}

#[cfg(feature = "fault-injection")]
mod armed {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    /// Arms the crash points from `CRASH_POINTS` and `CRASH_SEED`, when set. Call once, from `main`.
    pub fn arm_from_env() -> anyhow::Result<()> {
        let Ok(spec) = std::env::var(crate::env::CRASH_POINTS) else {
            return Ok(());
        };
        let seed = match std::env::var(crate::env::CRASH_SEED) {
            Ok(text) => text
                .parse()
                .map_err(|_| anyhow::anyhow!("CRASH_SEED must be a whole number, got {text:?}"))?,
            Err(_) => 0,
        };
        arm(&spec, seed)
    }

    struct CrashPoints {
        odds: HashMap<String, f64>,
        rng: Mutex<StdRng>,
    }

    static CRASH_POINTS: OnceLock<CrashPoints> = OnceLock::new();

    /// Arms the crash points described by `spec` (`name=probability,...`). Call once, from `main`.
    pub fn arm(spec: &str, seed: u64) -> anyhow::Result<()> {
        let mut odds = HashMap::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, probability) = entry.split_once('=').ok_or_else(|| {
                anyhow::anyhow!("CRASH_POINTS entry {entry:?} is not name=probability")
            })?;
            let probability: f64 = probability.parse()?;
            anyhow::ensure!(
                (0.0..=1.0).contains(&probability),
                "probability of {name} must be in 0..=1"
            );
            odds.insert(name.to_owned(), probability);
        }
        tracing::warn!(
            ?odds,
            seed,
            "crash points armed: this process will abort on purpose"
        );
        CRASH_POINTS
            .set(CrashPoints {
                odds,
                rng: Mutex::new(StdRng::seed_from_u64(seed)),
            })
            .map_err(|_| anyhow::anyhow!("crash points armed twice"))
    }

    /// Aborts the process here with the armed probability; does nothing when unarmed.
    pub fn crash_point(name: &'static str) {
        if fires(name) {
            eprintln!("crash point {name} hit: aborting the process");
            std::process::abort();
        }
    }

    /// Whether the crash point `name` fires this time (the armed probability),
    /// for a caller that must start something before it aborts.
    pub fn fires(name: &'static str) -> bool {
        let Some(points) = CRASH_POINTS.get() else {
            return false;
        };
        let Some(&probability) = points.odds.get(name) else {
            return false;
        };
        let roll: f64 = points
            .rng
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .random();
        roll < probability
    }
}
