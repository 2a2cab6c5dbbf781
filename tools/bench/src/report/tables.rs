//! The ratios the report compares, and the tables: the backend next to
//! pgbench and Redis with the targets, where the CPU went, the run's facts.
//!
//! A ratio is the median of the rounds' ratios, each from two runs made next
//! to each other, so a noisy minute moves one round, not the figure. A target
//! a run did not measure is "not measured", never met, so a partial run
//! cannot pass for a full one.

use super::Results;
use crate::stats::{NOISY_CORES, RoundRatio, Run, at, quiet_median, round_ratios, rounds_at};
use std::fmt::Write as _;

/// `"0.82x (rounds 0.80, 0.85, 0.47*)"`; `*` marks a noisy round, and the
/// rounds are left out when there was one.
pub(super) fn ratio_cell(ratios: &[RoundRatio]) -> String {
    let Some(median) = quiet_median(ratios) else {
        return "-".into();
    };
    let mut out = format!("{median:.2}x");
    if ratios.len() > 1 {
        let list: Vec<String> = ratios
            .iter()
            .map(|r| format!("{:.2}{}", r.ratio, if r.noisy { "*" } else { "" }))
            .collect();
        let _ = write!(out, " (rounds {})", list.join(", "));
    }
    out
}

/// Round by round, the faster of two series that ran next to each other (the
/// i-th run of each at a count in the same round); `a` alone where `b` did not run.
fn faster_of(a: &[Run], b: &[Run]) -> Vec<Run> {
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
fn in_series(a: &[Run], b: &[Run]) -> Vec<Run> {
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

/// New callbacks: at least this share of pgbench doing the same work in one round trip.
const NEW_VS_LIMIT: f64 = 0.8;
/// Duplicates: at least this share of pgbench's one-statement duplicate path.
const DUP_VS_LIMIT: f64 = 0.8;
/// Duplicates: at least this many times the new-callback rate.
const DUP_VS_NEW: f64 = 3.0;
/// The pay: at least this share of Redis's `GETDEL` then pgbench's attempt and hold.
const PAY_VS_LIMIT: f64 = 0.6;
/// The backend's peak resident memory, MiB.
pub(super) const PEAK_RSS_MIB: f64 = 64.0;

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

    /// The limit of a pay: Redis's `GETDEL` then pgbench on the attempt and
    /// hold in one statement, one after the other.
    pub fn pay_limit(&self) -> Vec<Run> {
        in_series(&self.redis_getdel, &self.pay_pgbench)
    }

    /// Every client count any step measured, in the order first seen.
    fn all_counts(&self) -> Vec<usize> {
        let mut counts = self.clients.clone();
        for run in self.dup_backend.iter().chain(&self.new_backend) {
            if !counts.contains(&run.clients) {
                counts.push(run.clients);
            }
        }
        counts
    }

    /// The backend next to what it is held to, one row per step and client
    /// count, with the ratio and its target.
    pub(super) fn comparison_table(&self) -> String {
        let mut out = String::from(
            "| step | clients | held to, per s | p50 ms | p99 ms | backend per s | p50 ms | p99 ms | errors | backend / held to | target |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        );
        let (new_limit, dup_limit, pay_limit) =
            (self.new_limit(), self.dup_limit(), self.pay_limit());
        for (step, tool, ours, target) in [
            (
                "new callback vs same work in one round trip",
                &new_limit,
                &self.new_backend,
                Some(NEW_VS_LIMIT),
            ),
            (
                "new callback vs general path, a round trip per statement",
                &self.new_pgbench_statements,
                &self.new_backend,
                None,
            ),
            (
                "duplicate vs one statement",
                &dup_limit,
                &self.dup_backend,
                Some(DUP_VS_LIMIT),
            ),
            (
                "duplicate vs new callback, both through the backend",
                &self.new_backend,
                &self.dup_backend,
                Some(DUP_VS_NEW),
            ),
            (
                "pay (token issued before) vs Redis GETDEL then pgbench attempt + hold",
                &pay_limit,
                &self.pay_alone,
                Some(PAY_VS_LIMIT),
            ),
        ] {
            for clients in self.all_counts() {
                let (Some(t), Some(o)) = (at(tool, clients), at(ours, clients)) else {
                    continue;
                };
                let ratios = round_ratios(ours, tool, clients);
                let verdict = match quiet_median(&ratios) {
                    Some(ratio) if target.is_some_and(|min| ratio < min) => "**missed**",
                    Some(_) => "met",
                    None => "not measured",
                };
                let target = target.map_or("-".into(), |min| format!(">= {min:.2}x: {verdict}"));
                // A limit made of two tools' runs has no latency of its own.
                let tool_ms = if t.latency.p99_ms > 0.0 {
                    format!("{:.2} | {:.2}", t.latency.p50_ms, t.latency.p99_ms)
                } else {
                    "- | -".into()
                };
                let _ = writeln!(
                    out,
                    "| {step} | {clients} | {:.0} | {tool_ms} | {:.0} | {:.2} | {:.2} | {} | {} | {target} |",
                    t.rate,
                    o.rate,
                    o.latency.p50_ms,
                    o.latency.p99_ms,
                    o.errors,
                    ratio_cell(&ratios),
                );
            }
        }
        out
    }

    /// Every run that has CPU figures, labelled with its step, count and round.
    fn cpu_runs(&self) -> Vec<(String, &Run)> {
        let mut out = Vec::new();
        for (label, series) in [
            ("pgbench new", &self.new_pgbench),
            ("pgbench pipelined new", &self.new_pgbench_pipelined),
            ("backend new", &self.new_backend),
            ("pgbench duplicate", &self.dup_pgbench),
            ("backend duplicate", &self.dup_backend),
            ("backend pay alone", &self.pay_alone),
            ("pgbench pay attempt + hold", &self.pay_pgbench),
        ] {
            for (i, run) in series.iter().enumerate().filter(|(_, r)| r.cpu.is_some()) {
                let same = |r: &&Run| r.clients == run.clients;
                let round = series[..=i].iter().filter(same).count();
                let suffix = if series.iter().filter(same).count() > 1 {
                    format!(" #{round}")
                } else {
                    String::new()
                };
                out.push((format!("{label} @{}{suffix}", run.clients), run));
            }
        }
        out
    }

    /// Cores busy over the steady part of each window, by whose, and the CPU
    /// per successful operation.
    pub(super) fn cpu_table(&self) -> String {
        let mut out = String::from(
            "| run | ops/s | client | backend | PostgreSQL | Redis | platform | other + steal | idle | client µs/op | backend µs/op | PostgreSQL µs/op | all ours µs/op |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for (label, run) in self.cpu_runs() {
            let Some(c) = run.cpu else { continue };
            let (client, backend, pg) = (c.client_cores, c.backend_cores, c.postgres_cores);
            let cores = [
                client,
                backend,
                pg,
                c.redis_cores,
                c.platform_cores,
                c.noise_cores(),
            ];
            let per_op = [client, backend, pg, c.ours_cores()];
            let idle = [c.idle_cores()];
            let cores = cores.iter().chain(&idle).map(|c| format!("{c:.2}"));
            let per_op = per_op.map(|c| format!("{:.0}", run.cpu_us_per_op(c)));
            let cells: Vec<String> = cores.chain(per_op).collect();
            let _ = writeln!(out, "| {label} | {:.0} | {} |", run.rate, cells.join(" | "));
        }
        out
    }

    /// Every run of the callback and pay steps that has CPU figures.
    pub(super) fn measured_runs(&self) -> Vec<&Run> {
        self.cpu_runs().into_iter().map(|(_, run)| run).collect()
    }

    /// One line on how busy the rest of the machine was during `runs`.
    pub(super) fn noise_summary(&self, runs: &[&Run]) -> String {
        let noise: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.cpu)
            .map(|c| c.noise_cores())
            .collect();
        if noise.is_empty() {
            return "not measured".into();
        }
        let mean = noise.iter().sum::<f64>() / noise.len() as f64;
        let max = noise.iter().copied().fold(0.0, f64::max);
        let noisy = runs.iter().filter(|run| run.noisy()).count();
        format!(
            "other processes (and steal) used {mean:.2} of {} cores on average during the measured \
             windows, {max:.2} at most; {noisy} of {} runs were noisy (over {NOISY_CORES} cores)",
            self.cores,
            noise.len()
        )
    }

    /// The facts of the run as (key, value) rows.
    pub(super) fn provenance_rows(&self) -> Vec<(&'static str, String)> {
        let runs = format!(
            "{} s each after a discarded {} s warm-up per step; clients {:?}; {} round(s) of \
             pgbench then backend per count (figures: the median round)",
            self.duration_s,
            self.warmup_s,
            self.clients,
            self.rounds.max(1)
        );
        let data = format!(
            "{} accounts; one PENDING order per new callback, in a database per side (pgbench / backend)",
            self.accounts
        );
        let signing = self.signing_us.map_or("-".into(), |us| {
            format!("{us:.1} µs, done before the timed window")
        });
        vec![
            ("date (UTC)", self.started_at.clone()),
            ("commit", self.commit.clone()),
            ("CPU", format!("{} x {}", self.cores, self.cpu_model)),
            ("PostgreSQL", self.postgres.clone()),
            ("Redis", self.redis_version.clone()),
            ("runs", runs),
            (
                "backend pool (`DATABASE_MAX_CONNECTIONS`)",
                self.db_max_connections.clone(),
            ),
            ("data", data),
            ("signing a callback", signing),
            ("whole benchmark", format!("{:.0} s", self.elapsed_s)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(clients: usize, rate: f64) -> Run {
        Run {
            clients,
            ok: 100,
            rate,
            ..Run::default()
        }
    }

    /// The ratio and target cells of the table's rows that start with `step`.
    fn verdicts(results: &Results, step: &str) -> Vec<String> {
        let table = results.comparison_table();
        let rows = table
            .lines()
            .filter(|row| row.starts_with(&format!("| {step}")));
        rows.map(|row| row.split(" | ").skip(9).collect::<Vec<_>>().join(" | "))
            .collect()
    }

    #[test]
    fn the_limit_is_the_faster_one_round_trip_script_round_by_round() {
        let results = Results {
            clients: vec![32, 80],
            new_pgbench: vec![run(32, 1000.0), run(32, 1000.0), run(80, 1000.0)],
            new_pgbench_pipelined: vec![run(32, 1200.0), run(32, 900.0)],
            new_backend: vec![run(32, 960.0), run(32, 950.0), run(80, 700.0)],
            ..Results::default()
        };
        assert_eq!(
            verdicts(&results, "new callback vs same"),
            [
                "0.80x (rounds 0.80, 0.95) | >= 0.80x: met |",
                "0.70x | >= 0.80x: **missed** |"
            ],
            "round 1 against the pipeline, round 2 against the statement"
        );
        assert_eq!(
            verdicts(&results, "duplicate vs new"),
            Vec::<String>::new(),
            "no duplicates, no row"
        );
    }

    #[test]
    fn the_pay_limit_is_redis_then_postgres_one_after_the_other() {
        let results = Results {
            clients: vec![8],
            redis_getdel: vec![run(8, 100_000.0)],
            pay_pgbench: vec![run(8, 4_000.0)],
            pay_alone: vec![run(8, 2_000.0)],
            ..Results::default()
        };
        let limit = 1.0 / (1.0 / 100_000.0 + 1.0 / 4_000.0);
        assert!((results.pay_limit()[0].rate - limit).abs() < 1e-6);
        assert_eq!(
            verdicts(&results, "pay"),
            ["0.52x | >= 0.60x: **missed** |"]
        );
    }
}
