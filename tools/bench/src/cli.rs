//! Command-line options.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

/// What `bench` measures, and for how long.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "bench",
    version,
    about = "Benchmarks the checkout against the physical limit and rewrites the latest results of \
             docs/BENCHMARKS.md (`bash scripts/bench.sh` builds it and starts the PostgreSQL it measures on)"
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
    /// the median of the rounds' ratios. On a shared VM one round's ratio moves
    /// by 10-15 %, so one round is not enough to call a target met or missed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: u32,

    /// Steps to run. `scale` (new callbacks through HAProxy with 1, 2 and 3
    /// backends, written into docs/SCALING.md) is not among the defaults: it
    /// adds about 5 minutes.
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = [Step::New, Step::Duplicate, Step::Pay])]
    pub steps: Vec<Step>,

    /// The report whose `## Latest results` section is rewritten
    /// [default: docs/BENCHMARKS.md of the workspace].
    #[arg(long)]
    pub output: Option<PathBuf>,

    /// Print the tables only; leave the report files alone.
    #[arg(long)]
    pub no_write: bool,

    /// Backend instances behind HAProxy in the `scale` step, one run per count.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 3],
        value_parser = clap::value_parser!(u32).range(1..=16))]
    pub instances: Vec<u32>,

    /// Where the `scale` step's figures go: the `## Measured` section of this
    /// file is rewritten [default: docs/SCALING.md of the workspace].
    #[arg(long)]
    pub scaling_output: Option<PathBuf>,

    /// The PostgreSQL server, `postgres://user@host:port` with trust
    /// authentication and room for the most clients plus the backend's pool
    /// (`scripts/bench.sh` starts a private cluster with 300 connections).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432")]
    pub postgres: String,

    /// Redis (pay's token store and redis-benchmark's target).
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

    /// `PLATFORM_URL` for the pay's backend (a `platform-sim` started with a
    /// long processing delay, as `scripts/bench.sh` does) instead of the
    /// in-process sandbox.
    #[arg(long)]
    pub pay_platform_url: Option<String>,

    /// The process behind `--pay-platform-url`, so its CPU counts as the
    /// platform's and not as noise.
    #[arg(long)]
    pub pay_platform_pid: Option<u32>,

    /// Keep the databases for inspection.
    #[arg(long)]
    pub keep: bool,

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
    /// The pay, its token issued before the window, next to redis-benchmark's
    /// GETDEL and pgbench on its statement.
    Pay,
    /// Scale-out: pgbench on the new-callback SQL, then new callbacks straight
    /// to one backend and through HAProxy with 1, 2 and 3 backends on one
    /// database, at the focus client count; writes docs/SCALING.md's `## Measured`.
    Scale,
}

impl Args {
    /// The client count used for warm-ups and the scale-out step: 32 when
    /// measured, otherwise the middle one.
    pub fn focus_clients(&self) -> usize {
        if self.clients.contains(&32) {
            return 32;
        }
        let mut sorted = self.clients.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied().unwrap_or(32)
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
