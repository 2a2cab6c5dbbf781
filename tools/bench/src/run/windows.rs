//! What happens around every measured window, whichever step it belongs to:
//! the database settled before it, CPU and WAL watched during its steady part,
//! `pg_stat_statements` read after it, and the HTTP workers that drive the
//! backend.
//!
//! The accounting runs beside the load, not inside it, so a run's figures and
//! the cost of measuring them never mix.

use super::{Bench, say};
use crate::load::{self, Job};
use crate::pgbench::Invocation;
use crate::report::StatementBreakdown;
use crate::stats::Run;
use crate::{cpu, postgres};
use sqlx::PgPool;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

/// Which database a run works in: pgbench's or the backend's (they are kept
/// apart so neither side finds the other's rows).
#[derive(Debug, Clone, Copy)]
pub(super) enum Side {
    Pgbench,
    Backend,
}

impl Side {
    /// How the side is named in the report's labels.
    fn name(self) -> &'static str {
        match self {
            Self::Pgbench => "pgbench",
            Self::Backend => "backend",
        }
    }
}

/// CPU and WAL accounting running beside a measured window.
struct Watch {
    cpu: tokio::task::JoinHandle<Option<cpu::CpuUse>>,
    wal: tokio::task::JoinHandle<Option<postgres::WalUse>>,
}

impl Watch {
    /// Waits for the accounting and puts it on `run`.
    async fn attach(self, run: &mut Run) -> anyhow::Result<()> {
        run.cpu = self.cpu.await?;
        run.wal = self.wal.await?;
        Ok(())
    }
}

impl Bench {
    /// CPU and WAL accounting over the steady part of a window starting at `start`.
    fn watch(&self, start: Instant, seconds: u64) -> Watch {
        let window = Duration::from_secs(seconds);
        let lead = Duration::from_millis(1500).min(window / 4);
        let tail = Duration::from_millis(300).min(window / 4);
        let (from, to) = (start + lead, start + window - tail);
        Watch {
            cpu: cpu::watch(self.roots.clone(), from, to),
            wal: postgres::watch_wal(self.pg_pool.clone(), from, to),
        }
    }

    /// The pool and the database name of one side.
    fn database(&self, side: Side) -> (&PgPool, &str) {
        match side {
            Side::Pgbench => (&self.pg_pool, &self.pg_db),
            Side::Backend => (&self.http_pool, &self.http_db),
        }
    }

    /// Settles the side's database before a run; before the focus run, also
    /// forgets the statement statistics so the breakdown is that run's alone.
    pub(super) async fn before_run(&self, side: Side, focus: bool) -> anyhow::Result<()> {
        let (pool, _) = self.database(side);
        postgres::settle(pool).await?;
        if focus && self.server.is_owned() {
            postgres::reset_statements(pool).await?;
        }
        Ok(())
    }

    /// When `measured`, records the database time per statement of the run just
    /// finished (own cluster only), labelled "`side`, `what`, `clients` clients".
    pub(super) async fn record_statements(
        &mut self,
        measured: bool,
        side: Side,
        what: &str,
        clients: usize,
        operations: u64,
    ) {
        if !measured || !self.server.is_owned() {
            return;
        }
        let (pool, db) = self.database(side);
        match postgres::statement_times(pool, db).await {
            Ok(statements) => self.results.statements.push(StatementBreakdown {
                label: format!("{}, {what}, {clients} clients", side.name()),
                operations,
                statements,
            }),
            Err(err) => say(format!("    warning: pg_stat_statements: {err}")),
        }
    }

    /// One pgbench run of `script` in a settled database, with CPU and WAL
    /// accounting; its per-transaction log goes to `pgbench_<log>_<clients>`.
    pub(super) async fn pgbench_window(
        &mut self,
        script: &Path,
        vars: Vec<(String, String)>,
        clients: usize,
        seconds: u64,
        measured: bool,
        log: &str,
    ) -> anyhow::Result<Run> {
        self.before_run(Side::Pgbench, measured).await?;
        let invocation = Invocation {
            script,
            server_args: self.server.cli_args(),
            database: &self.pg_db,
            clients,
            duration: Some(Duration::from_secs(seconds)),
            vars,
            log_prefix: Some(self.work.join(format!("pgbench_{log}_{clients}"))),
        };
        let watch = self.watch(Instant::now(), seconds);
        let mut run = invocation.run().await?;
        watch.attach(&mut run).await?;
        postgres::wait_idle(&self.pg_pool, &self.pg_db).await?;
        Ok(run)
    }

    /// Runs HTTP workers with CPU accounting; the first operation's run.
    pub(super) async fn load(
        &mut self,
        addr: SocketAddr,
        jobs: Vec<Job>,
        seconds: u64,
        what: &str,
    ) -> anyhow::Result<Run> {
        Ok(self
            .load_all(addr, jobs, seconds, what)
            .await?
            .into_iter()
            .next()
            .unwrap_or_default())
    }

    /// Runs HTTP workers with CPU accounting; one run per operation of a job.
    pub(super) async fn load_all(
        &mut self,
        addr: SocketAddr,
        jobs: Vec<Job>,
        seconds: u64,
        what: &str,
    ) -> anyhow::Result<Vec<Run>> {
        let clients = jobs.len();
        let connections = load::connect(addr, clients).await?;
        let start = Instant::now() + Duration::from_millis(50);
        let watch = self.watch(start, seconds);
        let outcome = load::run(connections, jobs, start, Duration::from_secs(seconds)).await?;
        let (cpu, wal) = (watch.cpu.await?, watch.wal.await?);
        let mut runs = outcome.runs;
        for run in &mut runs {
            run.cpu = cpu;
            run.wal = wal;
            if outcome.exhausted_workers > 0 {
                run.errors += outcome.exhausted_workers as u64;
                run.error_kinds.insert(
                    "worker ran out of prepared requests (raise the estimate)".into(),
                    outcome.exhausted_workers as u64,
                );
            }
        }
        if outcome.exhausted_workers > 0 {
            self.results.notes.push(format!(
                "{what} at {clients} clients: {} workers ran out of prepared requests before the end",
                outcome.exhausted_workers
            ));
        }
        Ok(runs)
    }
}
