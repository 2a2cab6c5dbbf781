//! The new-callback step: pgbench on `bench::handler_sql::NEW_CHARGE_SQL`, then
//! the same callbacks signed and posted to the backend, each for a fresh order;
//! then one callback's plans and, when asked, `perf` profiles.
//!
//! Both sides take orders from stocks of the same size, so neither runs out
//! first, and the callbacks are signed before the window opens so signing is
//! not timed.

use super::callback_rounds::{Baseline, CallbackWork};
use super::windows::Side;
use super::{Bench, say};
use crate::load::Job;
use crate::pgbench::{self, CallbackPath};
use crate::stats::Run;
use crate::{explain, profile};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

impl Bench {
    pub(super) async fn step_new(&mut self) -> anyhow::Result<()> {
        say(
            "==> New callbacks: pgbench on bench::handler_sql::NEW_CHARGE_SQL (the handler's one statement), \
             on GENERAL_CHARGE_SQL one statement at a time and pipelined, then POST /api/payments/callback",
        );
        let (script, ping_script) = self
            .write_scripts(CallbackPath::New, "new_callback")
            .await?;
        let mut baselines = Vec::new();
        for (path, name) in [
            (CallbackPath::NewStatements, "new_callback_statements.sql"),
            (CallbackPath::NewPipelined, "new_callback_pipelined.sql"),
        ] {
            let script = self.write_script(path, false, name).await?;
            baselines.push(Baseline { path, script });
        }
        self.backend_addr().await?;
        self.callback_rounds(
            &CallbackWork::New,
            &script,
            &baselines,
            ping_script.as_deref(),
        )
        .await?;

        let k = {
            self.pg_stock.ensure_handed_over(1).await?;
            self.pg_stock.take(1)
        };
        match explain::new_callback(&self.pg_pool, k).await {
            Ok(plans) => self.results.explain = plans,
            Err(err) => say(format!("    warning: EXPLAIN failed: {err:#}")),
        }

        if self.args.profile {
            self.profile_new(&script).await?;
        }
        Ok(())
    }

    /// `perf` over one more pgbench run and one more backend run at the focus
    /// count; neither is counted.
    async fn profile_new(&mut self, script: &Path) -> anyhow::Result<()> {
        if !self.perf_available().await {
            return Ok(());
        }
        let focus = self.focus();
        let seconds = self.args.duration;
        say(format!(
            "    profiling with perf ({seconds} s each at {focus} clients, not counted)"
        ));
        let recording = profile::start(
            &self.work.join("perf-pgbench-new.data"),
            Duration::from_secs(seconds),
        )?;
        self.pgbench_new(script, focus, seconds, false).await?;
        let text = recording.finish(None).await?;
        self.results
            .profiles
            .push((format!("pgbench, new callbacks, {focus} clients"), text));
        let recording = profile::start(
            &self.work.join("perf-backend-new.data"),
            Duration::from_secs(seconds),
        )?;
        self.backend_new(focus, seconds, false).await?;
        let text = recording
            .finish(self.roots.backends.first().copied())
            .await?;
        self.results
            .profiles
            .push((format!("backend, new callbacks, {focus} clients"), text));
        Ok(())
    }

    /// True when `perf` runs here; otherwise says so, once in the report's notes.
    pub(super) async fn perf_available(&mut self) -> bool {
        if profile::available().await {
            return true;
        }
        const NOTE: &str = "--profile was given but perf does not run here";
        say("    perf is not available: no profile");
        if !self.results.notes.iter().any(|n| n == NOTE) {
            self.results.notes.push(NOTE.into());
        }
        false
    }

    /// Makes sure both sides have the orders a run of `seconds` at `clients`
    /// may use; returns that count. Both stocks grow together, so the two
    /// sides' orders stay alike.
    async fn stock_orders(&mut self, seconds: u64, clients: usize) -> anyhow::Result<i64> {
        let need = self.orders_needed(self.rate_hint, seconds, clients);
        self.pg_stock.ensure_handed_over(need).await?;
        self.http_stock.ensure_handed_over(need).await?;
        Ok(need)
    }

    /// One pgbench run of new callbacks, each for the next order of the stock.
    pub(super) async fn pgbench_new(
        &mut self,
        script: &Path,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        self.stock_orders(seconds, clients).await?;
        let base = self.pg_stock.next();
        let vars = new_callback_vars(base, clients, self.args.accounts);
        let run = self
            .pgbench_window(script, vars, clients, seconds, measured, "new")
            .await?;
        self.pg_stock.skip_used("payment_callbacks").await?;
        self.rate_hint = self.rate_hint.max(run.rate);
        self.record_statements(measured, Side::Pgbench, "new callbacks", clients, run.ok)
            .await;
        Ok(run)
    }

    /// One run of new callbacks through the backend, signed before the window opens.
    pub(super) async fn backend_new(
        &mut self,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let addr = self.backend_addr().await?;
        self.backend_new_at(addr, clients, seconds, measured).await
    }

    /// One run of new callbacks sent to `addr` (a backend, or a balancer in
    /// front of backends on the backend's database), signed before the window opens.
    pub(super) async fn backend_new_at(
        &mut self,
        addr: SocketAddr,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let need = self.stock_orders(seconds, clients).await?;
        let base = self.http_stock.next();
        let per_worker = (need as usize).div_ceil(clients);
        let signing = Instant::now();
        let mut jobs = Vec::with_capacity(clients);
        for worker in 0..clients {
            let mut queue = VecDeque::with_capacity(per_worker);
            for i in 0..per_worker {
                let k = base + (worker + clients * i) as i64;
                queue.push_back(self.signer.callback(k)?);
            }
            jobs.push(Job::Queue(queue));
        }
        let signed = per_worker * clients;
        let signing_us = signing.elapsed().as_secs_f64() * 1e6 / signed.max(1) as f64;
        self.results.signing_us = Some(
            self.results
                .signing_us
                .map_or(signing_us, |s| s.min(signing_us)),
        );
        self.before_run(Side::Backend, measured).await?;
        let run = self.load(addr, jobs, seconds, "new callbacks").await?;
        self.http_stock.skip_used("payment_callbacks").await?;
        self.rate_hint = self.rate_hint.max(run.rate);
        self.record_statements(measured, Side::Backend, "new callbacks", clients, run.ok)
            .await;
        Ok(run)
    }
}

/// pgbench's variables for new callbacks: client `c`'s `n`-th transaction
/// charges order `base + c + clients * n`, so no two clients share an order;
/// `accounts` says which account order `k` belongs to.
pub(super) fn new_callback_vars(base: i64, clients: usize, accounts: i64) -> Vec<(String, String)> {
    let mut vars = vec![
        ("i".to_owned(), "0".to_owned()),
        ("base".to_owned(), base.to_string()),
        ("nclients".to_owned(), clients.to_string()),
        ("accounts".to_owned(), accounts.to_string()),
    ];
    vars.extend(pgbench::constants(CallbackPath::New));
    vars
}
