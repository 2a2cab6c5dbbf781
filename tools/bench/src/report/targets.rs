//! The targets of issue 15 and how a run is judged against them: new
//! callbacks and duplicates near the database doing the same work in one round
//! trip, duplicates at least three times as fast as new callbacks, pay now near
//! Redis plus PostgreSQL, p99, errors, page size and memory.
//!
//! A target that a run did not measure is "not measured", never met, so a
//! partial run cannot pass for a full one.

use super::Results;
use super::ratios::spread;
use crate::stats::{Run, at};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Targets of issue 15.
pub mod limits {
    /// New callbacks: at least this share of pgbench doing the same work in one
    /// round trip (the handler's one statement, or the general path pipelined).
    pub const NEW_VS_PGBENCH: f64 = 0.8;
    /// Duplicates: at least this share of pgbench's one-statement duplicate path.
    pub const DUP_VS_PGBENCH: f64 = 0.8;
    /// Duplicates: at least this many times the new-callback rate.
    pub const DUP_VS_NEW: f64 = 3.0;
    /// Pay now: at least this share of Redis's GETDEL then pgbench's attempt and hold.
    pub const PAY_VS_LIMIT: f64 = 0.6;
    /// p99 at 32 clients and in a 100-way duplicate storm, ms.
    pub const P99_MS: f64 = 25.0;
    /// The page's .wasm, gzip, KiB.
    pub const WASM_GZIP_KIB: f64 = 150.0;
    /// The backend's peak resident memory, MiB.
    pub const PEAK_RSS_MIB: f64 = 64.0;
}

/// One target and how the run did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Target {
    /// What is held to a limit.
    pub what: String,
    /// The limit.
    pub wanted: String,
    /// The measured value.
    pub measured: String,
    /// `None` when not measured in this run.
    pub met: Option<bool>,
}

/// The verdict as the report's last column shows it.
pub(super) fn mark(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "not measured",
    }
}

impl Results {
    /// The targets of issue 15, judged.
    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        let all_at = |counts: &[usize],
                      f: &dyn Fn(usize) -> Option<f64>,
                      min: f64|
         -> (String, Option<bool>) {
            let values: Vec<(usize, f64)> = counts
                .iter()
                .filter_map(|&c| f(c).map(|r| (c, r)))
                .collect();
            if values.is_empty() {
                return ("-".into(), None);
            }
            let text = values
                .iter()
                .map(|(c, r)| format!("{r:.3}x@{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            (text, Some(values.iter().all(|(_, r)| *r >= min)))
        };
        for &clients in &self.settings.clients {
            let r = self.new_ratio(clients);
            out.push(Target {
                what: format!(
                    "new callbacks / pgbench, same work in one round trip, {clients} clients"
                ),
                wanted: format!(">= {:.2}x", limits::NEW_VS_PGBENCH),
                measured: r.map_or("-".into(), |r| {
                    format!("{r:.3}x{}", spread(&self.new_ratios(clients)))
                }),
                met: r.map(|r| r >= limits::NEW_VS_PGBENCH),
            });
        }
        let counts = self.all_counts();
        let all = |f: &dyn Fn(usize) -> Option<f64>, min: f64| all_at(&counts, f, min);
        let (measured, met) = all(&|c| self.dup_ratio(c), limits::DUP_VS_PGBENCH);
        out.push(Target {
            what: "duplicates / pgbench one-statement duplicate path".into(),
            wanted: format!(">= {:.1}x at every count", limits::DUP_VS_PGBENCH),
            measured,
            met,
        });
        let (measured, met) = all(&|c| self.dup_vs_new(c), limits::DUP_VS_NEW);
        out.push(Target {
            what: "duplicates / new callbacks (backend)".into(),
            wanted: format!(">= {:.1}x at every count", limits::DUP_VS_NEW),
            measured,
            met,
        });
        let (measured, met) = all_at(
            &self.settings.clients,
            &|c| self.pay_ratio(c),
            limits::PAY_VS_LIMIT,
        );
        let alone = self
            .settings
            .clients
            .iter()
            .filter(|&&c| self.pay_alone_at(c))
            .count();
        let pay_what = if alone == 0 {
            "token + pay pairs"
        } else if alone == self.settings.clients.len() {
            "pay alone, token issued before"
        } else {
            "pay alone, token issued before, where measured; else token + pay pairs"
        };
        out.push(Target {
            what: format!("pay now ({pay_what}) / (Redis GETDEL then pgbench attempt + hold)"),
            wanted: format!(">= {:.1}x at every count", limits::PAY_VS_LIMIT),
            measured,
            met,
        });
        for (what, series, clients) in [
            ("p99, new callbacks, 32 clients", &self.new_backend, 32),
            ("p99, duplicate storm, 32 clients", &self.dup_backend, 32),
            ("p99, duplicate storm, 100 clients", &self.dup_backend, 100),
        ] {
            let run = at(series, clients);
            out.push(Target {
                what: what.into(),
                wanted: format!("<= {:.0} ms", limits::P99_MS),
                measured: run.map_or("-".into(), |r| format!("{:.1} ms", r.latency.p99_ms)),
                met: run.map(|r| r.latency.p99_ms <= limits::P99_MS),
            });
        }
        let backend_runs: Vec<&Run> = self
            .new_backend
            .iter()
            .chain(&self.dup_backend)
            .chain(&self.pay)
            .chain(&self.pay_alone)
            .collect();
        let errors: u64 = backend_runs.iter().map(|r| r.errors).sum();
        out.push(Target {
            what: "errors (any non-200/201/202, transport errors)".into(),
            wanted: "0".into(),
            measured: if backend_runs.is_empty() {
                "-".into()
            } else {
                format!("{errors} in {} runs", backend_runs.len())
            },
            met: (!backend_runs.is_empty()).then_some(errors == 0),
        });
        out.push(Target {
            what: "page .wasm, gzip -9".into(),
            wanted: format!("<= {:.0} KiB", limits::WASM_GZIP_KIB),
            measured: self.wasm.as_ref().map_or("-".into(), |w| {
                format!("{:.1} KiB", w.gzip_bytes as f64 / 1024.0)
            }),
            met: self
                .wasm
                .as_ref()
                .map(|w| w.gzip_bytes as f64 / 1024.0 <= limits::WASM_GZIP_KIB),
        });
        let peak = self.peak_rss_kib.iter().map(|(_, kib)| *kib).max();
        out.push(Target {
            what: "backend peak RSS (VmHWM) under load".into(),
            wanted: format!("<= {:.0} MiB", limits::PEAK_RSS_MIB),
            measured: peak.map_or("-".into(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0)),
            met: peak.map(|kib| kib as f64 / 1024.0 <= limits::PEAK_RSS_MIB),
        });
        out
    }

    /// The "Targets" section: one row per target, with its verdict.
    pub(super) fn targets_section(&self, w: &mut String) {
        let _ = writeln!(w, "## Targets\n");
        let _ = writeln!(w, "| target | wanted | measured | |\n|---|---|---|---|");
        for t in self.targets() {
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} |",
                t.what,
                t.wanted,
                t.measured,
                mark(t.met)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Settings;
    use crate::stats::Latency;

    fn run(clients: usize, rate: f64, p99_ms: f64) -> Run {
        Run {
            clients,
            ok: 100,
            rate,
            latency: Latency {
                p99_ms,
                ..Latency::default()
            },
            ..Run::default()
        }
    }

    #[test]
    fn targets_are_judged_from_ratios_of_the_same_run() {
        let results = Results {
            settings: Settings {
                clients: vec![32, 80],
                ..Settings::default()
            },
            new_pgbench: vec![run(32, 1000.0, 5.0), run(80, 1000.0, 5.0)],
            new_backend: vec![run(32, 900.0, 20.0), run(80, 700.0, 50.0)],
            ..Results::default()
        };
        let targets = results.targets();
        assert_eq!(targets[0].met, Some(true));
        assert_eq!(targets[1].met, Some(false));
        assert_eq!(targets[2].met, None, "duplicates were not measured");
    }

    #[test]
    fn the_limit_is_the_faster_of_the_one_round_trip_scripts_round_by_round() {
        let results = Results {
            settings: Settings {
                clients: vec![32],
                ..Settings::default()
            },
            new_pgbench: vec![run(32, 1000.0, 5.0), run(32, 1000.0, 5.0)],
            new_pgbench_pipelined: vec![run(32, 1200.0, 5.0), run(32, 900.0, 5.0)],
            new_backend: vec![run(32, 960.0, 20.0), run(32, 950.0, 20.0)],
            ..Results::default()
        };
        let ratios: Vec<f64> = results.new_ratios(32).iter().map(|r| r.ratio).collect();
        assert_eq!(
            ratios,
            vec![0.8, 0.95],
            "round 1 against the pipeline, round 2 against the statement"
        );
        assert_eq!(
            results.targets()[0].met,
            Some(true),
            "median of 0.8 and 0.95"
        );
    }

    #[test]
    fn the_pay_limit_is_redis_then_postgres_one_after_the_other() {
        let results = Results {
            settings: Settings {
                clients: vec![8],
                ..Settings::default()
            },
            redis_getdel: vec![run(8, 100_000.0, 0.1)],
            pay_pgbench: vec![run(8, 4_000.0, 2.0)],
            pay: vec![run(8, 2_000.0, 10.0)],
            ..Results::default()
        };
        let limit = results.pay_limit()[0].rate;
        assert!(
            (limit - 1.0 / (1.0 / 100_000.0 + 1.0 / 4_000.0)).abs() < 1e-6,
            "{limit}"
        );
        let ratio = results.pay_ratio(8).expect("measured");
        assert!((ratio - 2_000.0 / limit).abs() < 1e-9);
        let pay = results
            .targets()
            .into_iter()
            .find(|t| t.what.starts_with("pay now"))
            .expect("pay target");
        assert_eq!(pay.met, Some(false), "0.52x is under 0.6x");
        assert!(pay.what.contains("token + pay pairs"), "{}", pay.what);
    }

    #[test]
    fn the_pay_alone_is_held_to_the_pay_limit_over_the_pairs_when_measured() {
        let mut results = Results {
            settings: Settings {
                clients: vec![8, 32],
                ..Settings::default()
            },
            redis_getdel: vec![run(8, 100_000.0, 0.1), run(32, 100_000.0, 0.1)],
            pay_pgbench: vec![run(8, 4_000.0, 2.0), run(32, 4_000.0, 2.0)],
            pay: vec![run(8, 2_000.0, 10.0), run(32, 2_000.0, 10.0)],
            pay_alone: vec![run(8, 3_500.0, 5.0)],
            ..Results::default()
        };
        let limit = results.pay_limit()[0].rate;
        let alone = results.pay_ratio(8).expect("measured at 8");
        assert!((alone - 3_500.0 / limit).abs() < 1e-9, "the pay alone at 8");
        let pairs = results.pay_ratio(32).expect("measured at 32");
        assert!(
            (pairs - 2_000.0 / limit).abs() < 1e-9,
            "no pay alone at 32: the pairs"
        );
        let pay_target = |results: &Results| {
            results
                .targets()
                .into_iter()
                .find(|t| t.what.starts_with("pay now"))
                .expect("pay target")
        };
        let mixed = pay_target(&results);
        assert!(mixed.what.contains("where measured"), "{}", mixed.what);
        assert_eq!(mixed.met, Some(false), "0.52x at 32 is under 0.6x");

        results.pay_alone.push(run(32, 3_500.0, 5.0));
        let pay = pay_target(&results);
        assert_eq!(
            pay.what,
            "pay now (pay alone, token issued before) / (Redis GETDEL then pgbench attempt + hold)"
        );
        assert_eq!(pay.met, Some(true), "0.91x at both counts");
    }
}
