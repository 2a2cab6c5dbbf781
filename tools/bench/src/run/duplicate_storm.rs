//! The duplicate-storm step: one callback delivered once, then repeated by
//! every client, through pgbench on `bench::handler_sql::DUPLICATE_SQL` and
//! through the backend.
//!
//! Each side first charges its order once for real, so every measured
//! operation takes the duplicate path and none charges again.

use super::callback_rounds::{Baseline, CallbackWork};
use super::new_callbacks::new_callback_vars;
use super::windows::Side;
use super::{Bench, say};
use crate::load::{self, Job, Prepared};
use crate::pgbench::{self, CallbackPath, Invocation};
use crate::postgres::{CALLBACK_PREFIX, PAYMENT_PREFIX, order_amount, order_no};
use crate::stats::Run;
use std::path::Path;

impl Bench {
    pub(super) async fn step_duplicate(&mut self) -> anyhow::Result<()> {
        say(
            "==> Duplicate storm: one callback id; pgbench on bench::handler_sql::DUPLICATE_SQL (the handler's one \
             statement) and DUPLICATE_LOOKUP_SQL (the least a duplicate costs), then the backend",
        );
        let new_script = self
            .write_script(CallbackPath::New, false, "new_callback.sql")
            .await?;
        let (script, ping_script) = self
            .write_scripts(CallbackPath::Duplicate, "duplicate_callback")
            .await?;

        // pgbench side: charge one order once with the new-callback script, then repeat its id.
        self.pg_stock.ensure_handed_over(1).await?;
        let k = self.pg_stock.take(1);
        let first = Invocation {
            script: &new_script,
            server_args: self.server.cli_args(),
            database: &self.pg_db,
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
        let mut dup_vars = vec![
            (
                "dup_callback_id".to_owned(),
                format!("{CALLBACK_PREFIX}{k}"),
            ),
            ("dup_order_no".to_owned(), order_no(k)),
            ("dup_payment_id".to_owned(), format!("{PAYMENT_PREFIX}{k}")),
            ("dup_amount".to_owned(), order_amount(k).to_string()),
        ];
        dup_vars.extend(pgbench::constants(CallbackPath::Duplicate));

        // Backend side: the same, over HTTP.
        let addr = self.backend_addr().await?;
        self.http_stock.ensure_handed_over(1).await?;
        let k = self.http_stock.take(1);
        let callback = self.signer.callback(k)?;
        let status = load::send_once(addr, &callback).await?;
        anyhow::ensure!(
            status == hyper::StatusCode::OK,
            "the first delivery answered {status}"
        );

        let work = CallbackWork::Duplicate {
            vars: &dup_vars,
            callback: &callback,
        };
        let baselines = [Baseline {
            path: CallbackPath::DuplicateLookup,
            script: self
                .write_script(CallbackPath::DuplicateLookup, false, "duplicate_lookup.sql")
                .await?,
        }];
        self.callback_rounds(&work, &script, &baselines, ping_script.as_deref())
            .await
    }

    /// One pgbench run repeating the delivered callback.
    pub(super) async fn pgbench_dup(
        &mut self,
        script: &Path,
        vars: &[(String, String)],
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let run = self
            .pgbench_window(script, vars.to_vec(), clients, seconds, measured, "dup")
            .await?;
        self.record_statements(measured, Side::Pgbench, "duplicates", clients, run.ok)
            .await;
        Ok(run)
    }

    /// One run of the delivered callback repeated through the backend.
    pub(super) async fn backend_dup(
        &mut self,
        callback: &Prepared,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let addr = self.backend_addr().await?;
        // Same id, same body; a fresh signature time keeps it inside the 5-minute tolerance.
        let callback = self.signer.resign(callback)?;
        let jobs = (0..clients)
            .map(|_| Job::Repeat(callback.clone()))
            .collect();
        self.before_run(Side::Backend, measured).await?;
        let run = self.load(addr, jobs, seconds, "duplicates").await?;
        self.record_statements(measured, Side::Backend, "duplicates", clients, run.ok)
            .await;
        Ok(run)
    }
}
