//! What happens around every measured window, whichever step it belongs to:
//! the database settled before it, CPU watched during its steady part, and
//! the HTTP workers that drive the backend.
//!
//! The accounting runs beside the load, not inside it, so a run's figures and
//! the cost of measuring them never mix.

use super::Bench;
use crate::load::{self, Job};
use crate::pgbench::Invocation;
use crate::stats::Run;
use crate::{cpu, postgres};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

impl Bench {
    /// CPU accounting over the steady part of a window starting at `start`:
    /// the ramp-up and the last answers are left out.
    fn watch(&self, start: Instant, seconds: u64) -> JoinHandle<Option<cpu::CpuUse>> {
        let window = Duration::from_secs(seconds);
        let lead = Duration::from_millis(1500).min(window / 4);
        let tail = Duration::from_millis(300).min(window / 4);
        cpu::watch(self.roots.clone(), start + lead, start + window - tail)
    }

    /// One pgbench run of `script` in a settled database, with CPU
    /// accounting; its per-transaction log goes to `pgbench_<log>_<clients>`.
    pub(super) async fn pgbench_window(
        &mut self,
        script: &Path,
        vars: Vec<(String, String)>,
        clients: usize,
        seconds: u64,
        log: &str,
    ) -> anyhow::Result<Run> {
        postgres::settle(&self.pg_pool).await?;
        let url = self.database_url(&self.pg_db);
        let invocation = Invocation {
            script,
            database_url: &url,
            clients,
            duration: Some(Duration::from_secs(seconds)),
            vars,
            log_prefix: Some(self.work.join(format!("pgbench_{log}_{clients}"))),
        };
        let watch = self.watch(Instant::now(), seconds);
        let mut run = invocation.run().await?;
        run.cpu = watch.await?;
        Ok(run)
    }

    /// Runs HTTP workers against `addr` in a settled database, with CPU accounting.
    pub(super) async fn load(
        &mut self,
        addr: SocketAddr,
        jobs: Vec<Job>,
        seconds: u64,
        what: &str,
    ) -> anyhow::Result<Run> {
        postgres::settle(&self.http_pool).await?;
        let clients = jobs.len();
        // Time enough to open every connection before the window.
        let start = Instant::now() + Duration::from_millis(50 + 2 * clients as u64);
        let watch = self.watch(start, seconds);
        let (mut run, exhausted) =
            load::run(addr, jobs, start, Duration::from_secs(seconds)).await?;
        run.cpu = watch.await?;
        if exhausted > 0 {
            let kind = "worker ran out of prepared requests (raise the estimate)";
            run.errors += exhausted as u64;
            run.error_kinds.insert(kind.into(), exhausted as u64);
            self.results.notes.push(format!(
                "{what} at {clients} clients: {exhausted} workers ran out of prepared requests before the end"
            ));
        }
        Ok(run)
    }
}
