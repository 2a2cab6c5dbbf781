//! Latency percentiles and the figures of one measured run.

use crate::cpu::CpuUse;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Percentiles of a set of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

impl Latency {
    /// Summarises latencies given in microseconds (sorts them in place).
    pub fn from_micros(latencies: &mut [u64]) -> Self {
        latencies.sort_unstable();
        let ms = |p| percentile(latencies, p) as f64 / 1000.0;
        Self {
            p50_ms: ms(50.0),
            p99_ms: ms(99.0),
        }
    }
}

/// The nearest-rank percentile of sorted values (`p` in 0..=100).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One measured run at one concurrency.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Run {
    /// Concurrent clients.
    pub clients: usize,
    /// Successful operations (transactions, answers with the expected status).
    pub ok: u64,
    /// Everything else: failed transactions, aborted clients, unexpected statuses, transport errors.
    pub errors: u64,
    /// The errors by kind, for the report.
    pub error_kinds: BTreeMap<String, u64>,
    /// Successful operations per second.
    pub rate: f64,
    /// Latency of the successful operations.
    pub latency: Latency,
    /// Where the CPU went while it ran (steady part of the window).
    pub cpu: Option<CpuUse>,
}

impl Run {
    /// CPU microseconds per successful operation spent by one share (in cores).
    pub fn cpu_us_per_op(&self, cores: f64) -> f64 {
        if self.rate > 0.0 {
            cores / self.rate * 1e6
        } else {
            0.0
        }
    }

    /// One progress line.
    pub fn line(&self, label: &str, unit: &str) -> String {
        let noise = self
            .cpu
            .map(|cpu| format!("  [others used {:.2} cores]", cpu.noise_cores()))
            .unwrap_or_default();
        let errors = if self.errors == 0 {
            "0 errors".to_owned()
        } else {
            format!("{} ERRORS {:?}", self.errors, self.error_kinds)
        };
        format!(
            "    {label:<30} {:>3} clients: {:>9.1} {unit}  p50 {:>7.2} ms  p99 {:>7.2} ms  {errors}{noise}",
            self.clients, self.rate, self.latency.p50_ms, self.latency.p99_ms
        )
    }
}

/// Other processes (with steal) busier than this, in cores, during a run make it
/// noisy: left out of medians when a quiet round exists.
pub const NOISY_CORES: f64 = 0.25;

impl Run {
    /// True when other processes took more than [`NOISY_CORES`] during the run.
    pub fn noisy(&self) -> bool {
        self.cpu.is_some_and(|cpu| cpu.noise_cores() > NOISY_CORES)
    }
}

/// One round's ratio, and whether either run of it was noisy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundRatio {
    /// Rate over rate.
    pub ratio: f64,
    /// Either run was [`Run::noisy`].
    pub noisy: bool,
}

/// The runs at `clients` in a series, in the order they ran (one per round).
pub fn rounds_at(series: &[Run], clients: usize) -> Vec<&Run> {
    series.iter().filter(|run| run.clients == clients).collect()
}

/// The median run (by rate) at `clients` in a series, among the quiet rounds
/// when there is one; with one round, that run.
pub fn at(series: &[Run], clients: usize) -> Option<&Run> {
    let all = rounds_at(series, clients);
    let quiet: Vec<&Run> = all.iter().copied().filter(|r| !r.noisy()).collect();
    let mut runs = if quiet.is_empty() { all } else { quiet };
    runs.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    runs.get(runs.len().checked_sub(1)? / 2).copied()
}

/// Rate of `a` over rate of `b` at `clients`, round by round (the i-th run of
/// each ran next to each other).
pub fn round_ratios(a: &[Run], b: &[Run], clients: usize) -> Vec<RoundRatio> {
    rounds_at(a, clients)
        .iter()
        .zip(rounds_at(b, clients))
        .filter(|(_, b)| b.rate > 0.0)
        .map(|(a, b)| RoundRatio {
            ratio: a.rate / b.rate,
            noisy: a.noisy() || b.noisy(),
        })
        .collect()
}

/// The median ratio of the quiet rounds, or of all when none was quiet.
pub fn quiet_median(ratios: &[RoundRatio]) -> Option<f64> {
    let quiet: Vec<f64> = ratios
        .iter()
        .filter(|r| !r.noisy)
        .map(|r| r.ratio)
        .collect();
    if quiet.is_empty() {
        median(&ratios.iter().map(|r| r.ratio).collect::<Vec<_>>())
    } else {
        median(&quiet)
    }
}

/// The median of some values (the lower one of the middle two).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len().checked_sub(1)? / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank_in_milliseconds() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 50.0), 50);
        assert_eq!(percentile(&sorted, 99.0), 99);
        assert_eq!(percentile(&[7], 99.0), 7);
        let latency = Latency::from_micros(&mut [3000, 1000, 2000]);
        assert_eq!((latency.p50_ms, latency.p99_ms), (2.0, 3.0));
    }

    #[test]
    fn the_median_round_represents_a_client_count() {
        let run = |clients, rate| Run {
            clients,
            rate,
            ..Run::default()
        };
        let series = vec![run(32, 3.0), run(32, 1.0), run(8, 9.0), run(32, 2.0)];
        assert_eq!(at(&series, 32).map(|r| r.rate), Some(2.0));
        let other = vec![run(32, 1.0), run(32, 1.0), run(32, 4.0)];
        let ratios: Vec<f64> = round_ratios(&series, &other, 32)
            .iter()
            .map(|r| r.ratio)
            .collect();
        assert_eq!(ratios, vec![3.0, 1.0, 0.5]);
        assert_eq!(median(&ratios), Some(1.0));
    }

    #[test]
    fn noisy_rounds_are_left_out_of_the_median_when_a_quiet_one_exists() {
        let r = |ratio, noisy| RoundRatio { ratio, noisy };
        assert_eq!(
            quiet_median(&[r(0.9, false), r(0.4, true), r(0.8, false)]),
            Some(0.8)
        );
        assert_eq!(quiet_median(&[r(0.4, true)]), Some(0.4));
    }
}
