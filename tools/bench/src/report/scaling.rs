//! The scale-out figures (`--steps scale`) and the `## Measured` section of
//! `docs/SCALING.md` they are written into: new callbacks straight to one
//! backend and through HAProxy with 1, 2 and 3 backends, next to pgbench on the
//! same SQL in the same run, and the balancer's own cost per request.
//!
//! Only that section is rewritten; the rest of the file is hand-written and
//! kept, and so is the reading between [`super::ANALYSIS_BEGIN`] and [`super::ANALYSIS_END`]
//! inside the section.

use super::Results;
use super::analysis::{kept_analysis, kept_block};
use super::ratios::spread;
use crate::stats::{NOISY_CORES, RoundRatio, Run, at, quiet_median, round_ratios, rounds_at};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The heading of the section the scale-out step rewrites.
pub const MEASURED_HEADING: &str = "## Measured";

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
    /// `DATABASE_MAX_CONNECTIONS` of each instance.
    pub pool_per_instance: u32,
    /// `haproxy -v`, first line.
    pub haproxy: String,
    /// How the connection budget was met, in words.
    pub budget: String,
    /// pgbench on `NEW_CHARGE_SQL`, one run per round.
    pub pgbench: Vec<Run>,
    /// New callbacks straight to one backend, one run per round.
    pub direct: Vec<Run>,
    /// New callbacks through HAProxy, per number of backends.
    pub balanced: Vec<Balanced>,
}

/// One round's difference of a per-request figure (b minus a), and whether it was noisy.
fn round_differences(
    a: &[Run],
    b: &[Run],
    clients: usize,
    figure: fn(&Run) -> f64,
) -> Vec<RoundRatio> {
    rounds_at(a, clients)
        .iter()
        .zip(rounds_at(b, clients))
        .map(|(a, b)| RoundRatio {
            ratio: figure(b) - figure(a),
            noisy: a.noisy() || b.noisy(),
        })
        .collect()
}

/// One figure per round, and whether the round was noisy.
fn round_figures(series: &[Run], clients: usize, figure: fn(&Run) -> f64) -> Vec<RoundRatio> {
    rounds_at(series, clients)
        .iter()
        .map(|run| RoundRatio {
            ratio: figure(run),
            noisy: run.noisy(),
        })
        .collect()
}

/// Mean latency of a run, µs.
fn mean_us(run: &Run) -> f64 {
    run.latency.mean_ms * 1000.0
}

/// Median latency of a run, µs.
fn p50_us(run: &Run) -> f64 {
    run.latency.p50_ms * 1000.0
}

/// The balancer's CPU per successful request, µs.
fn balancer_us(run: &Run) -> f64 {
    run.cpu
        .map_or(0.0, |cpu| run.cpu_us_per_op(cpu.balancer_cores))
}

/// CPU of all our processes (load generator, backends, HAProxy, PostgreSQL, Redis; the platform
/// process, idle in this step) per request, µs.
fn ours_us(run: &Run) -> f64 {
    run.cpu.map_or(0.0, |cpu| {
        run.cpu_us_per_op(cpu.ours_cores() + cpu.balancer_cores)
    })
}

/// `"+12 µs (rounds +10, +14*, +12)"`.
fn signed_with_rounds(rounds: &[RoundRatio], unit: &str) -> String {
    let Some(median) = quiet_median(rounds) else {
        return "-".into();
    };
    let mut out = format!("{median:+.0} {unit}");
    if rounds.len() > 1 {
        let list: Vec<String> = rounds
            .iter()
            .map(|r| format!("{:+.0}{}", r.ratio, if r.noisy { "*" } else { "" }))
            .collect();
        let _ = write!(out, " (rounds {})", list.join(", "));
    }
    out
}

impl ScaleOut {
    /// The runs through HAProxy with `instances` backends.
    pub fn balanced_runs(&self, instances: usize) -> &[Run] {
        self.balanced
            .iter()
            .find(|b| b.instances == instances)
            .map_or(&[], |b| b.runs.as_slice())
    }

    /// The smallest number of instances measured through HAProxy: the base of the ratios.
    pub fn base_instances(&self) -> Option<usize> {
        self.balanced.iter().map(|b| b.instances).min()
    }

    /// Rate of `series` over the base count through HAProxy, round by round.
    pub fn vs_base(&self, series: &[Run]) -> Vec<RoundRatio> {
        self.base_instances().map_or_else(Vec::new, |base| {
            round_ratios(series, self.balanced_runs(base), self.clients)
        })
    }

    /// Rate of `series` over pgbench's, round by round.
    pub fn vs_pgbench(&self, series: &[Run]) -> Vec<RoundRatio> {
        round_ratios(series, &self.pgbench, self.clients)
    }

    /// Every series with its label and whether it is pgbench's, in the order the table shows them.
    fn rows(&self) -> Vec<(String, &[Run], bool)> {
        let mut rows: Vec<(String, &[Run], bool)> = vec![
            (
                "pgbench on `NEW_CHARGE_SQL` (the limit), tps".to_owned(),
                self.pgbench.as_slice(),
                true,
            ),
            (
                "straight to 1 backend".to_owned(),
                self.direct.as_slice(),
                false,
            ),
        ];
        for balanced in &self.balanced {
            let n = balanced.instances;
            rows.push((
                format!("HAProxy + {n} backend{}", if n == 1 { "" } else { "s" }),
                balanced.runs.as_slice(),
                false,
            ));
        }
        rows
    }

    /// Every run of the step.
    fn all_runs(&self) -> impl Iterator<Item = &Run> {
        self.pgbench
            .iter()
            .chain(&self.direct)
            .chain(self.balanced.iter().flat_map(|b| &b.runs))
    }

    /// One line on how busy the rest of the machine was during the step's windows.
    pub fn noise_summary(&self, cores: usize) -> String {
        let noise: Vec<f64> = self
            .all_runs()
            .filter_map(|run| run.cpu.map(|cpu| cpu.other_cores + cpu.steal_cores))
            .collect();
        if noise.is_empty() {
            return "not measured".into();
        }
        let mean = noise.iter().sum::<f64>() / noise.len() as f64;
        let max = noise.iter().copied().fold(0.0, f64::max);
        let noisy = self.all_runs().filter(|run| run.noisy()).count();
        format!(
            "other processes (and steal) used {mean:.2} of {cores} cores on average during the measured \
             windows, {max:.2} at most; {noisy} of {} runs were noisy (over {NOISY_CORES} cores)",
            noise.len()
        )
    }

    /// The figures table: rate, latency, ratios, and where the CPU went.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let base = self.base_instances().unwrap_or(1);
        let _ = writeln!(
            out,
            "| run ({} clients) | per s | p50 ms | p99 ms | mean ms | errors | / HAProxy + {base} | / pgbench | cores: backends | HAProxy | PostgreSQL | load generator | idle | HAProxy µs/req | all ours µs/req | per WAL flush | WAL flush ms |",
            self.clients
        );
        let _ = writeln!(
            out,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for (label, series, is_pgbench) in self.rows() {
            let Some(run) = at(series, self.clients) else {
                continue;
            };
            let ratio = |ratios: Vec<RoundRatio>| {
                quiet_median(&ratios).map_or("-".into(), |r| format!("{r:.2}x{}", spread(&ratios)))
            };
            let vs_base = if is_pgbench {
                "-".into()
            } else {
                ratio(self.vs_base(series))
            };
            let vs_pgbench = if is_pgbench {
                "1.00x".into()
            } else {
                ratio(self.vs_pgbench(series))
            };
            let cpu = |f: fn(&crate::cpu::CpuUse) -> f64| {
                run.cpu.map_or("-".into(), |cpu| format!("{:.2}", f(&cpu)))
            };
            let _ = writeln!(
                out,
                "| {label} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {vs_base} | {vs_pgbench} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {} |",
                run.rate,
                run.latency.p50_ms,
                run.latency.p99_ms,
                run.latency.mean_ms,
                run.errors,
                cpu(|c| c.backend_cores),
                cpu(|c| c.balancer_cores),
                cpu(|c| c.postgres_cores),
                cpu(|c| c.client_cores),
                cpu(|c| c.idle_cores()),
                if is_pgbench {
                    "-".into()
                } else {
                    format!("{:.0}", balancer_us(run))
                },
                ours_us(run),
                run.wal_per_op()
                    .filter(|(_, syncs)| *syncs > 0.0)
                    .map_or("-".into(), |(_, syncs)| format!("{:.1}", 1.0 / syncs)),
                run.wal
                    .as_ref()
                    .and_then(|wal| wal.mean_sync_ms())
                    .map_or("-".into(), |ms| format!("{ms:.2}")),
            );
        }
        out
    }

    /// The balancer's cost per request: HAProxy with one backend against the
    /// same load straight to that backend, round by round.
    pub fn balancer_cost(&self) -> Option<String> {
        let through = self.balanced_runs(1);
        if self.direct.is_empty() || through.is_empty() {
            return None;
        }
        let clients = self.clients;
        let mean = round_differences(&self.direct, through, clients, mean_us);
        let p50 = round_differences(&self.direct, through, clients, p50_us);
        let own = round_figures(through, clients, balancer_us);
        let ours = round_differences(&self.direct, through, clients, ours_us);
        let rate = round_ratios(through, &self.direct, clients);
        Some(format!(
            "**The balancer's cost per request** (HAProxy with one backend minus the same load \
             straight to that backend, {clients} clients, same round): mean latency {}, p50 {}; \
             HAProxy's own CPU {} per request (its process, from /proc); CPU of all our processes \
             per request {} (HAProxy plus the second loopback hop on both sides); rate through \
             HAProxy / straight: {}.",
            signed_with_rounds(&mean, "µs"),
            signed_with_rounds(&p50, "µs"),
            quiet_median(&own).map_or("-".into(), |us| format!("{us:.0} µs")),
            signed_with_rounds(&ours, "µs"),
            quiet_median(&rate).map_or("-".into(), |r| format!("{r:.2}x{}", spread(&rate))),
        ))
    }

    /// Sentences read off the figures: the limit, what more instances bought,
    /// whether the machine was saturated.
    pub fn findings(&self) -> Vec<String> {
        let clients = self.clients;
        let mut out = Vec::new();
        let (Some(pg), Some(base)) = (at(&self.pgbench, clients), self.base_instances()) else {
            return out;
        };
        let best = self
            .balanced
            .iter()
            .filter_map(|b| {
                let ratio = quiet_median(&self.vs_pgbench(&b.runs))?;
                Some((b.instances, ratio))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((n, ratio)) = best {
            out.push(format!(
                "pgbench commits {:.0} new-callback transactions per second at {clients} clients; \
                 the best through HAProxy is {n} instance(s) at {ratio:.2}x of that.",
                pg.rate
            ));
        }
        for balanced in self.balanced.iter().filter(|b| b.instances != base) {
            if let Some(ratio) = quiet_median(&self.vs_base(&balanced.runs)) {
                let verdict = if ratio >= 1.05 {
                    "faster"
                } else if ratio > 0.95 {
                    "no faster (within the rounds' spread)"
                } else {
                    "slower"
                };
                out.push(format!(
                    "{} instances: {ratio:.2}x of {base} through HAProxy: {verdict}.",
                    balanced.instances
                ));
            }
        }
        let idle: Vec<String> = self
            .rows()
            .into_iter()
            .filter_map(|(label, series, _)| {
                let cpu = at(series, clients)?.cpu?;
                Some(format!(
                    "{label}: {:.2} idle, PostgreSQL {:.2}",
                    cpu.idle_cores(),
                    cpu.postgres_cores
                ))
            })
            .collect();
        if !idle.is_empty() {
            out.push(format!(
                "Cores idle and PostgreSQL's cores during each median run: {}.",
                idle.join("; ")
            ));
        }
        out
    }
}

impl Results {
    /// The body of `docs/SCALING.md`'s `## Measured` section; `reading` is the
    /// kept hand-written reading.
    pub fn scaling_markdown(&self, reading: Option<&str>) -> String {
        let mut md = String::new();
        let w = &mut md;
        let Some(scale) = &self.scale else {
            let _ = writeln!(
                w,
                "Not measured yet: `bash scripts/bench.sh --steps scale`."
            );
            return md;
        };
        let _ = writeln!(
            w,
            "<!-- written by `bench --steps scale` (tools/bench/src/report/scaling.rs): this section \
             is rewritten by each run, except the reading between its markers -->\n"
        );
        let _ = writeln!(w, "```sh\n{}\n```\n", self.command);
        let instances: Vec<String> = scale
            .balanced
            .iter()
            .map(|b| b.instances.to_string())
            .collect();
        let _ = writeln!(
            w,
            "New callbacks (`POST /api/payments/callback`, each for a fresh PENDING order, signed \
             before the timed window) at {} clients. In each of {} round(s), back to back, {} s \
             each after a discarded warm-up: pgbench running `bench::handler_sql::NEW_CHARGE_SQL` in its \
             own database (the limit: PostgreSQL with nothing in front), the callbacks straight to \
             one backend, then through HAProxy (`deploy/haproxy.cfg`, round robin, keep-alive to the \
             backends) with {} backend(s). Every backend is the release build with the same \
             environment as the benchmark's single backend, all on one database; every instance \
             and every HAProxy runs through the whole step (idle when not addressed). A row shows \
             the median round; a ratio is the median of the rounds' ratios, each from runs made \
             next to each other (rounds in parentheses, * = noisy: other processes took more \
             than {NOISY_CORES} cores). *cores* are averages over the steady part of the window \
             from /proc (the machine has {}); *all ours µs/req* is the CPU of the load generator, \
             the backends, HAProxy, PostgreSQL and Redis per request; *per WAL flush* is how many \
             requests one WAL fsync carried (group commit) and *WAL flush ms* the mean time of one: \
             the disk's share of commit latency, and a sign of disk noise when it moves between runs.\n",
            scale.clients,
            self.settings.rounds.max(1),
            self.settings.duration_s,
            instances.join(", "),
            self.machine.cores,
        );
        let _ = writeln!(w, "{}", scale.table());
        if let Some(cost) = scale.balancer_cost() {
            let _ = writeln!(w, "{cost}\n");
        }
        let findings = scale.findings();
        if !findings.is_empty() {
            let _ = writeln!(w, "From the figures:\n");
            for finding in findings {
                let _ = writeln!(w, "- {finding}");
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w, "### Reading\n");
        kept_block(w, reading);
        let _ = writeln!(w, "### How these figures were produced\n");
        let _ = writeln!(w, "| | |\n|---|---|");
        for (key, value) in self.provenance_rows() {
            let value = match key {
                "runs" => format!(
                    "{} s each after a discarded {} s warm-up (pgbench, then HAProxy with the most \
                     backends); {} clients; {} round(s)",
                    self.settings.duration_s,
                    self.settings.warmup_s,
                    scale.clients,
                    self.settings.rounds.max(1)
                ),
                "backend pool (`DATABASE_MAX_CONNECTIONS`)" => {
                    format!("{} per instance; {}", scale.pool_per_instance, scale.budget)
                }
                "data" => format!(
                    "{} accounts; one PENDING order per new callback; pgbench in its own database, \
                     every backend in one shared database",
                    self.settings.accounts
                ),
                _ => value,
            };
            let _ = writeln!(w, "| {key} | {value} |");
        }
        let _ = writeln!(w, "| HAProxy | {} |", scale.haproxy);
        let _ = writeln!(
            w,
            "\n**Noise:** {}.\n",
            scale.noise_summary(self.machine.cores)
        );
        for note in &self.notes {
            let _ = writeln!(w, "- Note: {note}");
        }
        md
    }

    /// `doc` (the text of `docs/SCALING.md`) with its `## Measured` section
    /// rewritten from these figures, keeping the reading already written there.
    pub fn rewrite_scaling(&self, doc: &str) -> anyhow::Result<String> {
        let (before, section, after) = split_measured(doc)?;
        let body = self.scaling_markdown(kept_analysis(section).as_deref());
        let gap = if after.is_empty() { "" } else { "\n" };
        Ok(format!("{before}\n{}\n{gap}{after}", body.trim_end()))
    }
}

/// `doc` cut around the body of its `## Measured` section: what comes up to
/// and including the heading line, the body, and the next `## ` heading onwards.
fn split_measured(doc: &str) -> anyhow::Result<(&str, &str, &str)> {
    let mut offset = 0;
    let mut body_start = None;
    for line in doc.split_inclusive('\n') {
        let end = offset + line.len();
        match body_start {
            None if line.trim_end() == MEASURED_HEADING => body_start = Some(end),
            Some(start) if line.starts_with("## ") => {
                return Ok((&doc[..start], &doc[start..offset], &doc[offset..]));
            }
            _ => {}
        }
        offset = end;
    }
    match body_start {
        Some(start) => Ok((&doc[..start], &doc[start..], "")),
        None => bail!("no `{MEASURED_HEADING}` heading: nowhere to put the scale-out figures"),
    }
}

/// Rewrites the `## Measured` section of the file at `path` from `results`.
pub fn write_scaling(path: &std::path::Path, results: &Results) -> anyhow::Result<()> {
    let doc =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = results
        .rewrite_scaling(&doc)
        .with_context(|| path.display().to_string())?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuUse;
    use crate::stats::Latency;

    fn run(clients: usize, rate: f64, mean_ms: f64, balancer_cores: f64) -> Run {
        Run {
            clients,
            ok: (rate * 10.0) as u64,
            rate,
            latency: Latency {
                p50_ms: mean_ms,
                p99_ms: mean_ms * 3.0,
                mean_ms,
                max_ms: mean_ms * 5.0,
            },
            cpu: Some(CpuUse {
                window_s: 8.0,
                cores: 2.0,
                busy_cores: 1.9,
                balancer_cores,
                ..CpuUse::default()
            }),
            ..Run::default()
        }
    }

    fn results() -> Results {
        let scale = ScaleOut {
            clients: 32,
            pool_per_instance: 20,
            haproxy: "HAProxy version 2.6".into(),
            budget: "3 x 20 = 60 of 300".into(),
            pgbench: vec![run(32, 2000.0, 16.0, 0.0), run(32, 2100.0, 15.0, 0.0)],
            direct: vec![run(32, 1800.0, 17.0, 0.0), run(32, 1700.0, 18.0, 0.0)],
            balanced: vec![
                Balanced {
                    instances: 1,
                    runs: vec![run(32, 1600.0, 17.1, 0.16), run(32, 1600.0, 18.2, 0.16)],
                },
                Balanced {
                    instances: 2,
                    runs: vec![run(32, 1600.0, 20.0, 0.16), run(32, 1680.0, 19.0, 0.16)],
                },
            ],
        };
        Results {
            command: "bash scripts/bench.sh --steps scale".into(),
            scale: Some(scale),
            ..Results::default()
        }
    }

    const DOC: &str = "# Scaling\n\nIntro.\n\n## Measured\n\nMEASURED_PLACEHOLDER\n\n## Past one machine\n\nLater text.\n";

    #[test]
    fn the_measured_section_is_replaced_and_the_rest_kept() {
        let text = results()
            .rewrite_scaling(DOC)
            .expect("the heading is there");
        assert!(text.starts_with("# Scaling\n\nIntro.\n\n## Measured\n"));
        assert!(text.ends_with(".\n\n## Past one machine\n\nLater text.\n"));
        assert!(!text.contains("MEASURED_PLACEHOLDER"));
        assert!(text.contains("bash scripts/bench.sh --steps scale"));
        assert!(text.contains("HAProxy + 2 backends"));
    }

    #[test]
    fn a_rewrite_keeps_the_reading_and_changes_nothing_else() {
        let first = results().rewrite_scaling(DOC).expect("first rewrite");
        let written = first.replace("(not written yet)", "PostgreSQL's commits are the ceiling.");
        let second = results().rewrite_scaling(&written).expect("second rewrite");
        assert_eq!(second, written);
    }

    #[test]
    fn a_file_without_the_heading_is_refused() {
        assert!(
            results()
                .rewrite_scaling("# Scaling\n\nNo section.\n")
                .is_err()
        );
    }

    #[test]
    fn the_measured_section_may_be_the_last() {
        let text = results()
            .rewrite_scaling("# Scaling\n\n## Measured\n\nold\n")
            .expect("the heading is there");
        assert!(text.starts_with("# Scaling\n\n## Measured\n\n<!--"));
        assert!(!text.contains("old"));
    }

    #[test]
    fn ratios_are_to_one_instance_through_haproxy_and_to_pgbench() {
        let results = results();
        let scale = results.scale.as_ref().expect("scale figures");
        let two: Vec<f64> = scale
            .vs_base(scale.balanced_runs(2))
            .iter()
            .map(|r| r.ratio)
            .collect();
        assert_eq!(two, vec![1.0, 1.05]);
        let direct: Vec<f64> = scale
            .vs_pgbench(&scale.direct)
            .iter()
            .map(|r| r.ratio)
            .collect();
        assert_eq!(direct, vec![0.9, 1700.0 / 2100.0]);
    }

    #[test]
    fn the_balancer_cost_is_the_latency_difference_and_haproxys_cpu() {
        let results = results();
        let scale = results.scale.as_ref().expect("scale figures");
        let cost = scale.balancer_cost().expect("both runs are there");
        // Mean latency: +100 µs and +200 µs; the lower median of two rounds is +100.
        assert!(
            cost.contains("mean latency +100 µs (rounds +100, +200)"),
            "{cost}"
        );
        // 0.16 cores at 1600 requests per second: 100 µs per request.
        assert!(
            cost.contains("HAProxy's own CPU 100 µs per request"),
            "{cost}"
        );
    }
}
