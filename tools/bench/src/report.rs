//! The figures of one benchmark run, the targets they are held to, and the
//! Markdown report (`docs/BENCHMARKS.md`).
//!
//! The report is regenerated whole on every run except the part between
//! [`ANALYSIS_BEGIN`] and [`ANALYSIS_END`]: the written analysis is kept.

use crate::cpu::CpuUse;
use crate::machine::{Machine, WasmSize};
use crate::postgres::{ServerSettings, StatementTime};
use crate::stats::{NOISY_CORES, RoundRatio, Run, at, quiet_median, round_ratios};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Start of the hand-written part that survives a rewrite.
pub const ANALYSIS_BEGIN: &str = "<!-- analysis: kept when the benchmark rewrites this file -->";
/// End of the hand-written part.
pub const ANALYSIS_END: &str = "<!-- end of analysis -->";

/// Targets of issue 5.
pub mod limits {
    /// New callbacks: at least this share of pgbench's rate at 32 and 100 clients.
    pub const NEW_VS_PGBENCH: f64 = 0.85;
    /// Duplicates: at least this share of pgbench's duplicate path.
    pub const DUP_VS_PGBENCH: f64 = 0.5;
    /// Duplicates: at least this many times the new-callback rate.
    pub const DUP_VS_NEW: f64 = 2.0;
    /// p99 at 32 clients and in a 100-way duplicate storm, ms.
    pub const P99_MS: f64 = 30.0;
    /// The page's .wasm, gzip, KiB.
    pub const WASM_GZIP_KIB: f64 = 150.0;
    /// The backend's peak resident memory, MiB.
    pub const PEAK_RSS_MIB: f64 = 64.0;
}

/// Options the run used.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Seconds per measured run.
    pub duration_s: u64,
    /// Seconds of each warm-up.
    pub warmup_s: u64,
    /// Client counts.
    pub clients: Vec<usize>,
    /// The backend's `DATABASE_MAX_CONNECTIONS`.
    pub db_max_connections: String,
    /// Accounts the orders are spread over.
    pub accounts: i64,
    /// Requests per redis-benchmark run.
    pub redis_requests: u64,
    /// Rounds of pgbench-then-backend per client count.
    pub rounds: usize,
    /// Experiments switched on (they change what is compared).
    pub experiments: Vec<String>,
}

/// The database time of one run, statement by statement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatementBreakdown {
    /// Which run.
    pub label: String,
    /// Operations it completed (to turn totals into per-operation figures).
    pub operations: u64,
    /// From `pg_stat_statements`.
    pub statements: Vec<StatementTime>,
}

/// Everything one run of the benchmark found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Results {
    /// The command that produced it.
    pub command: String,
    /// When it started (UTC).
    pub started_at: String,
    /// Seconds the whole benchmark took.
    pub elapsed_s: f64,
    /// The commit measured.
    pub commit: String,
    /// The compiler.
    pub rustc: String,
    /// The machine.
    pub machine: Machine,
    /// Which PostgreSQL.
    pub postgres_where: String,
    /// Its settings.
    pub postgres: ServerSettings,
    /// Redis's version.
    pub redis_version: String,
    /// The options.
    pub settings: Settings,
    /// Microseconds to sign one callback (done before the timed window).
    pub signing_us: Option<f64>,
    /// pgbench on `NEW_CHARGE_SQL`.
    pub new_pgbench: Vec<Run>,
    /// New callbacks through the backend.
    pub new_backend: Vec<Run>,
    /// pgbench on `NEW_CHARGE_SQL` with the pool's ping in front (experiment).
    pub new_pgbench_ping: Vec<Run>,
    /// pgbench on `DUPLICATE_SQL`.
    pub dup_pgbench: Vec<Run>,
    /// pgbench on `DUPLICATE_SQL` with the pool's ping in front (experiment).
    pub dup_pgbench_ping: Vec<Run>,
    /// A duplicate storm through the backend.
    pub dup_backend: Vec<Run>,
    /// Pay now: token then pay.
    pub pay: Vec<Run>,
    /// Pay now: the request-token call alone.
    pub pay_token: Vec<Run>,
    /// Pay now: the pay call alone.
    pub pay_submit: Vec<Run>,
    /// redis-benchmark `SET EX NX`.
    pub redis_set: Vec<Run>,
    /// redis-benchmark `GETDEL`.
    pub redis_getdel: Vec<Run>,
    /// The page's .wasm.
    pub wasm: Option<WasmSize>,
    /// Peak resident memory (`VmHWM`) of each backend process, KiB, by phase.
    pub peak_rss_kib: Vec<(String, u64)>,
    /// `pg_stat_statements` per run at the focus client count.
    pub statements: Vec<StatementBreakdown>,
    /// `EXPLAIN ANALYZE` of each statement of one new callback.
    pub explain: Vec<(String, String)>,
    /// `perf` profiles.
    pub profiles: Vec<(String, String)>,
    /// The generated pgbench scripts.
    pub scripts: Vec<(String, String)>,
    /// Things a reader must know (ran out of requests, a step skipped, ...).
    pub notes: Vec<String>,
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

fn ratio(a: Option<&Run>, b: Option<&Run>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b.rate > 0.0 => Some(a.rate / b.rate),
        _ => None,
    }
}

fn mark(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "not measured",
    }
}

/// `" (rounds 0.80, 0.85, 0.47*)"` when there was more than one round; `*` marks a noisy one.
fn spread(ratios: &[RoundRatio]) -> String {
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

    /// The targets of issue 5, judged.
    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        for clients in [32, 100] {
            let r = self.new_ratio(clients);
            out.push(Target {
                what: format!("new callbacks / pgbench, {clients} clients"),
                wanted: format!(">= {:.2}x", limits::NEW_VS_PGBENCH),
                measured: r.map_or("-".into(), |r| {
                    format!("{r:.3}x{}", spread(&self.new_ratios(clients)))
                }),
                met: r.map(|r| r >= limits::NEW_VS_PGBENCH),
            });
        }
        let all = |f: &dyn Fn(usize) -> Option<f64>, min: f64| -> (String, Option<bool>) {
            let values: Vec<(usize, f64)> = self
                .settings
                .clients
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
        let (measured, met) = all(&|c| self.dup_ratio(c), limits::DUP_VS_PGBENCH);
        out.push(Target {
            what: "duplicates / pgbench duplicate path".into(),
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

    /// The summary printed at the end of a run.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "\n{}", self.comparison_table());
        let _ = writeln!(out, "Targets:");
        for target in self.targets() {
            let _ = writeln!(
                out,
                "  {:<12} {:<44} wanted {:<22} measured {}",
                mark(target.met).trim_matches('*'),
                target.what,
                target.wanted,
                target.measured
            );
        }
        let _ = writeln!(out, "\nNoise: {}", self.noise_summary());
        out
    }

    fn comparison_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| step | clients | pgbench / Redis per s | p50 ms | p99 ms | backend per s | p50 ms | p99 ms | errors | backend / tool |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (step, tool, ours) in [
            ("new callback", &self.new_pgbench, &self.new_backend),
            ("duplicate", &self.dup_pgbench, &self.dup_backend),
        ] {
            for &clients in &self.settings.clients {
                let (t, o) = (at(tool, clients), at(ours, clients));
                if t.is_none() && o.is_none() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "| {step} | {clients} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    t.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                    t.map_or("-".into(), |r| format!("{:.2}", r.latency.p50_ms)),
                    t.map_or("-".into(), |r| format!("{:.2}", r.latency.p99_ms)),
                    o.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                    o.map_or("-".into(), |r| format!("{:.2}", r.latency.p50_ms)),
                    o.map_or("-".into(), |r| format!("{:.2}", r.latency.p99_ms)),
                    o.map_or("-".into(), |r| r.errors.to_string()),
                    {
                        let ratios = round_ratios(ours, tool, clients);
                        quiet_median(&ratios)
                            .map_or("-".into(), |r| format!("{r:.2}x{}", spread(&ratios)))
                    },
                );
            }
        }
        for &clients in &self.settings.clients {
            let Some(pay) = at(&self.pay, clients) else {
                continue;
            };
            let set = at(&self.redis_set, clients);
            let _ = writeln!(
                out,
                "| pay now (token + pay) vs Redis SET EX NX | {clients} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {} | {} |",
                set.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                set.map_or("-".into(), |r| format!("{:.2}", r.latency.p50_ms)),
                set.map_or("-".into(), |r| format!("{:.2}", r.latency.p99_ms)),
                pay.rate,
                pay.latency.p50_ms,
                pay.latency.p99_ms,
                pay.errors,
                ratio(Some(pay), set).map_or("-".into(), |r| format!("{r:.3}x")),
            );
        }
        out
    }

    fn all_cpu(&self) -> Vec<(String, &Run, &CpuUse)> {
        let mut out = Vec::new();
        for (label, series) in [
            ("pgbench new", &self.new_pgbench),
            ("pgbench + ping new", &self.new_pgbench_ping),
            ("backend new", &self.new_backend),
            ("pgbench duplicate", &self.dup_pgbench),
            ("pgbench + ping duplicate", &self.dup_pgbench_ping),
            ("backend duplicate", &self.dup_backend),
            ("backend pay now", &self.pay),
        ] {
            let mut seen: Vec<usize> = Vec::new();
            for run in series {
                seen.push(run.clients);
                let round = seen.iter().filter(|&&c| c == run.clients).count();
                let rounds = series.iter().filter(|r| r.clients == run.clients).count();
                if let Some(cpu) = &run.cpu {
                    let suffix = if rounds > 1 {
                        format!(" #{round}")
                    } else {
                        String::new()
                    };
                    out.push((format!("{label} @{}{suffix}", run.clients), run, cpu));
                }
            }
        }
        out
    }

    /// One line on how busy the rest of the machine was.
    pub fn noise_summary(&self) -> String {
        let noise: Vec<f64> = self
            .all_cpu()
            .iter()
            .map(|(_, _, cpu)| cpu.other_cores + cpu.steal_cores)
            .collect();
        if noise.is_empty() {
            return "not measured".into();
        }
        let mean = noise.iter().sum::<f64>() / noise.len() as f64;
        let max = noise.iter().copied().fold(0.0, f64::max);
        let cores = self.machine.cores.max(1) as f64;
        format!(
            "other processes (and steal) used {mean:.2} of {cores:.0} cores on average during the measured windows, {max:.2} at most ({:.0}% / {:.0}% of the machine)",
            mean / cores * 100.0,
            max / cores * 100.0
        )
    }

    /// The Markdown report; `analysis` is the kept hand-written part.
    pub fn markdown(&self, analysis: Option<&str>) -> String {
        let mut md = String::new();
        let w = &mut md;
        let _ = writeln!(w, "# Benchmarks against the physical limit\n");
        let _ = writeln!(
            w,
            "The callback handler is compared with `pgbench` running exactly the SQL the handler runs \
             (generated from `backend::charge::NEW_CHARGE_SQL` and `DUPLICATE_SQL`), on the same \
             machine, in the same run, with the same data. pgbench is the limit: PostgreSQL doing \
             the transaction with nothing in front of it. Pay-now is shown next to `redis-benchmark` \
             for the two Redis commands it sends.\n"
        );
        let _ = writeln!(
            w,
            "This file is written by the benchmark (`bench` crate); only the analysis section between \
             its markers is kept when it is rewritten.\n"
        );

        let _ = writeln!(w, "## How these figures were produced\n");
        let _ = writeln!(w, "```sh\n{}\n```\n", self.command);
        let _ = writeln!(w, "| | |\n|---|---|");
        let m = &self.machine;
        let rows = [
            ("date (UTC)", self.started_at.clone()),
            ("commit", self.commit.clone()),
            ("compiler", self.rustc.clone()),
            ("CPU", format!("{} x {}", m.cores, m.cpu_model)),
            ("memory", format!("{} MiB", m.memory_mib)),
            ("kernel", m.kernel.clone()),
            ("load average at start", m.load_at_start.clone()),
            (
                "PostgreSQL",
                format!("{} — {}", self.postgres.version, self.postgres_where),
            ),
            ("`SHOW fsync`", self.postgres.fsync.clone()),
            (
                "`SHOW synchronous_commit`",
                self.postgres.synchronous_commit.clone(),
            ),
            (
                "`SHOW wal_sync_method`",
                self.postgres.wal_sync_method.clone(),
            ),
            (
                "`SHOW shared_buffers`",
                self.postgres.shared_buffers.clone(),
            ),
            (
                "`SHOW max_connections`",
                self.postgres.max_connections.clone(),
            ),
            ("Redis", self.redis_version.clone()),
            (
                "runs",
                format!(
                    "{} s each after a discarded {} s warm-up per step; clients {:?}; {} round(s) of pgbench then backend per count (figures: the median round)",
                    self.settings.duration_s,
                    self.settings.warmup_s,
                    self.settings.clients,
                    self.settings.rounds.max(1)
                ),
            ),
            (
                "backend pool (`DATABASE_MAX_CONNECTIONS`)",
                self.settings.db_max_connections.clone(),
            ),
            (
                "data",
                format!(
                    "{} accounts; one PENDING order per new callback, in a database per side (pgbench / backend)",
                    self.settings.accounts
                ),
            ),
            (
                "signing a callback",
                self.signing_us.map_or("-".into(), |us| {
                    format!("{us:.1} µs, done before the timed window")
                }),
            ),
            ("whole benchmark", format!("{:.0} s", self.elapsed_s)),
        ];
        for (key, value) in rows {
            let _ = writeln!(w, "| {key} | {value} |");
        }
        let _ = writeln!(w, "\n**Noise:** {}.\n", self.noise_summary());
        for note in &self.notes {
            let _ = writeln!(w, "- Note: {note}");
        }
        if !self.notes.is_empty() {
            let _ = writeln!(w);
        }

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

        let _ = writeln!(w, "\n## Results\n");
        let _ = writeln!(
            w,
            "Rates are successful operations per second (pgbench: transactions; backend: 200 answers; \
             pay now: token + pay pairs). Latency is per operation as the client saw it. With \
             several rounds, a row shows the median round and the ratio is the median of the \
             rounds' ratios (pgbench and backend ran next to each other in each round); a round \
             marked * was noisy (other processes took more than {NOISY_CORES} cores during one of \
             its runs) and is left out of the medians when a quiet round exists.\n"
        );
        let _ = writeln!(w, "{}", self.comparison_table());
        if !self.dup_backend.is_empty() && !self.new_backend.is_empty() {
            let _ = writeln!(
                w,
                "Duplicates / new callbacks through the backend: {}.\n",
                self.settings
                    .clients
                    .iter()
                    .filter_map(|&c| self.dup_vs_new(c).map(|r| format!("{r:.2}x at {c}")))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        self.ping_section(w);
        self.pay_section(w);
        self.errors_section(w);

        let _ = writeln!(w, "## Page size and memory\n");
        match &self.wasm {
            Some(wasm) => {
                let _ = writeln!(
                    w,
                    "- `{}` (built {} UTC): {} bytes raw ({:.1} KiB), {} bytes gzip -9 ({:.1} KiB).",
                    wasm.file,
                    wasm.built_at,
                    wasm.raw_bytes,
                    wasm.raw_bytes as f64 / 1024.0,
                    wasm.gzip_bytes,
                    wasm.gzip_bytes as f64 / 1024.0
                );
            }
            None => {
                let _ = writeln!(
                    w,
                    "- No `dist/*.wasm`: run `bash scripts/build-frontend.sh` first."
                );
            }
        }
        for (phase, kib) in &self.peak_rss_kib {
            let _ = writeln!(
                w,
                "- Backend peak RSS (`VmHWM`), {phase}: {:.1} MiB.",
                *kib as f64 / 1024.0
            );
        }
        let _ = writeln!(w);

        self.cpu_section(w);
        self.statements_section(w);
        if !self.explain.is_empty() {
            let _ = writeln!(
                w,
                "## Plans: `EXPLAIN (ANALYZE, BUFFERS)` of one new callback (rolled back)\n"
            );
            for (sql, plan) in &self.explain {
                let _ = writeln!(
                    w,
                    "```sql\n{}\n```\n```text\n{}\n```\n",
                    sql.trim(),
                    plan.trim()
                );
            }
        }
        if !self.profiles.is_empty() {
            let _ = writeln!(
                w,
                "## Profiles (`perf record -a -e cpu-clock`, extra runs)\n"
            );
            for (label, text) in &self.profiles {
                let _ = writeln!(w, "### {label}\n\n```text\n{}\n```\n", text.trim_end());
            }
        }

        let _ = writeln!(w, "## Analysis\n");
        let _ = writeln!(w, "{ANALYSIS_BEGIN}");
        let _ = writeln!(
            w,
            "{}",
            analysis
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .unwrap_or("(not written yet)")
        );
        let _ = writeln!(w, "{ANALYSIS_END}\n");

        if !self.scripts.is_empty() {
            let _ = writeln!(w, "## The generated pgbench scripts\n");
            for (name, text) in &self.scripts {
                let _ = writeln!(w, "`{name}`:\n\n```text\n{}```\n", text);
            }
        }
        md
    }

    fn ping_section(&self, w: &mut String) {
        if self.new_pgbench_ping.is_empty() && self.dup_pgbench_ping.is_empty() {
            return;
        }
        let _ = writeln!(
            w,
            "### The price of the pool's ping (experiment, same run)\n"
        );
        let _ = writeln!(
            w,
            "sqlx's pool checks a connection at every checkout (`test_before_acquire`, on by \
             default) with a bare Sync round trip, so the backend makes one round trip more per \
             transaction than the SQL needs. pgbench + ping runs the same script with that round \
             trip in front (an empty `\\startpipeline`/`\\endpipeline`).\n"
        );
        let _ = writeln!(
            w,
            "| step | clients | pgbench /s | pgbench + ping /s | change | backend /s | backend / (pgbench + ping) |"
        );
        let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|");
        for (step, plain, ping, ours) in [
            (
                "new callback",
                &self.new_pgbench,
                &self.new_pgbench_ping,
                &self.new_backend,
            ),
            (
                "duplicate",
                &self.dup_pgbench,
                &self.dup_pgbench_ping,
                &self.dup_backend,
            ),
        ] {
            for &clients in &self.settings.clients {
                let (Some(plain), Some(ping)) = (at(plain, clients), at(ping, clients)) else {
                    continue;
                };
                let ours = at(ours, clients);
                let _ = writeln!(
                    w,
                    "| {step} | {clients} | {:.0} | {:.0} | {:+.0}% | {} | {} |",
                    plain.rate,
                    ping.rate,
                    (ping.rate / plain.rate - 1.0) * 100.0,
                    ours.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                    ratio(ours, Some(ping)).map_or("-".into(), |r| format!("{r:.2}x")),
                );
            }
        }
        let _ = writeln!(w);
    }

    fn pay_section(&self, w: &mut String) {
        if self.pay.is_empty() && self.redis_set.is_empty() {
            return;
        }
        let _ = writeln!(w, "### Pay now and Redis\n");
        let _ = writeln!(
            w,
            "| clients | pay-now pairs/s | pair p99 ms | token p50 / p99 ms | pay p50 / p99 ms | errors | Redis SET EX NX /s, p99 ms | Redis GETDEL /s, p99 ms |"
        );
        let _ = writeln!(w, "|---:|---:|---:|---:|---:|---:|---:|---:|");
        for &clients in &self.settings.clients {
            let pay = at(&self.pay, clients);
            let token = at(&self.pay_token, clients);
            let submit = at(&self.pay_submit, clients);
            let set = at(&self.redis_set, clients);
            let getdel = at(&self.redis_getdel, clients);
            let both = |r: Option<&Run>| {
                r.map_or("-".into(), |r| {
                    format!("{:.2} / {:.2}", r.latency.p50_ms, r.latency.p99_ms)
                })
            };
            let redis = |r: Option<&Run>| {
                r.map_or("-".into(), |r| {
                    format!("{:.0}, {:.2}", r.rate, r.latency.p99_ms)
                })
            };
            let _ = writeln!(
                w,
                "| {clients} | {} | {} | {} | {} | {} | {} | {} |",
                pay.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                pay.map_or("-".into(), |r| format!("{:.2}", r.latency.p99_ms)),
                both(token),
                both(submit),
                pay.map_or("-".into(), |r| r.errors.to_string()),
                redis(set),
                redis(getdel),
            );
        }
        let _ = writeln!(
            w,
            "\nA pay-now pair costs two HTTP requests, two Redis commands (SET EX NX, GETDEL) and \
             three PostgreSQL transactions (order read, token record, attempt insert), plus the \
             hand-over to the platform after the answer: the in-process sandbox, started with \
             `SANDBOX_CALLBACK_DELAY_MS=3600000` so no callback lands during the measurement \
             (unless an experiment below names another platform).\n"
        );
    }

    fn errors_section(&self, w: &mut String) {
        let mut lines = Vec::new();
        for (label, series) in [
            ("pgbench new", &self.new_pgbench),
            ("backend new", &self.new_backend),
            ("pgbench duplicate", &self.dup_pgbench),
            ("backend duplicate", &self.dup_backend),
            ("backend pay now", &self.pay),
        ] {
            for run in series.iter().filter(|r| r.errors > 0) {
                lines.push(format!(
                    "- {label} @{}: {} errors: {:?}",
                    run.clients, run.errors, run.error_kinds
                ));
            }
        }
        if !lines.is_empty() {
            let _ = writeln!(w, "### Errors\n\n{}\n", lines.join("\n"));
        }
    }

    fn cpu_section(&self, w: &mut String) {
        let rows = self.all_cpu();
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(
            w,
            "## Where the CPU went (measured from /proc during each window)\n"
        );
        let _ = writeln!(
            w,
            "Cores busy on average over the steady part of each window (the machine has {}), \
             then per successful operation: CPU microseconds of the load generator, the backend \
             and PostgreSQL, their sum with Redis (*all ours*), context switches of the whole \
             machine, and WAL. *client* is the load generator (pgbench, or the `bench` process's \
             HTTP workers); *other* is everything not ours: the noise. *irq* is interrupt time, \
             most of it already inside the process times (loopback networking runs in the \
             sending process). The machine is saturated when *idle* is near 0: then the rate \
             is the cores divided by *all ours µs/op*. *WAL flush ms* is the mean time of one \
             WAL fsync: the disk's share of commit latency, and a sign of disk noise when it \
             moves between runs.\n",
            self.machine.cores
        );
        let _ = writeln!(
            w,
            "| run | ops/s | client | backend | PostgreSQL | Redis | irq | other + steal | idle | client µs/op | backend µs/op | PostgreSQL µs/op | all ours µs/op | ctx switches/op | WAL bytes/op | ops per WAL flush | WAL flush ms |"
        );
        let _ = writeln!(
            w,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for (label, run, cpu) in rows {
            let idle = (cpu.cores - cpu.busy_cores).max(0.0);
            let ours = cpu.client_cores + cpu.backend_cores + cpu.postgres_cores + cpu.redis_cores;
            let (wal_bytes, wal_syncs) = run.wal_per_op().unwrap_or((0.0, 0.0));
            let _ = writeln!(
                w,
                "| {label} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} | {} | {} |",
                run.rate,
                cpu.client_cores,
                cpu.backend_cores,
                cpu.postgres_cores,
                cpu.redis_cores,
                cpu.irq_cores,
                cpu.other_cores + cpu.steal_cores,
                idle,
                run.cpu_us_per_op(cpu.client_cores),
                run.cpu_us_per_op(cpu.backend_cores),
                run.cpu_us_per_op(cpu.postgres_cores),
                run.cpu_us_per_op(ours),
                if run.rate > 0.0 {
                    cpu.context_switches_per_s / run.rate
                } else {
                    0.0
                },
                wal_bytes,
                if wal_syncs > 0.0 {
                    format!("{:.1}", 1.0 / wal_syncs)
                } else {
                    "-".into()
                },
                run.wal
                    .as_ref()
                    .and_then(|wal| wal.mean_sync_ms())
                    .map_or("-".into(), |ms| format!("{ms:.2}")),
            );
        }
        let _ = writeln!(w);
    }

    fn statements_section(&self, w: &mut String) {
        if self.statements.is_empty() {
            return;
        }
        let _ = writeln!(
            w,
            "## Database time per operation (`pg_stat_statements`)\n\n\
             Execution time inside PostgreSQL per successful operation, by statement. The sum \
             is what the database itself spends; the rest of the latency is waiting (for the \
             CPU, the WAL flush at commit, the network, a pool connection). Foreign-key checks \
             appear as their own statements (`SELECT 1 FROM ONLY ... FOR KEY SHARE`); pgbench's \
             prepared `BEGIN`/`COMMIT` are counted once per connection, not per transaction, \
             and the pool's ping (a bare Sync) is no statement at all.\n"
        );
        for breakdown in &self.statements {
            let ops = breakdown.operations.max(1) as f64;
            let statements: Vec<&StatementTime> = breakdown
                .statements
                .iter()
                .filter(|s| !crate::postgres::is_bookkeeping(&s.query))
                .collect();
            let total: f64 = statements.iter().map(|s| s.total_ms).sum();
            let calls: i64 = statements.iter().map(|s| s.calls).sum();
            let _ = writeln!(
                w,
                "**{}**: {:.1} statements (with foreign-key checks) and {:.0} µs of execution per operation.\n",
                breakdown.label,
                calls as f64 / ops,
                total * 1000.0 / ops
            );
            let _ = writeln!(w, "| calls/op | µs/op | statement |\n|---:|---:|---|");
            for s in statements {
                let query: String = s.query.split_whitespace().collect::<Vec<_>>().join(" ");
                let query = if query.chars().count() > 110 {
                    format!("{}…", query.chars().take(110).collect::<String>())
                } else {
                    query
                };
                let _ = writeln!(
                    w,
                    "| {:.2} | {:.1} | `{}` |",
                    s.calls as f64 / ops,
                    s.total_ms * 1000.0 / ops,
                    query.replace('|', "\\|")
                );
            }
            let _ = writeln!(w);
        }
    }
}

/// The kept analysis of an existing report, if it has one.
pub fn kept_analysis(existing: &str) -> Option<String> {
    let start = existing.find(ANALYSIS_BEGIN)? + ANALYSIS_BEGIN.len();
    let end = existing[start..].find(ANALYSIS_END)? + start;
    Some(existing[start..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
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
                clients: vec![32, 100],
                ..Settings::default()
            },
            new_pgbench: vec![run(32, 1000.0, 5.0), run(100, 1000.0, 5.0)],
            new_backend: vec![run(32, 900.0, 20.0), run(100, 800.0, 50.0)],
            ..Results::default()
        };
        let targets = results.targets();
        assert_eq!(targets[0].met, Some(true));
        assert_eq!(targets[1].met, Some(false));
        assert_eq!(targets[2].met, None, "duplicates were not measured");
    }

    #[test]
    fn the_written_analysis_survives_a_rewrite() {
        let results = Results::default();
        let first = results.markdown(Some("Pool size is the limit."));
        let kept = kept_analysis(&first);
        assert_eq!(
            kept.as_deref().map(str::trim),
            Some("Pool size is the limit.")
        );
        let second = results.markdown(kept.as_deref());
        assert!(second.contains("Pool size is the limit."));
    }
}
