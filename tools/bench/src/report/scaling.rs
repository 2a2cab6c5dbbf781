//! The scale-out figures (`--steps scale`) and the body of `docs/SCALING.md`'s
//! `## Measured` section: new callbacks straight to one backend and through
//! HAProxy with 1, 2 and 3 backends, next to pgbench on the same SQL in the
//! same run. The reading written between [`READING_BEGIN`] and [`READING_END`]
//! inside the section is kept.

use super::Results;
use super::tables::ratio_cell;
use crate::stats::{Run, at, round_ratios};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Start of the hand-written reading the scale-out step keeps.
pub const READING_BEGIN: &str = "<!-- analysis: kept when the benchmark rewrites this file -->";
/// End of the hand-written reading.
pub const READING_END: &str = "<!-- end of analysis -->";

/// The runs through HAProxy with one number of backends.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Balanced {
    /// Backend instances behind HAProxy.
    pub instances: usize,
    /// One run per round.
    pub runs: Vec<Run>,
}

/// What the scale-out step measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ScaleOut {
    /// Concurrent clients of every run.
    pub clients: usize,
    /// pgbench on `NEW_CHARGE_SQL`, one run per round.
    pub pgbench: Vec<Run>,
    /// New callbacks straight to one backend, one run per round.
    pub direct: Vec<Run>,
    /// New callbacks through HAProxy, per number of backends.
    pub balanced: Vec<Balanced>,
}

impl ScaleOut {
    /// Every series with its label, pgbench's first.
    fn rows(&self) -> Vec<(String, &[Run])> {
        let mut rows = vec![
            (
                "pgbench on `NEW_CHARGE_SQL` (the limit), tps".to_owned(),
                &self.pgbench[..],
            ),
            ("straight to 1 backend".to_owned(), &self.direct[..]),
        ];
        for b in &self.balanced {
            let plural = if b.instances == 1 { "" } else { "s" };
            rows.push((
                format!("HAProxy + {} backend{plural}", b.instances),
                &b.runs[..],
            ));
        }
        rows
    }

    /// The figures table: rate, latency, ratios to pgbench and to the fewest
    /// backends through HAProxy, and where the CPU went.
    pub fn table(&self) -> String {
        let base = self.balanced.first();
        let mut out = format!(
            "| run ({} clients) | per s | p50 ms | p99 ms | errors | / pgbench | / HAProxy + {} | cores: backends | HAProxy | PostgreSQL | load generator | idle | HAProxy µs/req | all ours µs/req |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            self.clients,
            base.map_or(1, |b| b.instances)
        );
        for (label, series) in self.rows() {
            let Some(run) = at(series, self.clients) else {
                continue;
            };
            let ratio = |to: &[Run]| ratio_cell(&round_ratios(series, to, self.clients));
            let c = run.cpu.unwrap_or_default();
            let (backends, balancer, pg) = (c.backend_cores, c.balancer_cores, c.postgres_cores);
            let cores = [backends, balancer, pg, c.client_cores, c.idle_cores()];
            let cores = cores.map(|c| format!("{c:.2}"));
            let per_req = [c.balancer_cores, c.ours_cores() + c.balancer_cores];
            let per_req = per_req.map(|c| format!("{:.0}", run.cpu_us_per_op(c)));
            let _ = writeln!(
                out,
                "| {label} | {:.0} | {:.2} | {:.2} | {} | {} | {} | {} | {} |",
                run.rate,
                run.latency.p50_ms,
                run.latency.p99_ms,
                run.errors,
                ratio(&self.pgbench),
                base.map_or("-".into(), |b| ratio(&b.runs)),
                cores.join(" | "),
                per_req.join(" | "),
            );
        }
        out
    }
}

impl Results {
    /// The body of `docs/SCALING.md`'s `## Measured` section, keeping the
    /// reading written inside `old`, the section it replaces.
    pub fn scaling_markdown(&self, old: &str) -> String {
        let mut md = String::new();
        let w = &mut md;
        let Some(scale) = &self.scale else {
            return "Not measured yet: `bash scripts/bench.sh --steps scale`.\n".into();
        };
        let _ = writeln!(
            w,
            "<!-- written by `bench --steps scale` (tools/bench/src/report/scaling.rs): this section \
             is rewritten by each run, except the reading between its markers -->\n"
        );
        let instances: Vec<String> = scale
            .balanced
            .iter()
            .map(|b| b.instances.to_string())
            .collect();
        let _ = writeln!(
            w,
            "New callbacks at {} clients, {} round(s) of {} s: pgbench on `NEW_CHARGE_SQL` in its own \
             database, then the callbacks straight to one backend, then through HAProxy \
             (`deploy/haproxy.cfg`) with {} backends on one database. A row is the median round; \
             ratios per round in parentheses, * = noisy. *all ours µs/req* is the CPU of the load \
             generator, the backends, HAProxy, PostgreSQL and Redis per request.\n",
            scale.clients,
            self.rounds.max(1),
            self.duration_s,
            instances.join(", "),
        );
        let _ = writeln!(w, "{}", scale.table());
        let reading = old
            .split_once(READING_BEGIN)
            .and_then(|(_, rest)| rest.split_once(READING_END))
            .map(|(text, _)| text.trim())
            .filter(|text| !text.is_empty());
        let _ = writeln!(
            w,
            "### Reading\n\n{READING_BEGIN}\n{}\n{READING_END}\n",
            reading.unwrap_or("(not written yet)")
        );
        let _ = writeln!(w, "### How these figures were produced\n");
        // The caption says how the runs were made; the pool is each instance's.
        let mut rows = self.provenance_rows();
        rows.retain(|(key, _)| !matches!(*key, "runs" | "data"));
        let runs: Vec<&Run> = scale.rows().into_iter().flat_map(|(_, s)| s).collect();
        self.provenance(w, rows, &runs);
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{MEASURED_HEADING, rewrite_section};

    fn run(rate: f64) -> Run {
        Run {
            clients: 32,
            rate,
            ..Run::default()
        }
    }

    fn results() -> Results {
        Results {
            command: "bash scripts/bench.sh --steps scale".into(),
            scale: Some(ScaleOut {
                clients: 32,
                pgbench: vec![run(2000.0), run(2100.0)],
                direct: vec![run(1800.0), run(1700.0)],
                balanced: vec![
                    Balanced {
                        instances: 1,
                        runs: vec![run(1600.0), run(1600.0)],
                    },
                    Balanced {
                        instances: 2,
                        runs: vec![run(1600.0), run(1680.0)],
                    },
                ],
            }),
            ..Results::default()
        }
    }

    const DOC: &str =
        "# Scaling\n\nIntro.\n\n## Measured\n\nold figures\n\n## Past one machine\n\nLater text.\n";

    #[test]
    fn a_rewrite_keeps_the_reading_and_the_rest_of_the_file() -> anyhow::Result<()> {
        let results = results();
        let first = rewrite_section(DOC, MEASURED_HEADING, |old| results.scaling_markdown(old))?;
        assert!(first.starts_with("# Scaling\n\nIntro.\n\n## Measured\n\n<!--"));
        assert!(first.ends_with("\n\n## Past one machine\n\nLater text.\n"));
        assert!(!first.contains("old figures") && first.contains("HAProxy + 2 backends"));
        let written = first.replace("(not written yet)", "PostgreSQL's commits are the ceiling.");
        let second = rewrite_section(&written, MEASURED_HEADING, |old| {
            results.scaling_markdown(old)
        })?;
        assert_eq!(second, written);
        Ok(())
    }
}
