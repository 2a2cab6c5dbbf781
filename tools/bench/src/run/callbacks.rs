//! The two callback steps. New callbacks: pgbench on the handler's one
//! statement (and on the general path's statements, one round trip each and
//! pipelined), then the same callbacks signed and posted to the backend, each
//! for a fresh order. The duplicate storm: one callback delivered once, then
//! repeated by every client, through pgbench and through the backend.
//!
//! Both sides take orders from stocks of the same size, so neither runs out
//! first, and callbacks are signed before the window opens so signing is not
//! timed.

use super::{Bench, say};
use crate::load::{self, Job, Prepared};
use crate::pgbench::{self, CallbackPath, CallbackPath::*, Invocation};
use crate::postgres::{CALLBACK_PREFIX, PAYMENT_PREFIX, order_amount, order_no};
use crate::report::Results;
use crate::stats::Run;
use hyper::StatusCode;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio::time::Instant;

/// What one callback step sends, pgbench and the backend alike.
enum Work<'a> {
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

impl Results {
    /// Where the runs of pgbench on `path` are kept.
    fn pgbench_runs(&mut self, path: CallbackPath) -> &mut Vec<Run> {
        match path {
            New => &mut self.new_pgbench,
            NewStatements => &mut self.new_pgbench_statements,
            NewPipelined => &mut self.new_pgbench_pipelined,
            Duplicate => &mut self.dup_pgbench,
            DuplicateLookup => &mut self.dup_pgbench_lookup,
        }
    }
}

/// The scripts of `paths`, written into the work folder: the first is the
/// handler's own, the others the same work done another way.
fn scripts(bench: &Bench, paths: &[CallbackPath]) -> anyhow::Result<Vec<(CallbackPath, PathBuf)>> {
    paths
        .iter()
        .map(|&path| {
            let name = format!("{path:?}.sql").to_lowercase();
            Ok((path, bench.write_script(&name, pgbench::script(path))?))
        })
        .collect()
}

impl Bench {
    pub(super) async fn step_new(&mut self) -> anyhow::Result<()> {
        say(
            "==> New callbacks: pgbench on bench::handler_sql::NEW_CHARGE_SQL (the handler's one statement), \
             on GENERAL_CHARGE_SQL one statement at a time and pipelined, then POST /api/payments/callback",
        );
        let scripts = scripts(self, &[New, NewStatements, NewPipelined])?;
        self.backend_addr().await?;
        self.rounds(&Work::New, &scripts).await
    }

    pub(super) async fn step_duplicate(&mut self) -> anyhow::Result<()> {
        say(
            "==> Duplicate storm: one callback id; pgbench on bench::handler_sql::DUPLICATE_SQL (the handler's one \
             statement) and DUPLICATE_LOOKUP_SQL (the least a duplicate costs), then the backend",
        );
        let new_script = self.write_script("new.sql", pgbench::script(New))?;
        let scripts = scripts(self, &[Duplicate, DuplicateLookup])?;

        // pgbench's side: charge one order once with the new-callback script, then repeat its id.
        self.pg_stock.ensure_handed_over(1).await?;
        let k = self.pg_stock.take(1);
        let url = self.database_url(&self.pg_db);
        let first = Invocation {
            script: &new_script,
            database_url: &url,
            clients: 1,
            duration: None,
            vars: new_callback_vars(k, 1, self.args.accounts),
            log_prefix: None,
        }
        .run()
        .await?;
        anyhow::ensure!(
            first.ok == 1 && first.errors == 0,
            "the first delivery for pgbench's duplicate failed: {:?}",
            first.error_kinds
        );
        let mut vars = vec![
            ("dup_callback_id".into(), format!("{CALLBACK_PREFIX}{k}")),
            ("dup_order_no".into(), order_no(k)),
            ("dup_payment_id".into(), format!("{PAYMENT_PREFIX}{k}")),
            ("dup_amount".into(), order_amount(k).to_string()),
        ];
        vars.extend(pgbench::constants(Duplicate));

        // The backend's side: the same, over HTTP.
        let addr = self.backend_addr().await?;
        self.http_stock.ensure_handed_over(1).await?;
        let k = self.http_stock.take(1);
        let callback = self.signer.callback(k)?;
        let status = load::send_once(addr, &callback).await?;
        anyhow::ensure!(
            status == StatusCode::OK,
            "the first delivery answered {status}"
        );

        let work = Work::Duplicate {
            vars: &vars,
            callback: &callback,
        };
        self.rounds(&work, &scripts).await
    }

    /// A discarded warm-up at the focus count, then at every client count and
    /// round: pgbench on each script, then the backend, back to back.
    async fn rounds(
        &mut self,
        work: &Work<'_>,
        scripts: &[(CallbackPath, PathBuf)],
    ) -> anyhow::Result<()> {
        let (focus, warmup) = (self.focus(), self.args.warmup);
        let (name, counts) = match work {
            Work::New => ("new callback", self.args.clients.clone()),
            Work::Duplicate { .. } => ("duplicate", self.args.storm_counts()),
        };
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s each at {focus} clients, discarded)"
            ));
            self.pgbench_callbacks(work, &scripts[0].1, focus, warmup)
                .await?;
            self.backend_callbacks(work, focus, warmup).await?;
        }
        let seconds = self.args.duration;
        for clients in counts {
            for round in 0..self.args.rounds {
                for (path, script) in scripts {
                    let run = self
                        .pgbench_callbacks(work, script, clients, seconds)
                        .await?;
                    say(run.line(&self.label(&format!("pgbench {path:?}"), round), "tps  "));
                    self.results.pgbench_runs(*path).push(run);
                }
                let run = self.backend_callbacks(work, clients, seconds).await?;
                say(run.line(&self.label(&format!("backend {name}"), round), "req/s"));
                match work {
                    Work::New => self.results.new_backend.push(run),
                    Work::Duplicate { .. } => self.results.dup_backend.push(run),
                }
            }
        }
        Ok(())
    }

    /// One pgbench run of `work` with `script`.
    async fn pgbench_callbacks(
        &mut self,
        work: &Work<'_>,
        script: &Path,
        clients: usize,
        seconds: u64,
    ) -> anyhow::Result<Run> {
        match work {
            Work::New => self.pgbench_new(script, clients, seconds).await,
            Work::Duplicate { vars, .. } => {
                self.pgbench_window(script, vars.to_vec(), clients, seconds, "dup")
                    .await
            }
        }
    }

    /// One run of `work` through the backend.
    async fn backend_callbacks(
        &mut self,
        work: &Work<'_>,
        clients: usize,
        seconds: u64,
    ) -> anyhow::Result<Run> {
        let addr = self.backend_addr().await?;
        match work {
            Work::New => self.backend_new_at(addr, clients, seconds).await,
            Work::Duplicate { callback, .. } => {
                // Same id, same body; a fresh signature time keeps it inside the 5-minute tolerance.
                let callback = self.signer.resign(callback)?;
                let jobs = (0..clients)
                    .map(|_| Job::Repeat(callback.clone()))
                    .collect();
                self.load(addr, jobs, seconds, "duplicates").await
            }
        }
    }

    /// Makes sure both sides have the orders a run of `seconds` at `clients`
    /// may use; returns that count. Both stocks grow together, so the two
    /// sides' tables stay alike.
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
    ) -> anyhow::Result<Run> {
        self.stock_orders(seconds, clients).await?;
        let vars = new_callback_vars(self.pg_stock.next(), clients, self.args.accounts);
        let run = self
            .pgbench_window(script, vars, clients, seconds, "new")
            .await?;
        self.pg_stock.skip_used("payment_callbacks").await?;
        self.rate_hint = self.rate_hint.max(run.rate);
        Ok(run)
    }

    /// One run of new callbacks sent to `addr` (a backend, or a balancer in
    /// front of backends on the backend's database), signed before the window opens.
    pub(super) async fn backend_new_at(
        &mut self,
        addr: SocketAddr,
        clients: usize,
        seconds: u64,
    ) -> anyhow::Result<Run> {
        let need = self.stock_orders(seconds, clients).await?;
        let base = self.http_stock.next();
        let per_worker = (need as usize).div_ceil(clients);
        let signing = Instant::now();
        let mut jobs = Vec::with_capacity(clients);
        for worker in 0..clients {
            let queue = (0..per_worker)
                .map(|i| self.signer.callback(base + (worker + clients * i) as i64))
                .collect::<anyhow::Result<VecDeque<_>>>()?;
            jobs.push(Job::Queue {
                queue,
                status: StatusCode::OK,
            });
        }
        let signing_us =
            signing.elapsed().as_secs_f64() * 1e6 / (per_worker * clients).max(1) as f64;
        let fastest = self
            .results
            .signing_us
            .map_or(signing_us, |s| s.min(signing_us));
        self.results.signing_us = Some(fastest);
        let run = self.load(addr, jobs, seconds, "new callbacks").await?;
        self.http_stock.skip_used("payment_callbacks").await?;
        self.rate_hint = self.rate_hint.max(run.rate);
        Ok(run)
    }
}

/// pgbench's variables for orders taken in turn: client `c`'s `n`-th
/// transaction takes order `base + c + clients * n`, so no two clients share
/// one; `accounts` says which account order `k` belongs to.
pub(super) fn new_callback_vars(base: i64, clients: usize, accounts: i64) -> Vec<(String, String)> {
    let mut vars = vec![
        ("i".to_owned(), "0".to_owned()),
        ("base".to_owned(), base.to_string()),
        ("nclients".to_owned(), clients.to_string()),
        ("accounts".to_owned(), accounts.to_string()),
    ];
    vars.extend(pgbench::constants(New));
    vars
}
