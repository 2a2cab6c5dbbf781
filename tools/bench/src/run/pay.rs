//! The pay step: through the backend, the pay alone (`POST .../pay`, its
//! request token issued before the window, so a run is pays only); then
//! pgbench on pay's one statement and `redis-benchmark`'s `GETDEL`, the two
//! halves of the limit, at the same client counts.
//!
//! The backend gets a process of its own whose platform delays its callbacks
//! by an hour, so no callback lands in the window.

use super::callbacks::new_callback_vars;
use super::{Bench, say};
use crate::load::{Job, Prepared};
use crate::pgbench;
use crate::postgres::{BENCH_SHOPPER_EMAIL, BENCH_SHOPPER_PASSWORD, order_no};
use crate::redis_bench;
use crate::stats::Run;
use anyhow::Context;
use api_types::api::{PayRequest, RequestToken};
use futures::StreamExt;
use hyper::StatusCode;
use hyper::header::{COOKIE, HeaderValue};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Sandbox callback delay for the pay's backend: an hour, so no callback lands while measuring.
const PAY_CALLBACK_DELAY_MS: u64 = 3_600_000;

/// Request tokens issued at once before a window.
const TOKEN_CONCURRENCY: usize = 32;

/// The least rate (pays/s) a run's order stock is sized for.
const PAY_MIN_RATE: f64 = 5_000.0;

impl Bench {
    pub(super) async fn step_pay(&mut self) -> anyhow::Result<()> {
        say(
            "==> Pay (its token issued before the window), then pgbench on its statement, then redis-benchmark",
        );
        let addr = self.start_backend("pay", PAY_CALLBACK_DELAY_MS).await?;
        self.pay_cookie = Some(sign_in(addr).await?);
        let (focus, warmup) = (self.focus(), self.args.warmup);
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s at {focus} clients, discarded)"
            ));
            self.backend_pay(addr, focus, warmup).await?;
        }
        for clients in self.args.clients.clone() {
            let run = self.backend_pay(addr, clients, self.args.duration).await?;
            say(run.line("backend pay", "pay/s "));
            self.pay_hint = self.pay_hint.max(run.rate);
            self.results.pay_alone.push(run);
        }
        self.stop_backend("pay");

        let script = self.write_script("pay_attempt.sql", pgbench::pay_script())?;
        for clients in self.args.clients.clone() {
            let need =
                self.orders_needed(self.pay_hint.max(PAY_MIN_RATE), self.args.duration, clients);
            self.pg_stock.skip_used("payment_attempts").await?;
            self.pg_stock.ensure(need).await?;
            let vars = new_callback_vars(self.pg_stock.next(), clients, self.args.accounts);
            let run = self
                .pgbench_window(&script, vars, clients, self.args.duration, "pay")
                .await?;
            say(run.line("pgbench pay attempt + hold", "tps  "));
            self.results.pay_pgbench.push(run);
            self.pg_stock.skip_used("payment_attempts").await?;
        }

        let prefix = format!("{}rb:", self.redis_prefix);
        let requests = self.args.redis_requests;
        for clients in self.args.clients.clone() {
            redis_bench::run(&self.redis, &prefix, true, clients, requests).await?;
            let run = redis_bench::run(&self.redis, &prefix, false, clients, requests).await?;
            say(run.line("redis GETDEL", "op/s "));
            self.results.redis_getdel.push(run);
        }
        Ok(())
    }

    /// One run of pays: request tokens for fresh orders are issued before the
    /// window (over HTTP, [`TOKEN_CONCURRENCY`] at a time), then each worker
    /// pays its orders in turn, each pay expecting `202`.
    async fn backend_pay(
        &mut self,
        addr: SocketAddr,
        clients: usize,
        seconds: u64,
    ) -> anyhow::Result<Run> {
        let need = self.orders_needed(self.pay_hint.max(PAY_MIN_RATE), seconds, clients);
        // Orders with a token or an attempt are not fresh.
        self.http_stock.skip_used("payment_attempts").await?;
        self.http_stock.skip_used("request_tokens_issued").await?;
        self.http_stock.ensure(need).await?;
        let base = self.http_stock.next();
        let cookie = self
            .pay_cookie
            .clone()
            .context("the pay runs after signing in")?;
        say(format!(
            "    issuing {need} request tokens for {clients} clients ({TOKEN_CONCURRENCY} at a time)"
        ));
        let client = reqwest::Client::new();
        let issued: Vec<anyhow::Result<Prepared>> = futures::stream::iter(0..need)
            .map(|i| pay_with_new_token(&client, addr, &cookie, order_no(base + i)))
            .buffer_unordered(TOKEN_CONCURRENCY)
            .collect()
            .await;
        let mut queues: Vec<VecDeque<Prepared>> = vec![VecDeque::new(); clients];
        let mut failures = Vec::new();
        for (i, pay) in issued.into_iter().enumerate() {
            match pay {
                Ok(pay) => queues[i % clients].push_back(pay),
                Err(err) => failures.push(format!("{err:#}")),
            }
        }
        if let Some(first) = failures.first() {
            let note = format!(
                "pay at {clients} clients: {} of {need} request tokens could not be issued (first: {first})",
                failures.len()
            );
            say(format!("      {note}"));
            self.results.notes.push(note);
        }
        anyhow::ensure!(
            queues.iter().any(|q| !q.is_empty()),
            "no request token issued for the pay at {clients} clients"
        );
        let jobs = queues
            .into_iter()
            .map(|queue| Job::Queue {
                queue,
                status: StatusCode::ACCEPTED,
            })
            .collect();
        let run = self.load(addr, jobs, seconds, "pay").await;
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
        method: None,
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
