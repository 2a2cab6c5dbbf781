//! Command-line options.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

/// What `bench` measures, and for how long.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "bench",
    version,
    about = "Benchmarks the checkout against the physical limit and writes docs/BENCHMARKS.md",
    long_about = "Benchmarks the checkout against the physical limit on this machine, in one run: \
                  the callback handler's SQL under pgbench next to the same callbacks through the \
                  backend (new and duplicate), pay-now next to redis-benchmark, the page's .wasm \
                  size and the backend's peak memory. Prints ratios and targets and writes a report."
)]
pub struct Args {
    /// Seconds each measured run lasts.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,

    /// Seconds of the discarded warm-up run before each step.
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,

    /// Concurrent clients: one measured run per count and step.
    #[arg(long, value_delimiter = ',', default_values_t = [8, 32, 80])]
    pub clients: Vec<usize>,

    /// Clients of the duplicate storm besides `--clients` (the storm is
    /// measured at every count of both); 0 for none.
    #[arg(long, default_value_t = 100)]
    pub storm_clients: usize,

    /// Rounds per client count: pgbench then the backend, repeated; the ratio is
    /// the median of the rounds' ratios, and every round's ratio is shown. On a
    /// shared VM one round's ratio moves by 10-15 %, so one round is not enough to
    /// call a target met or missed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: u32,

    /// Steps to run. `scale` (new callbacks through HAProxy with 1, 2 and 3
    /// backends, written into docs/SCALING.md) is not among the defaults: it
    /// adds about 5 minutes; ask for it with `--steps scale`.
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = [Step::New, Step::Duplicate, Step::Pay, Step::Size])]
    pub steps: Vec<Step>,

    /// The report to write [default: docs/BENCHMARKS.md of the workspace].
    #[arg(long)]
    pub output: Option<PathBuf>,

    /// Print the report only; leave the report file alone.
    #[arg(long)]
    pub no_write: bool,

    /// Backend instances behind HAProxy in the `scale` step, one run per count;
    /// the ratios are to the first count.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 3],
        value_parser = clap::value_parser!(u32).range(1..=16))]
    pub instances: Vec<u32>,

    /// Where the `scale` step's figures go: the `## Measured` section of this
    /// file is rewritten, the rest kept [default: docs/SCALING.md of the workspace].
    #[arg(long)]
    pub scaling_output: Option<PathBuf>,

    /// PostgreSQL: `own` starts a private cluster (needs the server binaries, and
    /// has room for 100 pgbench clients); or a server URL `postgres://user@host:port`
    /// with enough free connections.
    #[arg(long, default_value = "own")]
    pub postgres: String,

    /// Redis (pay-now's token store and redis-benchmark's target).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,

    /// The backend binary [default: target/release/backend].
    #[arg(long)]
    pub backend_bin: Option<PathBuf>,

    /// `DATABASE_MAX_CONNECTIONS` for the backend [default: the backend's own, 20].
    #[arg(long)]
    pub db_max_connections: Option<u32>,

    /// Accounts the orders are spread over (row locks on accounts must not serialise the runs).
    #[arg(long, default_value_t = 1000)]
    pub accounts: i64,

    /// Requests per redis-benchmark run.
    #[arg(long, default_value_t = 200_000)]
    pub redis_requests: u64,

    /// Also profile with `perf`, at 32 clients (or the nearest count), in extra
    /// runs that are not counted: new callbacks (pgbench and the backend) and
    /// the pay (the backend's pay alone, pgbench's attempt and hold).
    #[arg(long)]
    pub profile: bool,

    /// Experiment: also run pgbench with a bare Sync round trip before each
    /// transaction, the health check sqlx's pool makes at each checkout
    /// (`test_before_acquire`), to price that round trip in the same run.
    #[arg(long)]
    pub pgbench_ping: bool,

    /// Experiment: `PLATFORM_URL` for the pay-now backend (e.g. a `platform-sim`
    /// started with a long processing delay) instead of the in-process sandbox.
    #[arg(long)]
    pub pay_platform_url: Option<String>,

    /// Keep the databases (and the private cluster's directory) for inspection.
    #[arg(long)]
    pub keep: bool,

    /// Measure nothing: write the report again from a run's `results.json` (after
    /// the report's layout changed, say). The figures and their command stay.
    #[arg(long, value_name = "RESULTS_JSON")]
    pub report_from: Option<PathBuf>,

    /// The command recorded in the report [default: this process's command line].
    #[arg(long)]
    pub command: Option<String>,
}

/// One part of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Step {
    /// New callbacks: pgbench on the handler's SQL, then the backend.
    New,
    /// A duplicate storm: one callback id, pgbench's duplicate path, then the backend.
    #[value(name = "dup")]
    Duplicate,
    /// Pay now (token, then pay) next to redis-benchmark's SET EX NX and GETDEL.
    Pay,
    /// The page's release .wasm size.
    Size,
    /// Scale-out: pgbench on the new-callback SQL, then new callbacks straight
    /// to one backend and through HAProxy with 1, 2 and 3 backends on one
    /// database, at the focus client count; writes docs/SCALING.md's `## Measured`.
    Scale,
}

impl Args {
    /// The client count used for warm-ups, profiles and per-statement breakdowns:
    /// 32 when measured, otherwise the middle one.
    pub fn focus_clients(&self) -> usize {
        if self.clients.contains(&32) {
            32
        } else {
            let mut sorted = self.clients.clone();
            sorted.sort_unstable();
            sorted.get(sorted.len() / 2).copied().unwrap_or(32)
        }
    }

    /// The duplicate storm's client counts: `--clients`, then `--storm-clients`.
    pub fn storm_counts(&self) -> Vec<usize> {
        let mut counts = self.clients.clone();
        if self.storm_clients > 0 && !counts.contains(&self.storm_clients) {
            counts.push(self.storm_clients);
        }
        counts
    }

    /// The `scale` step's instance counts, sorted, without repeats.
    pub fn instance_counts(&self) -> Vec<usize> {
        let mut counts: Vec<usize> = self.instances.iter().map(|&n| n as usize).collect();
        counts.sort_unstable();
        counts.dedup();
        counts
    }

    /// True when `step` is to run.
    pub fn runs(&self, step: Step) -> bool {
        self.steps.contains(&step)
    }
}
