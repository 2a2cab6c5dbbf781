//! The one typed client of the checkout API.
//!
//! Every call answers `Result<T, ApiError>`: a 2xx body decoded into the
//! `api_types` DTO, or an [`ApiError`] for everything else. A non-2xx answer
//! carrying our error body becomes [`ApiError::Server`] with the
//! [`api_types::ErrorBody`]; anything else that is not a decoded 2xx (no answer,
//! a proxy's HTML error page, a body we cannot read) has its own variant, so
//! the page never branches on message text.
//!
//! Requests go to the page's own origin (`/api/...`); `trunk serve` proxies
//! them to the backend in development, the backend serves the page itself in
//! production and in the browser tests. The session is the backend's HttpOnly
//! cookie, which the browser sends by itself; the page never sees it. Every
//! state-changing call declares `Content-Type: application/json` (the backend
//! refuses any other with 415, its CSRF rule).

use api_types::api::{
    CreateOrder, Me, Order, PayAccepted, PayRequest, PlatformInfo, Product, RequestToken, SignIn,
};
use api_types::{Currency, ErrorBody, ErrorCode, RefundRequester, RefundStatus};
use gloo_net::http::{Request, RequestBuilder};
use gloo_timers::callback::Timeout;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

/// How long a read (`GET`) may take before it counts as a network failure.
const READ_TIMEOUT_MS: u32 = 10_000;
/// How long a write may take. A pay request that times out is retried with the
/// same token, which the backend answers by replaying its first answer.
const WRITE_TIMEOUT_MS: u32 = 10_000;

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
        /// Seconds from a `Retry-After` header, when the server sent one.
        retry_after_secs: Option<u32>,
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

    /// The HTTP status, when there was an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Server { status, .. } | Self::Http { status } => Some(*status),
            Self::Network(_) | Self::Decode(_) => None,
        }
    }

    /// True when the request probably never reached our backend, or the answer
    /// was lost on the way: no answer at all, or a gateway error page from a
    /// proxy in front of it. Such a request may be repeated unchanged.
    pub fn is_transport_failure(&self) -> bool {
        matches!(self, Self::Network(_) | Self::Http { status: 502 | 504 })
    }

    /// True when the backend says there is no valid session (signed out, expired):
    /// the page sends the shopper to the sign-in page.
    pub fn is_unauthenticated(&self) -> bool {
        self.code() == Some(ErrorCode::Unauthenticated)
    }

    /// True when the backend says a dependency is down for now (503).
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self.code(),
            Some(ErrorCode::TokenStoreUnavailable | ErrorCode::ServiceUnavailable)
        ) || self.status() == Some(503)
    }
}

/// `GET /api/platform`: which payment platform takes the payments (the page
/// marks itself "sandbox" when no money moves).
pub async fn platform() -> Result<PlatformInfo, ApiError> {
    call(Request::get("/api/platform"), None, READ_TIMEOUT_MS).await
}

/// `POST /api/session`: signs in; the answer sets the session cookie. Its body
/// (a [`api_types::api::SessionInfo`]) is not read: the page moves on at once.
pub async fn sign_in(body: &SignIn) -> Result<(), ApiError> {
    let body = encode(body)?;
    send(Request::post("/api/session"), Some(body), WRITE_TIMEOUT_MS)
        .await
        .map(drop)
}

/// `DELETE /api/session`: signs out (204); the session is deleted on the server.
pub async fn sign_out() -> Result<(), ApiError> {
    send(
        Request::delete("/api/session"),
        Some(String::new()),
        WRITE_TIMEOUT_MS,
    )
    .await
    .map(drop)
}

/// `GET /api/me`: the signed-in shopper and their accounts (401 when signed out).
pub async fn me() -> Result<Me, ApiError> {
    call(Request::get("/api/me"), None, READ_TIMEOUT_MS).await
}

/// `GET /api/products`: the catalogue.
pub async fn products() -> Result<Vec<Product>, ApiError> {
    call(Request::get("/api/products"), None, READ_TIMEOUT_MS).await
}

/// `GET /api/orders`: the signed-in shopper's newest orders.
pub async fn orders() -> Result<Vec<Order>, ApiError> {
    call(Request::get("/api/orders"), None, READ_TIMEOUT_MS).await
}

/// `POST /api/orders` with `Idempotency-Key: key`: places an order.
///
/// Safe to repeat with the same key and body: the backend answers with the
/// order it placed the first time instead of placing another.
pub async fn create_order(body: &CreateOrder, key: uuid::Uuid) -> Result<Order, ApiError> {
    let body = encode(body)?;
    let request = Request::post("/api/orders").header("idempotency-key", &key.to_string());
    call(request, Some(body), WRITE_TIMEOUT_MS).await
}

/// `GET /api/orders/{order_no}`: the order as it stands now.
pub async fn order(order_no: &str) -> Result<Order, ApiError> {
    let url = format!("/api/orders/{}", path_segment(order_no));
    call(Request::get(&url), None, READ_TIMEOUT_MS).await
}

/// A refund as the receipt reads it: the fields of [`api_types::api::Refund`]
/// the page shows, under the same names. The answer's other fields (refund
/// number, reason, timestamps) are skipped unread, which keeps their decoding
/// out of the page (see the size budget in `scripts/build-frontend.sh`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RefundSummary {
    /// Amount given back, in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// Where it stands.
    #[serde(deserialize_with = "by_name")]
    pub status: RefundStatus,
    /// Who asked; `automatic` for a payment the checkout could not book.
    #[serde(deserialize_with = "by_name")]
    pub requested_by: RefundRequester,
}

/// Reads one of the API's named values (`PENDING`, `automatic`, ...) through
/// its `FromStr`: the same names as its derived `Deserialize`, in a fraction
/// of the code.
fn by_name<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr,
{
    let name = String::deserialize(deserializer)?;
    name.parse()
        .map_err(|_| serde::de::Error::custom("an unknown name"))
}

/// `GET /api/orders/{order_no}/refunds`: the order's refunds, oldest first.
pub async fn refunds(order_no: &str) -> Result<Vec<RefundSummary>, ApiError> {
    let url = format!("/api/orders/{}/refunds", path_segment(order_no));
    call(Request::get(&url), None, READ_TIMEOUT_MS).await
}

/// `POST /api/orders/{order_no}/request-token`: a fresh one-time pay token.
pub async fn request_token(order_no: &str) -> Result<RequestToken, ApiError> {
    let url = format!("/api/orders/{}/request-token", path_segment(order_no));
    call(Request::post(&url), Some(String::new()), WRITE_TIMEOUT_MS).await
}

/// `POST /api/orders/{order_no}/pay`: starts the payment with the request's token.
///
/// Safe to repeat with the same token: the backend replays its first answer.
pub async fn pay(order_no: &str, body: &PayRequest) -> Result<PayAccepted, ApiError> {
    let url = format!("/api/orders/{}/pay", path_segment(order_no));
    let body = encode(body)?;
    call(Request::post(&url), Some(body), WRITE_TIMEOUT_MS).await
}

fn encode(body: &impl Serialize) -> Result<String, ApiError> {
    serde_json::to_string(body).map_err(|e| ApiError::Decode(e.to_string()))
}

/// Sends one request and decodes its 2xx answer; gives up after `timeout_ms`.
async fn call<T: DeserializeOwned>(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
) -> Result<T, ApiError> {
    let text = Box::pin(read_text(builder, json_body, timeout_ms)).await?;
    serde_json::from_str(&text).map_err(|e| ApiError::Decode(e.to_string()))
}

/// The text of a 2xx answer.
async fn read_text(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
) -> Result<String, ApiError> {
    send(builder, json_body, timeout_ms)
        .await?
        .text()
        .await
        .map_err(|e| ApiError::Decode(e.to_string()))
}

/// [`send_now`], boxed: its state machine is compiled once rather than
/// inlined into every caller's, which keeps the page small.
fn send(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
) -> Pin<Box<dyn Future<Output = Result<gloo_net::http::Response, ApiError>>>> {
    Box::pin(send_now(builder, json_body, timeout_ms))
}

/// Sends one request (`json_body`, even empty, goes as `application/json`);
/// a 2xx answer is returned unread, anything else becomes an [`ApiError`].
async fn send_now(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
) -> Result<gloo_net::http::Response, ApiError> {
    let deadline = Deadline::start(timeout_ms);
    let builder = builder
        .header("accept", "application/json")
        .abort_signal(deadline.as_ref().map(|d| &d.signal));
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
    // The answer arrived; from here on a timeout must not abort reading its body.
    drop(deadline);
    let status = response.status();
    if response.ok() {
        return Ok(response);
    }
    let retry_after_secs = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.trim().parse().ok());
    let text = response.text().await.unwrap_or_default();
    Err(error_from_answer(status, &text, retry_after_secs))
}

/// Aborts a request when its timer fires; dropping it cancels the timer.
struct Deadline {
    signal: web_sys::AbortSignal,
    _timer: Timeout,
}

impl Deadline {
    fn start(timeout_ms: u32) -> Option<Self> {
        let controller = web_sys::AbortController::new().ok()?;
        let signal = controller.signal();
        let timer = Timeout::new(timeout_ms, move || controller.abort());
        Some(Self {
            signal,
            _timer: timer,
        })
    }
}

/// Turns a non-2xx answer into an [`ApiError`]: our error body when it is one.
pub fn error_from_answer(status: u16, body: &str, retry_after_secs: Option<u32>) -> ApiError {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(body) => ApiError::Server {
            status,
            body,
            retry_after_secs,
        },
        Err(_) => ApiError::Http { status },
    }
}

/// Percent-encodes one URL path segment (everything but RFC 3986 unreserved characters).
pub fn path_segment(raw: &str) -> String {
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
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn an_error_body_becomes_a_server_error_with_its_code() {
        let err = error_from_answer(
            503,
            r#"{"error":{"code":"TOKEN_STORE_UNAVAILABLE","message":"down"}}"#,
            Some(2),
        );
        assert_eq!(err.code(), Some(ErrorCode::TokenStoreUnavailable));
        assert_eq!(err.status(), Some(503));
        assert!(err.is_unavailable());
        assert!(!err.is_transport_failure());
        assert!(matches!(
            err,
            ApiError::Server {
                retry_after_secs: Some(2),
                ..
            }
        ));
    }

    #[test]
    fn a_proxy_error_page_is_an_http_error_without_a_code() {
        let err = error_from_answer(502, "<html>Bad Gateway</html>", None);
        assert_eq!(err, ApiError::Http { status: 502 });
        assert_eq!(err.code(), None);
        assert!(err.is_transport_failure());
    }

    #[test]
    fn only_a_missing_session_counts_as_signed_out() {
        let signed_out = error_from_answer(
            401,
            r#"{"error":{"code":"UNAUTHENTICATED","message":"sign in"}}"#,
            None,
        );
        assert!(signed_out.is_unauthenticated());
        let wrong_password = error_from_answer(
            401,
            r#"{"error":{"code":"INVALID_CREDENTIALS","message":"no"}}"#,
            None,
        );
        assert!(!wrong_password.is_unauthenticated());
        assert!(!ApiError::Http { status: 401 }.is_unauthenticated());
    }

    #[test]
    fn a_network_failure_may_be_repeated() {
        assert!(ApiError::Network("refused".into()).is_transport_failure());
        assert!(!ApiError::Decode("bad json".into()).is_transport_failure());
    }

    #[test]
    fn every_refund_the_api_answers_reads_as_the_receipts_summary() {
        for &status in RefundStatus::ALL {
            for &requested_by in RefundRequester::ALL {
                let refund = api_types::api::Refund {
                    refund_no: "rfd_0123456789abcdef0123456789abcdef".into(),
                    order_no: "ORD1".into(),
                    amount_cents: 750,
                    currency: Currency::EUR,
                    status,
                    reason: "One cup arrived broken".into(),
                    requested_by,
                    failure_reason: None,
                    created_at: time::macros::datetime!(2025-01-31 15:00:00 UTC),
                    settled_at: None,
                };
                let json = serde_json::to_string(&[refund]).expect("a refund serialises");
                let read: Vec<RefundSummary> = serde_json::from_str(&json).expect("and reads back");
                assert_eq!(
                    read,
                    vec![RefundSummary {
                        amount_cents: 750,
                        currency: Currency::EUR,
                        status,
                        requested_by,
                    }]
                );
            }
        }
        let unknown =
            r#"{"amount_cents":1,"currency":"EUR","status":"LOST","requested_by":"merchant"}"#;
        assert!(serde_json::from_str::<RefundSummary>(unknown).is_err());
    }

    #[test]
    fn order_numbers_are_escaped_in_paths() {
        assert_eq!(path_segment("ORD-123_a.b~"), "ORD-123_a.b~");
        assert_eq!(path_segment("a/b c"), "a%2Fb%20c");
        assert_eq!(path_segment("é"), "%C3%A9");
    }
}
