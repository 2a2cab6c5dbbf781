//! The HTTP client code the payment page (`frontend`) and the operator console
//! (`ops-console`) share; each keeps its own endpoints in its `api.rs`.
//!
//! Every call answers `Result<T, ApiError>`: a 2xx body decoded into the
//! `api_types` DTO, or an [`ApiError`] for everything else. A non-2xx answer
//! carrying our error body becomes [`ApiError::Server`] with the
//! [`api_types::ErrorBody`]; anything else that is not a decoded 2xx (no answer,
//! a proxy's HTML error page, a body we cannot read) has its own variant, so
//! the pages never branch on message text.
//!
//! Requests go to the page's own origin (`/api/...`). The session is the
//! backend's HttpOnly cookie, which the browser sends by itself; the pages never
//! see it. Every state-changing call declares `Content-Type: application/json`
//! (the backend refuses any other with 415, its CSRF rule).
//!
//! Sending a request and reading its answer happen in one boxed future,
//! compiled once for all the endpoints of a page; only the decoding of each
//! answer type is generic. The payment page's size budget needs that
//! (`scripts/build-frontend.sh`).

#![warn(missing_docs)]

use api_types::{ErrorBody, ErrorCode};
use gloo_timers::callback::Timeout;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::pin::Pin;

pub use gloo_net::http::{Request, RequestBuilder};

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

    /// True when the backend says there is no valid session (never signed in,
    /// signed out, expired): the page asks for a sign-in.
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

/// A request body as JSON, for [`call`] and [`send`]; a body that does not
/// serialise is an [`ApiError::Decode`].
pub fn encode(body: &impl Serialize) -> Result<String, ApiError> {
    serde_json::to_string(body).map_err(|e| ApiError::Decode(e.to_string()))
}

/// Sends one request and decodes its 2xx answer; gives up after `timeout_ms`.
/// `json_body`, even empty, goes as `application/json`.
pub fn call<T: DeserializeOwned>(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
) -> impl Future<Output = Result<T, ApiError>> {
    // Boxed now, so that each answer type's future holds only the box.
    let answer = exchange(builder, json_body, timeout_ms, true);
    async move {
        let text = answer.await?;
        serde_json::from_str(&text).map_err(|e| ApiError::Decode(e.to_string()))
    }
}

/// Sends one request like [`call`], for an answer the page does not read: a
/// 2xx answer's body is left unread.
pub fn send(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
) -> impl Future<Output = Result<(), ApiError>> {
    let answer = exchange(builder, json_body, timeout_ms, false);
    async move { answer.await.map(drop) }
}

/// [`exchange_now`], boxed: its state machine is compiled once rather than
/// inlined into every caller's, which keeps the payment page small.
fn exchange(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
    read_body: bool,
) -> Pin<Box<dyn Future<Output = Result<String, ApiError>>>> {
    Box::pin(exchange_now(builder, json_body, timeout_ms, read_body))
}

/// Sends one request (`json_body`, even empty, goes as `application/json`) and
/// answers the text of a 2xx answer (empty unless `read_body`); anything else
/// becomes an [`ApiError`].
async fn exchange_now(
    builder: RequestBuilder,
    json_body: Option<String>,
    timeout_ms: u32,
    read_body: bool,
) -> Result<String, ApiError> {
    let deadline = Deadline::start(timeout_ms);
    let builder = builder
        .header("accept", "application/json")
        .abort_signal(deadline.as_ref().map(|d| &d.signal));
    let request = match json_body {
        Some(text) => builder
            .header("content-type", "application/json")
            .body(text)
            .map_err(|e| ApiError::Decode(e.to_string()))?,
        // `RequestBuilder::send` builds the same way, and its failure was
        // reported as no answer; building here gives both arms one send.
        None => builder
            .build()
            .map_err(|e| ApiError::Network(e.to_string()))?,
    };
    let response = request
        .send()
        .await
        .map_err(|e| ApiError::Network(e.to_string()))?;
    // The answer arrived; from here on a timeout must not abort reading its body.
    drop(deadline);
    let status = response.status();
    let ok = response.ok();
    if ok && !read_body {
        return Ok(String::new());
    }
    let retry_after_secs = if ok {
        None
    } else {
        response
            .headers()
            .get("retry-after")
            .and_then(|value| value.trim().parse().ok())
    };
    // One `text()` for both kinds of answer: a second one costs the page bytes.
    let text = response.text().await;
    if ok {
        return text.map_err(|e| ApiError::Decode(e.to_string()));
    }
    Err(error_from_answer(
        status,
        &text.unwrap_or_default(),
        retry_after_secs,
    ))
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

/// Percent-encodes one URL path segment or query value (everything but RFC 3986
/// unreserved characters).
pub fn encode_component(raw: &str) -> String {
    // Written out rather than `format!("%{byte:02X}")`, whose formatting code
    // the payment page would link for this alone.
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0F)]));
        }
    }
    out
}

#[cfg(all(test, target_arch = "wasm32"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

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
        assert_eq!(wrong_password.code(), Some(ErrorCode::InvalidCredentials));
        assert!(!wrong_password.is_unauthenticated());
        assert!(!ApiError::Http { status: 401 }.is_unauthenticated());
    }

    #[test]
    fn a_network_failure_may_be_repeated() {
        assert!(ApiError::Network("refused".into()).is_transport_failure());
        assert!(!ApiError::Decode("bad json".into()).is_transport_failure());
    }

    #[test]
    fn search_text_and_order_numbers_are_escaped() {
        assert_eq!(encode_component("ORD-123_a.b~"), "ORD-123_a.b~");
        assert_eq!(encode_component("a/b c"), "a%2Fb%20c");
        assert_eq!(encode_component("é"), "%C3%A9");
        assert_eq!(encode_component("ada@example.com"), "ada%40example.com");
        assert_eq!(encode_component("a/b c&d"), "a%2Fb%20c%26d");
    }
}
