//! A small HTTP/1.1 load generator: N workers, each on its own keep-alive
//! connection, sending one request at a time for a fixed duration.
//!
//! Requests are prepared before the timed window (callbacks are signed ahead),
//! so the window measures the server, not the client. A worker records the time
//! from sending a request to having read the whole answer.

use crate::stats::{Latency, Run};
use anyhow::Context;
use api_types::api::{PayRequest, RequestToken};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONTENT_TYPE, COOKIE, HOST, HeaderMap, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// A request ready to send, cheap to clone (the body is shared).
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Path and query.
    pub path: String,
    /// Headers besides `host`.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

impl Prepared {
    /// A `POST` with a JSON body.
    pub fn post_json(path: String, body: Bytes) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Self {
            path,
            headers,
            body,
        }
    }

    fn request(&self, host: &HeaderValue) -> anyhow::Result<Request<Full<Bytes>>> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.path.as_str())
            .body(Full::new(self.body.clone()))?;
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        headers.insert(HOST, host.clone());
        Ok(request)
    }
}

/// What one worker sends.
#[derive(Debug)]
pub enum Job {
    /// Distinct requests, sent in order, each expecting `200`; the worker stops
    /// early (and says so) if they run out.
    Queue(VecDeque<Prepared>),
    /// Like [`Job::Queue`], but each request expects `status` (say `202` for a
    /// pay whose token was issued before the window).
    Expect {
        /// The requests, sent in order.
        queue: VecDeque<Prepared>,
        /// The status a success answers with.
        status: StatusCode,
    },
    /// The same request over and over, expecting `200`.
    Repeat(Prepared),
    /// "Pay now" for each order in turn: `request-token` (`201`), then `pay` (`202`).
    PayNow {
        /// The orders, paid in turn.
        orders: VecDeque<String>,
        /// The `Cookie` header of the session of the shopper who owns them.
        cookie: HeaderValue,
    },
}

/// The result of a load run.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One run per measured operation: the callback (or the pay alone); or the
    /// pay-now pair, the token and the pay.
    pub runs: Vec<Run>,
    /// Workers that ran out of prepared requests before the end.
    pub exhausted_workers: usize,
    /// How long the window really lasted (until the last answer).
    pub window: Duration,
}

#[derive(Default)]
struct WorkerTally {
    /// Latencies (µs) per measured operation.
    latencies: Vec<Vec<u64>>,
    ok: u64,
    errors: BTreeMap<String, u64>,
    exhausted: bool,
    finished: Option<Instant>,
}

impl WorkerTally {
    fn error(&mut self, kind: String) {
        *self.errors.entry(kind).or_default() += 1;
    }
}

struct Conn {
    addr: SocketAddr,
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("cannot connect to {addr}"))?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Self { addr, sender })
    }

    async fn send(&mut self, request: Request<Full<Bytes>>) -> anyhow::Result<(StatusCode, Bytes)> {
        if self.sender.ready().await.is_err() {
            *self = Self::open(self.addr).await?;
        }
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    async fn reopen(&mut self) {
        if let Ok(fresh) = Self::open(self.addr).await {
            *self = fresh;
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Open keep-alive connections, one per worker.
pub struct Connections {
    conns: Vec<Conn>,
    host: HeaderValue,
}

/// Opens `count` connections to `addr`.
pub async fn connect(addr: SocketAddr, count: usize) -> anyhow::Result<Connections> {
    let mut conns = Vec::with_capacity(count);
    for _ in 0..count {
        conns.push(Conn::open(addr).await?);
    }
    Ok(Connections {
        conns,
        host: HeaderValue::from_str(&addr.to_string())?,
    })
}

/// Sends one request on a fresh connection; returns the status.
pub async fn send_once(addr: SocketAddr, prepared: &Prepared) -> anyhow::Result<StatusCode> {
    let mut conn = Conn::open(addr).await?;
    let host = HeaderValue::from_str(&addr.to_string())?;
    let (status, _) = conn.send(prepared.request(&host)?).await?;
    Ok(status)
}

/// Runs one job per connection from `start` for `duration`; each worker then
/// finishes its request in flight.
pub async fn run(
    connections: Connections,
    jobs: Vec<Job>,
    start: Instant,
    duration: Duration,
) -> anyhow::Result<Outcome> {
    let Connections { conns, host } = connections;
    anyhow::ensure!(conns.len() == jobs.len(), "one job per connection");
    let clients = jobs.len();
    let deadline = start + duration;
    let mut workers = Vec::with_capacity(clients);
    for (job, conn) in jobs.into_iter().zip(conns) {
        let host = host.clone();
        workers.push(tokio::spawn(work(conn, host, job, start, deadline)));
    }
    let mut tallies = Vec::with_capacity(clients);
    for worker in workers {
        tallies.push(worker.await?);
    }

    let operations = tallies.iter().map(|t| t.latencies.len()).max().unwrap_or(1);
    let finished = tallies
        .iter()
        .filter_map(|t| t.finished)
        .max()
        .unwrap_or(deadline);
    let window = finished.saturating_duration_since(start);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for tally in &tallies {
        for (kind, count) in &tally.errors {
            *errors.entry(kind.clone()).or_default() += count;
        }
    }
    let ok: u64 = tallies.iter().map(|t| t.ok).sum();
    let error_count: u64 = errors.values().sum();
    let mut runs = Vec::with_capacity(operations);
    for op in 0..operations {
        let mut latencies: Vec<u64> = tallies
            .iter_mut()
            .flat_map(|t| std::mem::take(t.latencies.get_mut(op).unwrap_or(&mut Vec::new())))
            .collect();
        runs.push(Run {
            clients,
            ok,
            errors: error_count,
            error_kinds: errors.clone(),
            rate: ok as f64 / window.as_secs_f64().max(1e-3),
            latency: Latency::from_micros(&mut latencies),
            cpu: None,
            wal: None,
        });
    }
    Ok(Outcome {
        runs,
        exhausted_workers: tallies.iter().filter(|t| t.exhausted).count(),
        window,
    })
}

async fn work(
    mut conn: Conn,
    host: HeaderValue,
    mut job: Job,
    start: Instant,
    deadline: Instant,
) -> WorkerTally {
    let operations = if matches!(job, Job::PayNow { .. }) {
        3
    } else {
        1
    };
    let mut tally = WorkerTally {
        latencies: vec![Vec::with_capacity(4096); operations],
        ..WorkerTally::default()
    };
    tokio::time::sleep_until(start).await;
    while Instant::now() < deadline {
        match &mut job {
            Job::Queue(queue) => {
                let Some(prepared) = queue.pop_front() else {
                    tally.exhausted = true;
                    break;
                };
                one(&mut conn, &host, &prepared, StatusCode::OK, &mut tally).await;
            }
            Job::Expect { queue, status } => {
                let Some(prepared) = queue.pop_front() else {
                    tally.exhausted = true;
                    break;
                };
                one(&mut conn, &host, &prepared, *status, &mut tally).await;
            }
            Job::Repeat(prepared) => {
                one(&mut conn, &host, prepared, StatusCode::OK, &mut tally).await;
            }
            Job::PayNow { orders, cookie } => {
                let Some(order_no) = orders.pop_front() else {
                    tally.exhausted = true;
                    break;
                };
                pay_now(&mut conn, &host, cookie, &order_no, &mut tally).await;
            }
        }
    }
    tally.finished = Some(Instant::now());
    tally
}

/// Sends one request; returns the body and the latency (µs) when the status is
/// `expected`, and counts anything else as an error.
async fn exchange(
    conn: &mut Conn,
    host: &HeaderValue,
    prepared: &Prepared,
    expected: StatusCode,
    tally: &mut WorkerTally,
) -> Option<(Bytes, u64)> {
    let request = match prepared.request(host) {
        Ok(request) => request,
        Err(err) => {
            tally.error(format!("bad request: {err}"));
            return None;
        }
    };
    let sent = Instant::now();
    match conn.send(request).await {
        Ok((status, body)) if status == expected => Some((body, sent.elapsed().as_micros() as u64)),
        Ok((status, body)) => {
            let code = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
                .unwrap_or_default();
            tally.error(format!("HTTP {} {code}", status.as_u16()));
            None
        }
        Err(err) => {
            tally.error(format!("transport: {err}"));
            conn.reopen().await;
            None
        }
    }
}

/// One request of one operation (a callback, or a pay alone): a success is `expected`.
async fn one(
    conn: &mut Conn,
    host: &HeaderValue,
    prepared: &Prepared,
    expected: StatusCode,
    tally: &mut WorkerTally,
) {
    if let Some((_, micros)) = exchange(conn, host, prepared, expected, tally).await {
        tally.latencies[0].push(micros);
        tally.ok += 1;
    }
}

/// Token, then pay; the pair is operation 0 (and counts as the success), then token, then pay.
async fn pay_now(
    conn: &mut Conn,
    host: &HeaderValue,
    cookie: &HeaderValue,
    order_no: &str,
    tally: &mut WorkerTally,
) {
    let mut token_request = Prepared::post_json(
        format!("/api/orders/{order_no}/request-token"),
        Bytes::new(),
    );
    token_request.headers.insert(COOKIE, cookie.clone());
    let Some((body, token_micros)) =
        exchange(conn, host, &token_request, StatusCode::CREATED, tally).await
    else {
        return;
    };
    let Ok(token) = serde_json::from_slice::<RequestToken>(&body) else {
        tally.error("request-token answer is not a token".into());
        return;
    };
    let Ok(pay_body) = serde_json::to_vec(&PayRequest {
        request_token: token.request_token,
    }) else {
        tally.error("cannot encode the pay request".into());
        return;
    };
    let mut pay_request =
        Prepared::post_json(format!("/api/orders/{order_no}/pay"), pay_body.into());
    pay_request.headers.insert(COOKIE, cookie.clone());
    if let Some((_, pay_micros)) =
        exchange(conn, host, &pay_request, StatusCode::ACCEPTED, tally).await
    {
        tally.latencies[0].push(token_micros + pay_micros);
        tally.latencies[1].push(token_micros);
        tally.latencies[2].push(pay_micros);
        tally.ok += 1;
    }
}
