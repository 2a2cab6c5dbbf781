//! A small HTTP/1.1 load generator: N workers, each on its own keep-alive
//! connection, sending one request at a time for a fixed duration.
//!
//! Requests are prepared before the timed window (callbacks are signed ahead),
//! so the window measures the server, not the client. A worker records the time
//! from sending a request to having read the whole answer.

use crate::stats::{Latency, Run};
use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONTENT_TYPE, HOST, HeaderMap, HeaderValue};
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
    /// Distinct requests, sent in order, each a success when it answers
    /// `status`; the worker stops early (and says so) if they run out.
    Queue {
        /// The requests.
        queue: VecDeque<Prepared>,
        /// The status a success answers with.
        status: StatusCode,
    },
    /// The same request over and over, expecting `200`.
    Repeat(Prepared),
}

#[derive(Default)]
struct WorkerTally {
    /// Latencies (µs) of the successes.
    latencies: Vec<u64>,
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

/// Sends one request on a fresh connection; returns the status.
pub async fn send_once(addr: SocketAddr, prepared: &Prepared) -> anyhow::Result<StatusCode> {
    let mut conn = Conn::open(addr).await?;
    let host = HeaderValue::from_str(&addr.to_string())?;
    let (status, _) = conn.send(prepared.request(&host)?).await?;
    Ok(status)
}

/// Opens one keep-alive connection to `addr` per job, then runs the jobs
/// from `start` (connecting is not timed) for `duration`; each worker then
/// finishes its request in flight. Returns the run (its CPU is measured
/// beside it) and how many workers ran out of prepared requests.
pub async fn run(
    addr: SocketAddr,
    jobs: Vec<Job>,
    start: Instant,
    duration: Duration,
) -> anyhow::Result<(Run, usize)> {
    let host = HeaderValue::from_str(&addr.to_string())?;
    let clients = jobs.len();
    let deadline = start + duration;
    let mut workers = Vec::with_capacity(clients);
    for job in jobs {
        let conn = Conn::open(addr).await?;
        workers.push(tokio::spawn(work(conn, host.clone(), job, start, deadline)));
    }
    let mut tallies = Vec::with_capacity(clients);
    for worker in workers {
        tallies.push(worker.await?);
    }
    let finished = tallies
        .iter()
        .filter_map(|t| t.finished)
        .max()
        .unwrap_or(deadline);
    let window = finished.saturating_duration_since(start);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for (kind, count) in tallies.iter().flat_map(|t| &t.errors) {
        *errors.entry(kind.clone()).or_default() += count;
    }
    let mut latencies: Vec<u64> = tallies
        .iter_mut()
        .flat_map(|t| std::mem::take(&mut t.latencies))
        .collect();
    let ok = latencies.len() as u64;
    let run = Run {
        clients,
        ok,
        errors: errors.values().sum(),
        error_kinds: errors,
        rate: ok as f64 / window.as_secs_f64().max(1e-3),
        latency: Latency::from_micros(&mut latencies),
        cpu: None,
    };
    Ok((run, tallies.iter().filter(|t| t.exhausted).count()))
}

async fn work(
    mut conn: Conn,
    host: HeaderValue,
    mut job: Job,
    start: Instant,
    deadline: Instant,
) -> WorkerTally {
    let mut tally = WorkerTally {
        latencies: Vec::with_capacity(4096),
        ..WorkerTally::default()
    };
    tokio::time::sleep_until(start).await;
    while Instant::now() < deadline {
        match &mut job {
            Job::Queue { queue, status } => {
                let Some(prepared) = queue.pop_front() else {
                    tally.exhausted = true;
                    break;
                };
                exchange(&mut conn, &host, &prepared, *status, &mut tally).await;
            }
            Job::Repeat(prepared) => {
                exchange(&mut conn, &host, prepared, StatusCode::OK, &mut tally).await;
            }
        }
    }
    tally.finished = Some(Instant::now());
    tally
}

/// Sends one request: records its latency when it answers `expected`, and
/// counts anything else as an error.
async fn exchange(
    conn: &mut Conn,
    host: &HeaderValue,
    prepared: &Prepared,
    expected: StatusCode,
    tally: &mut WorkerTally,
) {
    let request = match prepared.request(host) {
        Ok(request) => request,
        Err(err) => {
            tally.error(format!("bad request: {err}"));
            return;
        }
    };
    let sent = Instant::now();
    match conn.send(request).await {
        Ok((status, _)) if status == expected => {
            tally.latencies.push(sent.elapsed().as_micros() as u64);
        }
        Ok((status, body)) => {
            let code = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
                .unwrap_or_default();
            tally.error(format!("HTTP {} {code}", status.as_u16()));
        }
        Err(err) => {
            tally.error(format!("transport: {err}"));
            conn.reopen().await;
        }
    }
}
