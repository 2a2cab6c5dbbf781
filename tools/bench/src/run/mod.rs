//! The benchmark, step by step: the databases, each step (pgbench, then the
//! backend, at each client count and round), tear down, the tables.
//!
//! - `setup.rs`: the databases and the run's facts;
//! - `callbacks.rs`: new callbacks and the duplicate storm;
//! - `pay.rs`: the pay next to Redis's `GETDEL` and pgbench on its statement;
//! - `scale.rs`: the scale-out step (HAProxy with 1, 2, 3 backends on one database);
//! - `backend.rs`: starting and stopping the backend process;
//! - `windows.rs`: what runs around every measured window (the database
//!   settled, CPU accounting, the HTTP workers).
//!
//! Rounds of one client count run back to back, pgbench then the backend, so
//! each ratio compares two runs made minutes apart on the same machine.

mod backend;
mod callbacks;
mod pay;
mod scale;
mod setup;
mod windows;

use crate::callbacks::Signer;
use crate::cli::{Args, Step};
use crate::cpu;
use crate::postgres::{self, OrderStock};
use crate::redis_bench::{self, RedisTarget};
use crate::report::{MEASURED_HEADING, RESULTS_HEADING, Results, write_section};
use sqlx::PgPool;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use testkit::BackendProcess;
use tokio::time::Instant;

fn say(text: impl AsRef<str>) {
    println!("{}", text.as_ref());
}

/// Runs the benchmark and writes the tables; returns the figures.
pub async fn run(args: Args) -> anyhow::Result<Results> {
    let started = Instant::now();
    let mut bench = Bench::prepare(args, testkit::workspace_root()).await?;
    let outcome = bench.steps().await;
    bench.teardown().await;
    outcome?;

    let Bench {
        mut results,
        args,
        root,
        work,
        ..
    } = bench;
    results.elapsed_s = started.elapsed().as_secs_f64();
    let saved = work.join("results.json");
    std::fs::write(&saved, serde_json::to_string_pretty(&results)?)?;
    say(results.summary());
    if !args.no_write {
        write_reports(&args, &root, &results)?;
    }
    say(format!(
        "==> Done in {:.0} s; raw figures in {}",
        results.elapsed_s,
        saved.display()
    ));
    Ok(results)
}

/// Rewrites `docs/BENCHMARKS.md`'s `## Latest results` when the run measured
/// anything it shows, and `docs/SCALING.md`'s `## Measured` when the
/// scale-out step ran; the rest of both files is left as people wrote it.
fn write_reports(args: &Args, root: &Path, results: &Results) -> anyhow::Result<()> {
    if results.scale.is_some() {
        let path = args
            .scaling_output
            .clone()
            .unwrap_or_else(|| root.join("docs/SCALING.md"));
        write_section(&path, MEASURED_HEADING, |old| results.scaling_markdown(old))?;
        say(format!(
            "==> Wrote {MEASURED_HEADING} of {}",
            path.display()
        ));
    }
    if results.has_benchmarks() {
        let path = args
            .output
            .clone()
            .unwrap_or_else(|| root.join("docs/BENCHMARKS.md"));
        write_section(&path, RESULTS_HEADING, |_| results.benchmarks_markdown())?;
        say(format!("==> Wrote {RESULTS_HEADING} of {}", path.display()));
    }
    Ok(())
}

/// One run of the benchmark: what it measures with, and what it found so far.
struct Bench {
    args: Args,
    root: PathBuf,
    /// This run's folder: pgbench scripts and logs, backend logs, `results.json`.
    work: PathBuf,
    pg_db: String,
    http_db: String,
    pg_pool: PgPool,
    http_pool: PgPool,
    pg_stock: OrderStock,
    http_stock: OrderStock,
    /// The pay's shopper's session cookie, once signed in.
    pay_cookie: Option<hyper::header::HeaderValue>,
    signer: Signer,
    redis_prefix: String,
    redis: RedisTarget,
    backend_bin: PathBuf,
    roots: cpu::Roots,
    /// The best new-callback rate seen so far, to size the next run's order stock.
    rate_hint: f64,
    /// The best pay rate seen so far, likewise.
    pay_hint: f64,
    backend: Option<(BackendProcess, SocketAddr)>,
    results: Results,
}

impl Bench {
    /// The steps asked for, in their fixed order.
    async fn steps(&mut self) -> anyhow::Result<()> {
        if self.args.runs(Step::New) {
            self.step_new().await?;
        }
        if self.args.runs(Step::Duplicate) {
            self.step_duplicate().await?;
        }
        self.stop_backend("callbacks (new and duplicate)");
        if self.args.runs(Step::Pay) {
            self.step_pay().await?;
        }
        if self.args.runs(Step::Scale) {
            self.step_scale().await?;
        }
        Ok(())
    }

    async fn teardown(&mut self) {
        self.stop_backend("callbacks (new and duplicate)");
        if let Err(err) = redis_bench::clean(&self.args.redis_url, &self.redis_prefix).await {
            say(format!(
                "    warning: could not remove our Redis keys: {err}"
            ));
        }
        self.pg_pool.close().await;
        self.http_pool.close().await;
        if !self.args.keep {
            for db in [&self.pg_db, &self.http_db] {
                if let Err(err) = postgres::drop_database(&self.args.postgres, db).await {
                    say(format!("    warning: could not drop {db}: {err}"));
                }
            }
        }
    }

    /// The client count for warm-ups and the scale-out step.
    fn focus(&self) -> usize {
        self.args.focus_clients()
    }

    /// A progress label, with the round when there are several.
    fn label(&self, what: &str, round: u32) -> String {
        if self.args.rounds > 1 {
            format!("{what} #{}", round + 1)
        } else {
            what.to_owned()
        }
    }

    /// Orders a run of `seconds` at `rate` may use, with room to spare: running
    /// out would end a worker early and lower the rate.
    fn orders_needed(&self, rate: f64, seconds: u64, clients: usize) -> i64 {
        (rate * seconds as f64 * 1.5) as i64 + 100 * clients as i64
    }

    /// Writes a generated pgbench script into the work folder.
    fn write_script(&self, name: &str, text: anyhow::Result<String>) -> anyhow::Result<PathBuf> {
        let file = self.work.join(name);
        std::fs::write(&file, text?)?;
        Ok(file)
    }
}
