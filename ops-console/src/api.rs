//! The console's one typed client of the backend's `/api/ops/*` API.
//!
//! Every non-2xx answer becomes an [`ApiError`] carrying the API's error body.
//! The operator's credential is the session cookie the sign-in sets (the same
//! `checkout_session` cookie as shoppers'); the admin token is sent once, in the
//! sign-in body, and kept nowhere. Writes carry their body as
//! `application/json`, which the backend's CSRF rule requires.

use api_types::api::Reconciliation;
use api_types::ops::{
    Activity, AnomalyState, OperatorInfo, OperatorSignIn, OrderTimeline, ResolveAnomaly,
    ReviewAnomaly, SearchHit,
};
use api_types::{AnomalyKind, ErrorBody, ErrorCode};
use gloo_net::http::{Request, RequestBuilder};
use gloo_timers::callback::Timeout;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How long a call may take before it counts as a network failure.
const TIMEOUT_MS: u32 = 10_000;

/// Why a call did not produce the expected 2xx body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// No answer arrived: offline, connection refused, or our timeout fired.
    #[error("network error: {0}")]
    Network(String),
    /// A non-2xx answer with the API's error body.
    #[error("HTTP {status} {}: {}", body.error.code, body.error.message)]
    Server {
        /// The HTTP status.
        status: u16,
        /// The decoded `{"error":{"code","message"}}` body.
        body: ErrorBody,
    },
    /// A non-2xx answer without our error body (e.g. a proxy's 502 page).
    #[error("HTTP {status} without an error body")]
    Http {
        /// The HTTP status.
        status: u16,
    },
    /// A 2xx answer whose body did not decode into the expected type.
    #[error("unexpected answer: {0}")]
    Decode(String),
}

impl ApiError {
    /// The API's error code, when the server answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Server { body, .. } => Some(body.error.code),
            _ => None,
        }
    }

    /// True when there is no operator session (never signed in, signed out, expired).
    pub fn is_unauthenticated(&self) -> bool {
        self.code() == Some(ErrorCode::Unauthenticated)
    }

    /// One line for the operator: the server's code and message, or what failed.
    pub fn explain(&self) -> String {
        match self {
            Self::Server { body, .. } => format!("{}: {}", body.error.code, body.error.message),
            Self::Http { status } => format!("The server answered HTTP {status}."),
            Self::Network(_) => "No answer from the server: check the connection.".to_owned(),
            Self::Decode(why) => format!("The server's answer could not be read: {why}"),
        }
    }
}

/// `POST /api/ops/session`: exchanges the admin token for an operator session.
pub async fn sign_in(body: &OperatorSignIn) -> Result<OperatorInfo, ApiError> {
    call(Request::post("/api/ops/session"), Some(encode(body)?)).await
}

/// `DELETE /api/ops/session`: ends the operator session (204).
pub async fn sign_out() -> Result<(), ApiError> {
    send(Request::delete("/api/ops/session"), Some(String::new()))
        .await
        .map(drop)
}

/// `GET /api/ops/me`: who is signed in (401 `UNAUTHENTICATED` without an operator session).
pub async fn me() -> Result<OperatorInfo, ApiError> {
    call(Request::get("/api/ops/me"), None).await
}

/// `GET /api/ops/anomalies`: the queue, newest first.
pub async fn anomalies(
    state: AnomalyState,
    kind: Option<AnomalyKind>,
) -> Result<Vec<ReviewAnomaly>, ApiError> {
    call(Request::get(&anomalies_url(state, kind)), None).await
}

/// The queue's URL for these filters.
pub fn anomalies_url(state: AnomalyState, kind: Option<AnomalyKind>) -> String {
    let mut url = format!("/api/ops/anomalies?state={}&limit=200", state_name(state));
    if let Some(kind) = kind {
        url.push_str("&kind=");
        url.push_str(kind.as_str());
    }
    url
}

/// The wire spelling of a queue filter.
pub fn state_name(state: AnomalyState) -> &'static str {
    match state {
        AnomalyState::Open => "open",
        AnomalyState::Resolved => "resolved",
        AnomalyState::All => "all",
    }
}

/// `GET /api/ops/anomalies/{anomaly_id}`.
pub async fn anomaly(anomaly_id: i64) -> Result<ReviewAnomaly, ApiError> {
    call(
        Request::get(&format!("/api/ops/anomalies/{anomaly_id}")),
        None,
    )
    .await
}

/// `POST /api/ops/anomalies/{anomaly_id}/resolve`: the resolved anomaly.
pub async fn resolve(anomaly_id: i64, note: &str) -> Result<ReviewAnomaly, ApiError> {
    let body = encode(&ResolveAnomaly {
        note: note.to_owned(),
    })?;
    let url = format!("/api/ops/anomalies/{anomaly_id}/resolve");
    call(Request::post(&url), Some(body)).await
}

/// `GET /api/ops/orders/{order_no}/timeline`.
pub async fn timeline(order_no: &str) -> Result<OrderTimeline, ApiError> {
    let url = format!("/api/ops/orders/{}/timeline", encode_component(order_no));
    call(Request::get(&url), None).await
}

/// `GET /api/ops/search?q=...`.
pub async fn search(query: &str) -> Result<Vec<SearchHit>, ApiError> {
    let url = format!("/api/ops/search?q={}", encode_component(query));
    call(Request::get(&url), None).await
}

/// `GET /api/ops/activity`: the last hour, minute by minute.
pub async fn activity() -> Result<Activity, ApiError> {
    call(Request::get("/api/ops/activity"), None).await
}

/// `GET /api/ops/reconciliations/{date}`.
pub async fn reconciliation(date: &str) -> Result<Reconciliation, ApiError> {
    let url = format!("/api/ops/reconciliations/{}", encode_component(date));
    call(Request::get(&url), None).await
}

fn encode(body: &impl Serialize) -> Result<String, ApiError> {
    serde_json::to_string(body).map_err(|e| ApiError::Decode(e.to_string()))
}

/// Sends one request and decodes its 2xx answer.
async fn call<T: DeserializeOwned>(
    builder: RequestBuilder,
    json_body: Option<String>,
) -> Result<T, ApiError> {
    let text = send(builder, json_body)
        .await?
        .text()
        .await
        .map_err(|e| ApiError::Decode(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| ApiError::Decode(e.to_string()))
}

/// Sends one request (`json_body`, even empty, goes as `application/json`);
/// a 2xx answer is returned unread, anything else becomes an [`ApiError`].
async fn send(
    builder: RequestBuilder,
    json_body: Option<String>,
) -> Result<gloo_net::http::Response, ApiError> {
    let controller = web_sys::AbortController::new().ok();
    let builder = builder
        .header("accept", "application/json")
        .abort_signal(controller.as_ref().map(|c| c.signal()).as_ref());
    let timer = controller.map(|c| Timeout::new(TIMEOUT_MS, move || c.abort()));
    let sent = match json_body {
        Some(text) => {
            let request = builder
                .header("content-type", "application/json")
                .body(text)
                .map_err(|e| ApiError::Decode(e.to_string()))?;
            request.send().await
        }
        None => builder.send().await,
    };
    let response = sent.map_err(|e| ApiError::Network(e.to_string()))?;
    // The answer arrived; from here on the timer must not abort reading its body.
    drop(timer);
    if response.ok() {
        return Ok(response);
    }
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    Err(error_from_answer(status, &text))
}

/// Turns a non-2xx answer into an [`ApiError`]: our error body when it is one.
pub fn error_from_answer(status: u16, body: &str) -> ApiError {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(body) => ApiError::Server { status, body },
        Err(_) => ApiError::Http { status },
    }
}

/// Percent-encodes one URL path segment or query value (everything but RFC 3986
/// unreserved characters).
pub fn encode_component(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_body_keeps_its_code_and_only_a_missing_session_is_unauthenticated() {
        let signed_out = error_from_answer(
            401,
            r#"{"error":{"code":"UNAUTHENTICATED","message":"sign in"}}"#,
        );
        assert!(signed_out.is_unauthenticated());
        let wrong_token = error_from_answer(
            401,
            r#"{"error":{"code":"INVALID_CREDENTIALS","message":"no"}}"#,
        );
        assert_eq!(wrong_token.code(), Some(ErrorCode::InvalidCredentials));
        assert!(!wrong_token.is_unauthenticated());
        assert_eq!(
            error_from_answer(502, "<html>Bad Gateway</html>"),
            ApiError::Http { status: 502 }
        );
    }

    #[test]
    fn the_queue_url_carries_its_filters() {
        assert_eq!(
            anomalies_url(AnomalyState::Open, None),
            "/api/ops/anomalies?state=open&limit=200"
        );
        assert_eq!(
            anomalies_url(AnomalyState::All, Some(AnomalyKind::CallbackConflict)),
            "/api/ops/anomalies?state=all&limit=200&kind=CALLBACK_CONFLICT"
        );
    }

    #[test]
    fn search_text_and_order_numbers_are_escaped() {
        assert_eq!(encode_component("ORD-123_a.b~"), "ORD-123_a.b~");
        assert_eq!(encode_component("ada@example.com"), "ada%40example.com");
        assert_eq!(encode_component("a/b c&d"), "a%2Fb%20c%26d");
    }
}
