//! The ratios the report compares: the backend's rate over the tool's, and
//! duplicates over new callbacks, taken round by round.
//!
//! A ratio is the median of the rounds' ratios, each from two runs made next
//! to each other, so a noisy minute moves one round, not the figure.

use super::Results;
use crate::stats::{RoundRatio, Run, quiet_median, round_ratios};

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

impl Results {
    /// Backend / pgbench rate for new callbacks at `clients`, per round.
    pub fn new_ratios(&self, clients: usize) -> Vec<RoundRatio> {
        round_ratios(&self.new_backend, &self.new_pgbench, clients)
    }

    /// Backend / pgbench rate for new callbacks at `clients` (median of the rounds).
    pub fn new_ratio(&self, clients: usize) -> Option<f64> {
        quiet_median(&self.new_ratios(clients))
    }

    /// Backend / pgbench rate for duplicates at `clients`, per round.
    pub fn dup_ratios(&self, clients: usize) -> Vec<RoundRatio> {
        round_ratios(&self.dup_backend, &self.dup_pgbench, clients)
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
