//! The figures of one run: what `bench` measured and the facts beside them,
//! as saved in `results.json`.
//!
//! [`Results`] and [`Settings`] fill a missing field with its default, so a
//! `results.json` from an older run still reads back after a field is added.

use super::ScaleOut;
use crate::machine::{Machine, WasmSize};
use crate::postgres::{ServerSettings, StatementTime};
use crate::stats::Run;
use serde::{Deserialize, Serialize};

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
    /// pgbench on `NEW_CHARGE_SQL`: the handler's one statement.
    pub new_pgbench: Vec<Run>,
    /// pgbench on `GENERAL_CHARGE_SQL`, one round trip per statement.
    #[serde(default)]
    pub new_pgbench_statements: Vec<Run>,
    /// pgbench on `GENERAL_CHARGE_SQL` in one pipeline (one round trip).
    #[serde(default)]
    pub new_pgbench_pipelined: Vec<Run>,
    /// New callbacks through the backend.
    pub new_backend: Vec<Run>,
    /// pgbench on `NEW_CHARGE_SQL` with the pool's ping in front (experiment).
    pub new_pgbench_ping: Vec<Run>,
    /// pgbench on `DUPLICATE_SQL`: the handler's one statement.
    pub dup_pgbench: Vec<Run>,
    /// pgbench on `DUPLICATE_LOOKUP_SQL`: the least a duplicate costs.
    #[serde(default)]
    pub dup_pgbench_lookup: Vec<Run>,
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
    /// The pay alone, its request token issued before the window (one
    /// operation, `202`), after the pairs at each client count.
    #[serde(default)]
    pub pay_alone: Vec<Run>,
    /// pgbench on `START_IN_ONE_SQL`: pay's attempt and hold in one statement.
    #[serde(default)]
    pub pay_pgbench: Vec<Run>,
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
    /// The scale-out step: HAProxy with 1, 2, 3 backends (docs/SCALING.md).
    pub scale: Option<ScaleOut>,
    /// Things a reader must know (ran out of requests, a step skipped, ...).
    pub notes: Vec<String>,
}

impl Results {
    /// True when the run measured anything `docs/BENCHMARKS.md` shows (a
    /// scale-out-only run does not, and leaves that file alone).
    pub fn has_benchmarks(&self) -> bool {
        !(self.new_pgbench.is_empty()
            && self.new_backend.is_empty()
            && self.dup_pgbench.is_empty()
            && self.dup_backend.is_empty()
            && self.pay.is_empty()
            && self.wasm.is_none())
    }
}
