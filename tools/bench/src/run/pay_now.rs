//! The pay-now step: request a token, then pay, through the backend; then the
//! pay alone, its tokens issued before the window; then `redis-benchmark` on
//! the two Redis commands a pair sends (`SET EX NX` and `GETDEL`), at the same
//! client counts.
//!
//! The backend gets a process of its own whose sandbox delays its callbacks by
//! an hour, so no callback lands in the window and a pair is pay-now's work alone.

use super::new_callbacks::new_callback_vars;
use super::windows::Side;
use super::{Bench, say};
use crate::load::{Job, Prepared};
use crate::postgres::{BENCH_SHOPPER_EMAIL, BENCH_SHOPPER_PASSWORD, order_no};
use crate::redis_bench::{self, RedisCommand};
use crate::stats::Run;
use crate::{pgbench, profile};
use anyhow::Context;
use api_types::api::{PayRequest, RequestToken};
use futures::StreamExt;
use hyper::StatusCode;
use hyper::header::{COOKIE, HeaderValue};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// Sandbox callback delay for the pay-now phase: an hour, so no callback lands while measuring.
const PAY_CALLBACK_DELAY_MS: u64 = 3_600_000;

/// Request tokens issued at once before a pay-alone window.
const TOKEN_CONCURRENCY: usize = 32;

/// The least pay-alone rate (pays/s) the order stock of a pay-alone run is
/// sized for; a pay alone is faster than a pair, so twice the pair rate when that is more.
const PAY_ALONE_MIN_RATE: f64 = 5_000.0;

/// Progress is said every this many tokens issued.
const TOKEN_PROGRESS_EVERY: usize = 10_000;

impl Bench {
    pub(super) async fn step_pay(&mut self) -> anyhow::Result<()> {
        say(format!(
            "==> Pay now (request token, then pay; then the pay alone) with SANDBOX_CALLBACK_DELAY_MS={PAY_CALLBACK_DELAY_MS}, then redis-benchmark"
        ));
        let addr = self.start_backend("pay", PAY_CALLBACK_DELAY_MS).await?;
        self.pay_cookie = Some(sign_in(addr).await?);
        let focus = self.focus();
        let warmup = self.args.warmup;
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s at {focus} clients, discarded)"
            ));
            self.backend_pay(addr, focus, warmup).await?;
        }
        for clients in self.args.clients.clone() {
            let runs = self.backend_pay(addr, clients, self.args.duration).await?;
            let mut runs = runs.into_iter();
            let pair = runs.next().unwrap_or_default();
            say(pair.line("backend pay now (pair)", "pair/s"));
            let token = runs.next().unwrap_or_default();
            let submit = runs.next().unwrap_or_default();
            say(format!(
                "      token p50 {:.2} ms p99 {:.2} ms; pay p50 {:.2} ms p99 {:.2} ms",
                token.latency.p50_ms,
                token.latency.p99_ms,
                submit.latency.p50_ms,
                submit.latency.p99_ms
            ));
            self.results.pay.push(pair);
            self.results.pay_token.push(token);
            self.results.pay_submit.push(submit);
            let alone = self
                .backend_pay_alone(addr, clients, self.args.duration, false)
                .await?;
            say(alone.line("backend pay alone", "pay/s "));
            self.results.pay_alone.push(alone);
        }
        if self.args.profile && self.perf_available().await {
            say(format!(
                "    profiling the pay alone with perf ({} s at {focus} clients, not counted)",
                self.args.duration
            ));
            self.backend_pay_alone(addr, focus, self.args.duration, true)
                .await?;
        }
        self.stop_backend("pay now");
        self.pgbench_pay_rounds().await?;
        self.redis_rounds().await
    }

    /// pgbench on pay's attempt and hold in one statement
    /// (`backend::db::attempts::START_IN_ONE_SQL`) at every client count, each
    /// transaction on a fresh PENDING order of the pgbench database.
    async fn pgbench_pay_rounds(&mut self) -> anyhow::Result<()> {
        let text = pgbench::pay_script()?;
        let script = self.work.join("pay_attempt.sql");
        std::fs::write(&script, &text)?;
        if !self
            .results
            .scripts
            .iter()
            .any(|(n, _)| n == "pay_attempt.sql")
        {
            self.results.scripts.push(("pay_attempt.sql".into(), text));
        }
        for clients in self.args.clients.clone() {
            let measured = clients == self.focus();
            let run = self.pgbench_pay(&script, clients, measured).await?;
            say(run.line("pgbench pay attempt + hold", "tps  "));
            self.results.pay_pgbench.push(run);
        }
        if self.args.profile && self.perf_available().await {
            let focus = self.focus();
            say(format!(
                "    profiling pgbench's attempt + hold with perf ({} s at {focus} clients, not counted)",
                self.args.duration
            ));
            let recording = profile::start(
                &self.work.join("perf-pgbench-pay.data"),
                Duration::from_secs(self.args.duration),
            )?;
            self.pgbench_pay(&script, focus, false).await?;
            let text = recording.finish(None).await?;
            self.results.profiles.push((
                format!("pgbench, pay attempt + hold, {focus} clients"),
                text,
            ));
        }
        Ok(())
    }

    /// One pgbench run of the attempt and hold at `clients`, each transaction
    /// on a fresh PENDING order.
    async fn pgbench_pay(
        &mut self,
        script: &Path,
        clients: usize,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let need = self.orders_needed(self.pay_hint.max(5_000.0), self.args.duration, clients);
        self.pg_stock.skip_used("payment_attempts").await?;
        self.pg_stock.ensure(need).await?;
        let base = self.pg_stock.next();
        let vars = new_callback_vars(base, clients, self.args.accounts);
        let run = self
            .pgbench_window(script, vars, clients, self.args.duration, measured, "pay")
            .await?;
        self.record_statements(
            measured,
            Side::Pgbench,
            "pay attempt + hold",
            clients,
            run.ok,
        )
        .await;
        self.pg_stock.skip_used("payment_attempts").await?;
        Ok(run)
    }

    /// `redis-benchmark` at every client count, under our own key prefix.
    async fn redis_rounds(&mut self) -> anyhow::Result<()> {
        let prefix = format!("{}rb:", self.redis_prefix);
        for clients in self.args.clients.clone() {
            for command in [RedisCommand::SetExNx, RedisCommand::GetDel] {
                let run = redis_bench::run(
                    &self.redis,
                    &prefix,
                    command,
                    clients,
                    self.args.redis_requests,
                )
                .await?;
                say(run.line(&format!("redis {}", command.label()), "op/s "));
                match command {
                    RedisCommand::SetExNx => self.results.redis_set.push(run),
                    RedisCommand::GetDel => self.results.redis_getdel.push(run),
                }
            }
        }
        Ok(())
    }

    /// One pay-now run: the pair's run, then the token call's, then the pay call's.
    async fn backend_pay(
        &mut self,
        addr: SocketAddr,
        clients: usize,
        seconds: u64,
    ) -> anyhow::Result<Vec<Run>> {
        let need = self.orders_needed(self.pay_hint, seconds, clients);
        // Orders handed over for the callback runs are not payable work.
        self.http_stock.skip_used("payment_attempts").await?;
        self.http_stock.ensure(need).await?;
        let base = self.http_stock.next();
        let per_worker = (need as usize).div_ceil(clients);
        let cookie = self
            .pay_cookie
            .clone()
            .context("pay now runs after signing in")?;
        let jobs = (0..clients)
            .map(|worker| Job::PayNow {
                orders: (0..per_worker)
                    .map(|i| order_no(base + (worker + clients * i) as i64))
                    .collect(),
                cookie: cookie.clone(),
            })
            .collect();
        self.before_run(Side::Backend, false).await?;
        let runs = self.load_all(addr, jobs, seconds, "pay now").await?;
        self.http_stock.skip_used("request_tokens_issued").await?;
        if let Some(pair) = runs.first() {
            self.pay_hint = self.pay_hint.max(pair.rate);
        }
        Ok(runs)
    }

    /// One run of the pay alone: request tokens for fresh orders are issued
    /// before the window (over HTTP, [`TOKEN_CONCURRENCY`] at a time), then
    /// each worker pays its orders in turn, each pay expecting `202`. With
    /// `profiled`, `perf` records the window (the tokens' issue left out) and
    /// the run is not counted.
    async fn backend_pay_alone(
        &mut self,
        addr: SocketAddr,
        clients: usize,
        seconds: u64,
        profiled: bool,
    ) -> anyhow::Result<Run> {
        let rate = (2.0 * self.pay_hint).max(PAY_ALONE_MIN_RATE);
        let need = self.orders_needed(rate, seconds, clients);
        self.http_stock.skip_used("payment_attempts").await?;
        self.http_stock.skip_used("request_tokens_issued").await?;
        self.http_stock.ensure(need).await?;
        let base = self.http_stock.next();
        let cookie = self
            .pay_cookie
            .clone()
            .context("pay now runs after signing in")?;
        say(format!(
            "    issuing {need} request tokens for the pay alone at {clients} clients ({TOKEN_CONCURRENCY} at a time)"
        ));
        let client = reqwest::Client::new();
        let mut issued = futures::stream::iter(0..need)
            .map(|i| pay_with_new_token(&client, addr, &cookie, order_no(base + i)))
            .buffer_unordered(TOKEN_CONCURRENCY);
        let mut pays = Vec::with_capacity(usize::try_from(need).unwrap_or_default());
        let (mut failed, mut first_failure) = (0_usize, None);
        while let Some(result) = issued.next().await {
            match result {
                Ok(pay) => pays.push(pay),
                Err(err) => {
                    failed += 1;
                    first_failure.get_or_insert_with(|| format!("{err:#}"));
                }
            }
            let done = pays.len() + failed;
            if done % TOKEN_PROGRESS_EVERY == 0 {
                say(format!("      {done} / {need} tokens issued"));
            }
        }
        drop(issued);
        if let Some(first) = first_failure {
            let note = format!(
                "pay alone at {clients} clients: {failed} of {need} request tokens could not be issued (first: {first})"
            );
            say(format!("      {note}"));
            self.results.notes.push(note);
        }
        anyhow::ensure!(
            !pays.is_empty(),
            "no request token issued for the pay alone at {clients} clients"
        );
        let mut queues: Vec<VecDeque<Prepared>> = (0..clients)
            .map(|_| VecDeque::with_capacity(pays.len().div_ceil(clients)))
            .collect();
        for (i, pay) in pays.into_iter().enumerate() {
            if let Some(queue) = queues.get_mut(i % clients) {
                queue.push_back(pay);
            }
        }
        let jobs = queues
            .into_iter()
            .map(|queue| Job::Expect {
                queue,
                status: StatusCode::ACCEPTED,
            })
            .collect();
        let measured = clients == self.focus() && !profiled;
        self.before_run(Side::Backend, measured).await?;
        let recording = if profiled {
            Some(profile::start(
                &self.work.join("perf-backend-pay-alone.data"),
                Duration::from_secs(seconds),
            )?)
        } else {
            None
        };
        let run = self.load(addr, jobs, seconds, "pay alone").await;
        if let Some(recording) = recording {
            let text = recording
                .finish(self.roots.backends.first().copied())
                .await?;
            self.results
                .profiles
                .push((format!("backend, pay alone, {clients} clients"), text));
        }
        if let Ok(run) = &run {
            self.record_statements(measured, Side::Backend, "pay alone", clients, run.ok)
                .await;
        }
        // Orders with a token but no pay are not fresh either.
        self.http_stock.skip_used("request_tokens_issued").await?;
        self.http_stock.skip_used("payment_attempts").await?;
        run
    }
}

/// Requests a token for `order_no` as the shopper of `cookie`; returns the pay
/// request that spends it, ready to send.
async fn pay_with_new_token(
    client: &reqwest::Client,
    addr: SocketAddr,
    cookie: &HeaderValue,
    order_no: String,
) -> anyhow::Result<Prepared> {
    let response = client
        .post(format!("http://{addr}/api/orders/{order_no}/request-token"))
        .header(reqwest::header::COOKIE, cookie.to_str()?)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .send()
        .await?;
    let status = response.status();
    anyhow::ensure!(
        status == reqwest::StatusCode::CREATED,
        "request-token for {order_no} answered HTTP {}",
        status.as_u16()
    );
    let token: RequestToken = response
        .json()
        .await
        .with_context(|| format!("request-token for {order_no} answered no token"))?;
    let body = serde_json::to_vec(&PayRequest {
        request_token: token.request_token,
    })?;
    let mut pay = Prepared::post_json(format!("/api/orders/{order_no}/pay"), body.into());
    pay.headers.insert(COOKIE, cookie.clone());
    Ok(pay)
}

/// Signs the bench shopper in; returns the `Cookie` header of their session.
async fn sign_in(addr: SocketAddr) -> anyhow::Result<HeaderValue> {
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/api/session"))
        .json(&serde_json::json!({
            "email": BENCH_SHOPPER_EMAIL,
            "password": BENCH_SHOPPER_PASSWORD,
        }))
        .send()
        .await?
        .error_for_status()
        .context("the bench shopper cannot sign in")?;
    let cookie = response.cookies().next().context("sign-in set no cookie")?;
    Ok(HeaderValue::from_str(&format!(
        "{}={}",
        cookie.name(),
        cookie.value()
    ))?)
}
