//! Crash points for fault-injection tests, inert unless `CRASH_POINTS` is set.
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
//! | `callback.in_tx` | ledger row, status change and deduction written, not committed |
//! | `callback.after_commit` | committed, answer not sent |
//! | `pay.after_getdel` | token consumed in Redis, no attempt row yet |
//! | `pay.after_commit` | attempt committed, answer not sent, platform not called |

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

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
    let Some(points) = CRASH_POINTS.get() else {
        return;
    };
    let Some(&probability) = points.odds.get(name) else {
        return;
    };
    let roll: f64 = points
        .rng
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .random();
    if roll < probability {
        eprintln!("crash point {name} hit: aborting the process");
        std::process::abort();
    }
}
