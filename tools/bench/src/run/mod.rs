//! The benchmark, step by step: set up PostgreSQL and the data, measure each
//! step (pgbench, then the backend, at each client count), tear down, report.
//!
//! This file is the order of things and nothing else, so a reader sees the whole
//! run at once; each step and each piece of machinery has a file of its own:
//!
//! - `setup.rs`: checks, the private cluster, the databases, the run's facts;
//! - `new_callbacks.rs`, `duplicate_storm.rs`, `pay_now.rs`, `page_size.rs`: the
//!   steps, one file each (the two callback steps share `callback_rounds.rs`);
//! - `scale_out.rs`: the scale-out step (HAProxy with 1, 2, 3 backends on one database);
//! - `backend.rs`: starting and stopping the backend process;
//! - `windows.rs`: what runs beside every measured window (HTTP workers, CPU and
//!   WAL accounting, `pg_stat_statements`);
//! - `plan.rs`: which runs in which order, and what each needs prepared;
//! - `report_file.rs`: `results.json` and `docs/BENCHMARKS.md`.

mod backend;
mod callback_rounds;
mod duplicate_storm;
mod new_callbacks;
mod page_size;
mod pay_now;
mod plan;
mod report_file;
mod scale_out;
mod setup;
mod windows;

use crate::callbacks::Signer;
use crate::cli::{Args, Step};
use crate::cpu;
use crate::postgres::{OrderStock, Server};
use crate::redis_bench::{self, RedisTarget};
use crate::report::Results;
use sqlx::PgPool;
use std::net::SocketAddr;
use std::path::PathBuf;
use storm::processes::BackendProcess;
use tokio::time::Instant;

pub use testkit::workspace_root;

fn say(text: impl AsRef<str>) {
    println!("{}", text.as_ref());
}

/// Runs the benchmark and writes the report; returns the figures.
pub async fn run(args: Args) -> anyhow::Result<Results> {
    let started = Instant::now();
    let root = workspace_root();
    if let Some(json) = &args.report_from {
        let results = report_file::read_results(json)?;
        say(results.summary());
        report_file::write_report(&args, &root, &results)?;
        return Ok(results);
    }
    let mut bench = Bench::prepare(args, root).await?;
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
    let saved = report_file::save_results(&work, &results)?;
    say(results.summary());
    report_file::write_report(&args, &root, &results)?;
    say(format!(
        "==> Done in {:.0} s; raw figures in {}",
        results.elapsed_s,
        saved.display()
    ));
    Ok(results)
}

/// One run of the benchmark: what it measures with, and what it found so far.
struct Bench {
    args: Args,
    root: PathBuf,
    /// This run's folder: pgbench scripts and logs, backend logs, `results.json`.
    work: PathBuf,
    server: Server,
    pg_db: String,
    http_db: String,
    pg_pool: PgPool,
    http_pool: PgPool,
    pg_stock: OrderStock,
    http_stock: OrderStock,
    /// The pay-now shopper's session cookie, once signed in.
    pay_cookie: Option<hyper::header::HeaderValue>,
    signer: Signer,
    redis_prefix: String,
    redis: RedisTarget,
    backend_bin: PathBuf,
    roots: cpu::Roots,
    /// The best new-callback rate seen so far, to size the next run's order stock.
    rate_hint: f64,
    /// The best pay-now rate seen so far, likewise.
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
        if self.args.runs(Step::Size) {
            self.step_size()?;
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
        if !self.args.keep
            && let Err(err) = self
                .server
                .drop_databases(&[self.pg_db.clone(), self.http_db.clone()])
                .await
        {
            say(format!("    warning: could not drop the databases: {err}"));
        }
    }
}
