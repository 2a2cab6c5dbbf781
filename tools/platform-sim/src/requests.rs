//! The requests the simulator received, with the two headers by which a
//! client says who it is (`User-Agent`) and what it reads (`Accept`). A real
//! platform may refuse a request without them (WeChat Pay API v3 does:
//! [`crate::wechatpay`]), so a merchant's tests read this log to check that
//! every call it made carried them. Only the last [`RequestLog::CAPACITY`]
//! are kept, so a long run does not grow without bound.

use crate::Simulator;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// One request as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// The `User-Agent` header, when there was one (and it was text).
    pub user_agent: Option<String>,
    /// The `Accept` header, when there was one (and it was text).
    pub accept: Option<String>,
}

/// The last requests received, oldest first. Cheap to clone: clones share the log.
#[derive(Debug, Clone, Default)]
pub struct RequestLog(Arc<Mutex<VecDeque<ReceivedRequest>>>);

impl RequestLog {
    /// How many requests the log keeps (the oldest go first).
    pub const CAPACITY: usize = 10_000;

    /// The requests kept, oldest first.
    pub fn all(&self) -> Vec<ReceivedRequest> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    fn push(&self, request: ReceivedRequest) {
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if log.len() == Self::CAPACITY {
            log.pop_front();
        }
        log.push_back(request);
    }
}

/// A header's text, when it is there and readable.
fn text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Middleware: logs every request before it is handled.
pub(crate) async fn record(
    State(simulator): State<Simulator>,
    request: Request,
    next: Next,
) -> Response {
    simulator.requests().push(ReceivedRequest {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        user_agent: text(request.headers(), header::USER_AGENT),
        accept: text(request.headers(), header::ACCEPT),
    });
    next.run(request).await
}
