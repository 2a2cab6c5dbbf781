//! Latency percentiles and the figures of one measured run.

use crate::cpu::CpuUse;
use crate::postgres::WalUse;
use serde::Serialize;
use std::collections::BTreeMap;

/// Percentiles of a set of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

impl Latency {
    /// Summarises latencies given in microseconds (sorts them in place).
    pub fn from_micros(latencies: &mut [u64]) -> Self {
        if latencies.is_empty() {
            return Self::default();
        }
        latencies.sort_unstable();
        let ms = |us: u64| us as f64 / 1000.0;
        let sum: u128 = latencies.iter().map(|&us| u128::from(us)).sum();
        Self {
            p50_ms: ms(percentile(latencies, 50.0)),
            p99_ms: ms(percentile(latencies, 99.0)),
            mean_ms: sum as f64 / latencies.len() as f64 / 1000.0,
            max_ms: ms(latencies[latencies.len() - 1]),
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
#[derive(Debug, Clone, Default, Serialize)]
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
    /// The WAL it wrote (steady part of the window).
    pub wal: Option<WalUse>,
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

    /// Per successful operation: (WAL bytes, WAL syncs), over the WAL window.
    pub fn wal_per_op(&self) -> Option<(f64, f64)> {
        let wal = self.wal.as_ref()?;
        let ops = self.rate * wal.window_s;
        (ops > 0.0).then(|| (wal.bytes / ops, wal.syncs / ops))
    }

    /// One progress line.
    pub fn line(&self, label: &str, unit: &str) -> String {
        let noise = self
            .cpu
            .as_ref()
            .map(|cpu| format!("  [others used {:.2} cores]", cpu.other_cores))
            .unwrap_or_default();
        let errors = if self.errors == 0 {
            "0 errors".to_owned()
        } else {
            format!("{} ERRORS {:?}", self.errors, self.error_kinds)
        };
        format!(
            "    {label:<26} {:>3} clients: {:>9.1} {unit}  p50 {:>7.2} ms  p99 {:>7.2} ms  {errors}{noise}",
            self.clients, self.rate, self.latency.p50_ms, self.latency.p99_ms
        )
    }
}

/// The run at `clients` in a series.
pub fn at(series: &[Run], clients: usize) -> Option<&Run> {
    series.iter().find(|run| run.clients == clients)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 50.0), 50);
        assert_eq!(percentile(&sorted, 99.0), 99);
        assert_eq!(percentile(&sorted, 100.0), 100);
        assert_eq!(percentile(&[7], 99.0), 7);
    }

    #[test]
    fn latency_is_reported_in_milliseconds() {
        let mut micros = vec![3000, 1000, 2000];
        let latency = Latency::from_micros(&mut micros);
        assert_eq!(latency.p50_ms, 2.0);
        assert_eq!(latency.max_ms, 3.0);
        assert_eq!(latency.mean_ms, 2.0);
    }
}
