//! The measured rounds both callback steps share: a discarded warm-up at the
//! focus count, then at every client count and round pgbench, pgbench with the
//! pool's ping (first round, when asked), and the backend, back to back.
//!
//! New callbacks and the duplicate storm differ only in what one run sends,
//! so the order of runs, their labels and where their figures go live here once.

use super::{Bench, say};
use crate::load::Prepared;
use crate::pgbench::CallbackPath;
use crate::report::Results;
use crate::stats::Run;
use std::path::{Path, PathBuf};

/// What one callback step sends, pgbench and the backend alike.
pub(super) enum CallbackWork<'a> {
    /// A new callback per operation, each for a fresh order.
    New,
    /// The same delivered callback again and again.
    Duplicate {
        /// pgbench's variables naming the delivered callback.
        vars: &'a [(String, String)],
        /// The delivered callback, for the backend.
        callback: &'a Prepared,
    },
}

/// Where one step's runs are kept in the results.
struct Series<'r> {
    pgbench: &'r mut Vec<Run>,
    pgbench_ping: &'r mut Vec<Run>,
    backend: &'r mut Vec<Run>,
}

/// Another pgbench script doing the same work, run in every round next to
/// the handler's own: the limit made another way.
pub(super) struct Baseline {
    /// What it replays.
    pub path: CallbackPath,
    /// Its script file.
    pub script: PathBuf,
}

impl Results {
    /// Where the runs of `baseline` are kept.
    fn baseline_runs(&mut self, path: CallbackPath) -> &mut Vec<Run> {
        match path {
            CallbackPath::NewStatements => &mut self.new_pgbench_statements,
            CallbackPath::NewPipelined => &mut self.new_pgbench_pipelined,
            CallbackPath::DuplicateLookup => &mut self.dup_pgbench_lookup,
            CallbackPath::New => &mut self.new_pgbench,
            CallbackPath::Duplicate => &mut self.dup_pgbench,
        }
    }
}

impl CallbackWork<'_> {
    /// The step's name in progress lines.
    fn name(&self) -> &'static str {
        match self {
            Self::New => "new callback",
            Self::Duplicate { .. } => "duplicate",
        }
    }

    fn series<'r>(&self, results: &'r mut Results) -> Series<'r> {
        match self {
            Self::New => Series {
                pgbench: &mut results.new_pgbench,
                pgbench_ping: &mut results.new_pgbench_ping,
                backend: &mut results.new_backend,
            },
            Self::Duplicate { .. } => Series {
                pgbench: &mut results.dup_pgbench,
                pgbench_ping: &mut results.dup_pgbench_ping,
                backend: &mut results.dup_backend,
            },
        }
    }
}

impl Bench {
    /// Warm-up, then every measured round of `work`: pgbench on the handler's
    /// `script`, on each of `baselines`, then the backend; `ping_script` is
    /// the `--pgbench-ping` experiment's script.
    pub(super) async fn callback_rounds(
        &mut self,
        work: &CallbackWork<'_>,
        script: &Path,
        baselines: &[Baseline],
        ping_script: Option<&Path>,
    ) -> anyhow::Result<()> {
        let focus = self.focus();
        let warmup = self.args.warmup;
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s each at {focus} clients, discarded)"
            ));
            self.pgbench_callbacks(work, script, focus, warmup, false)
                .await?;
            self.backend_callbacks(work, focus, warmup, false).await?;
        }
        let name = work.name();
        let counts = match work {
            CallbackWork::New => self.args.clients.clone(),
            CallbackWork::Duplicate { .. } => self.args.storm_counts(),
        };
        for (clients, round) in self.schedule(&counts) {
            let measured = clients == focus && round == 0;
            let run = self
                .pgbench_callbacks(work, script, clients, self.args.duration, measured)
                .await?;
            say(run.line(&self.label(&format!("pgbench {name}"), round), "tps  "));
            work.series(&mut self.results).pgbench.push(run);
            for baseline in baselines {
                let run = self
                    .pgbench_callbacks(work, &baseline.script, clients, self.args.duration, false)
                    .await?;
                say(run.line(&format!("  pgbench {:?}", baseline.path), "tps  "));
                self.results.baseline_runs(baseline.path).push(run);
            }
            if let Some(ping_script) = ping_script.filter(|_| round == 0) {
                let run = self
                    .pgbench_callbacks(work, ping_script, clients, self.args.duration, false)
                    .await?;
                say(run.line(&format!("pgbench + ping {name}"), "tps  "));
                work.series(&mut self.results).pgbench_ping.push(run);
            }
            let run = self
                .backend_callbacks(work, clients, self.args.duration, measured)
                .await?;
            say(run.line(&self.label(&format!("backend {name}"), round), "req/s"));
            work.series(&mut self.results).backend.push(run);
        }
        Ok(())
    }

    /// One pgbench run of `work` with `script`.
    async fn pgbench_callbacks(
        &mut self,
        work: &CallbackWork<'_>,
        script: &Path,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        match work {
            CallbackWork::New => self.pgbench_new(script, clients, seconds, measured).await,
            CallbackWork::Duplicate { vars, .. } => {
                self.pgbench_dup(script, vars, clients, seconds, measured)
                    .await
            }
        }
    }

    /// One run of `work` through the backend.
    async fn backend_callbacks(
        &mut self,
        work: &CallbackWork<'_>,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        match work {
            CallbackWork::New => self.backend_new(clients, seconds, measured).await,
            CallbackWork::Duplicate { callback, .. } => {
                self.backend_dup(callback, clients, seconds, measured).await
            }
        }
    }
}
