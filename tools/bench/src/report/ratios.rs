//! The ratios the report compares: the backend's rate over the tool's, and
//! duplicates over new callbacks, taken round by round.
//!
//! A ratio is the median of the rounds' ratios, each from two runs made next
//! to each other, so a noisy minute moves one round, not the figure.

use super::Results;
use crate::stats::{RoundRatio, Run, quiet_median, round_ratios, rounds_at};

/// `a`'s rate over `b`'s, when both ran and `b` did anything.
pub(super) fn ratio(a: Option<&Run>, b: Option<&Run>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b.rate > 0.0 => Some(a.rate / b.rate),
        _ => None,
    }
}

/// `" (rounds 0.80, 0.85, 0.47*)"` when there was more than one round; `*` marks a noisy one.
pub(super) fn spread(ratios: &[RoundRatio]) -> String {
    if ratios.len() < 2 {
        return String::new();
    }
    let list: Vec<String> = ratios
        .iter()
        .map(|r| format!("{:.2}{}", r.ratio, if r.noisy { "*" } else { "" }))
        .collect();
    format!(" (rounds {})", list.join(", "))
}

/// Round by round, the faster of two series that ran next to each other (the
/// i-th run of each at a count in the same round); `a` alone where `b` did not run.
pub(super) fn faster_of(a: &[Run], b: &[Run]) -> Vec<Run> {
    let mut counts: Vec<usize> = a.iter().map(|r| r.clients).collect();
    counts.dedup();
    let mut out = Vec::new();
    for clients in counts {
        let others = rounds_at(b, clients);
        for (i, run) in rounds_at(a, clients).into_iter().enumerate() {
            let pick = match others.get(i) {
                Some(other) if other.rate > run.rate => *other,
                _ => run,
            };
            out.push(pick.clone());
        }
    }
    out
}

/// Doing `a`'s work then `b`'s, one after the other, at each count: the rate
/// `1 / (1/a + 1/b)` (one run per count; latency not combined).
pub(super) fn in_series(a: &[Run], b: &[Run]) -> Vec<Run> {
    a.iter()
        .filter_map(|x| {
            let y = b.iter().find(|y| y.clients == x.clients)?;
            (x.rate > 0.0 && y.rate > 0.0).then(|| Run {
                clients: x.clients,
                ok: x.ok.min(y.ok),
                rate: 1.0 / (1.0 / x.rate + 1.0 / y.rate),
                ..Run::default()
            })
        })
        .collect()
}

impl Results {
    /// The one-round-trip limit of a new callback, round by round: the faster
    /// of pgbench on the handler's one statement and on the general path's
    /// statements pipelined.
    pub fn new_limit(&self) -> Vec<Run> {
        faster_of(&self.new_pgbench, &self.new_pgbench_pipelined)
    }

    /// The one-statement limit of a duplicate, round by round: the faster of
    /// pgbench on the handler's statement and on the bare lookup.
    pub fn dup_limit(&self) -> Vec<Run> {
        faster_of(&self.dup_pgbench, &self.dup_pgbench_lookup)
    }

    /// The limit of a pay: Redis's GETDEL then pgbench on the attempt and hold
    /// in one statement, one after the other.
    pub fn pay_limit(&self) -> Vec<Run> {
        in_series(&self.redis_getdel, &self.pay_pgbench)
    }

    /// The backend's pay runs held to the pay limit at `clients`: the pay
    /// alone when it ran at that count, else the pay-now pairs.
    pub fn pay_measured(&self, clients: usize) -> &[Run] {
        if self.pay_alone_at(clients) {
            &self.pay_alone
        } else {
            &self.pay
        }
    }

    /// True when the pay alone ran at `clients` (and so is what [`Results::pay_ratio`] uses).
    pub fn pay_alone_at(&self, clients: usize) -> bool {
        self.pay_alone.iter().any(|r| r.clients == clients)
    }

    /// The backend's pay / the pay limit at `clients`: the pay alone when it
    /// ran at that count, else the pay-now pairs.
    pub fn pay_ratio(&self, clients: usize) -> Option<f64> {
        quiet_median(&round_ratios(
            self.pay_measured(clients),
            &self.pay_limit(),
            clients,
        ))
    }

    /// Every client count any step measured, in the order first seen.
    pub fn all_counts(&self) -> Vec<usize> {
        let mut counts = self.settings.clients.clone();
        for run in self.dup_backend.iter().chain(&self.new_backend) {
            if !counts.contains(&run.clients) {
                counts.push(run.clients);
            }
        }
        counts
    }

    /// Backend / the one-round-trip limit for new callbacks at `clients`, per round.
    pub fn new_ratios(&self, clients: usize) -> Vec<RoundRatio> {
        round_ratios(&self.new_backend, &self.new_limit(), clients)
    }

    /// Backend / pgbench on the general path's statements, one round trip each, per round.
    pub fn new_vs_statements_ratios(&self, clients: usize) -> Vec<RoundRatio> {
        round_ratios(&self.new_backend, &self.new_pgbench_statements, clients)
    }

    /// Backend / pgbench rate for new callbacks at `clients` (median of the rounds).
    pub fn new_ratio(&self, clients: usize) -> Option<f64> {
        quiet_median(&self.new_ratios(clients))
    }

    /// Backend / the one-statement limit for duplicates at `clients`, per round.
    pub fn dup_ratios(&self, clients: usize) -> Vec<RoundRatio> {
        round_ratios(&self.dup_backend, &self.dup_limit(), clients)
    }

    /// Backend / pgbench rate for duplicates at `clients` (median of the rounds).
    pub fn dup_ratio(&self, clients: usize) -> Option<f64> {
        quiet_median(&self.dup_ratios(clients))
    }

    /// Duplicate rate / new-callback rate through the backend at `clients`, per round.
    pub fn dup_vs_new_ratios(&self, clients: usize) -> Vec<RoundRatio> {
        round_ratios(&self.dup_backend, &self.new_backend, clients)
    }

    /// Duplicate rate / new-callback rate through the backend at `clients` (median).
    pub fn dup_vs_new(&self, clients: usize) -> Option<f64> {
        quiet_median(&self.dup_vs_new_ratios(clients))
    }
}
