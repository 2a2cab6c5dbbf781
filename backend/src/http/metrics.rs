//! What every answer counts for the metrics: the middleware that times each
//! route and counts the outcome of pay requests and callbacks from the answer
//! they gave, and the handlers that render the metrics.

use crate::idempotency::REPLAYED_HEADER;
use crate::infra::metrics::{
    CALLBACKS_RECEIVED, CallbackAnswer, DATABASE_READ, ErrorCodeTag, HTTP_SECONDS, PAY_REQUESTS,
    RECENT_REPLAYS, handle, refresh_from_database,
};
use crate::state::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::{counter, gauge, histogram};
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// The `/api` route patterns [`track`] counts outcomes of.
const PAY_ROUTE: &str = "/api/orders/{order_no}/pay";
const STANDARD_CALLBACK_ROUTE: &str = "/api/payments/callback";
const WECHATPAY_CALLBACK_ROUTE: &str = "/api/payments/callback/wechatpay";
const ALIPAY_CALLBACK_ROUTE: &str = "/api/payments/callback/alipay";

/// Middleware on every route: its latency by route pattern, and the outcome of
/// pay requests and callbacks.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(String::new, |path| path.as_str().to_owned());
    let response = next.run(request).await;
    let status = response.status();

    // Only a POST is a pay or a callback; another method on their path is a 405.
    let code = response.extensions().get::<ErrorCodeTag>().map(|tag| tag.0);
    let platform = match route.as_str() {
        STANDARD_CALLBACK_ROUTE => Some(state.platform.kind().as_str()),
        WECHATPAY_CALLBACK_ROUTE => Some("wechatpay"),
        ALIPAY_CALLBACK_ROUTE => Some("alipay"),
        _ => None,
    };
    if method == Method::POST {
        if let Some(platform) = platform {
            let answer = response.extensions().get::<CallbackAnswer>().copied();
            let (outcome, reason) = callback_outcome(status, answer, code);
            counter!(CALLBACKS_RECEIVED, "platform" => platform, "outcome" => outcome, "reason" => reason)
                .increment(1);
        } else if route == PAY_ROUTE {
            let replayed = response.headers().contains_key(REPLAYED_HEADER);
            let (outcome, reason) = pay_outcome(status, replayed, code);
            counter!(PAY_REQUESTS, "outcome" => outcome, "reason" => reason).increment(1);
            if outcome == "replayed" {
                RECENT_REPLAYS.record(OffsetDateTime::now_utc());
            }
        }
    }
    histogram!(HTTP_SECONDS, "method" => method_label(&method), "route" => route,
        "status" => status.as_str().to_owned())
    .record(started.elapsed());
    response
}

/// The `method` label: one of a fixed set, so a client inventing methods
/// (`FOO1`, `FOO2`, ...) cannot grow the number of series without bound.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// A callback's `outcome` and `reason` labels from its answer.
fn callback_outcome(
    status: StatusCode,
    answer: Option<CallbackAnswer>,
    code: Option<&'static str>,
) -> (&'static str, &'static str) {
    match (answer, code) {
        (Some(answer), _) if status.is_success() => (answer.as_str(), ""),
        (_, Some("CALLBACK_CONFLICT")) => ("conflict", ""),
        (_, code) if status.is_server_error() => ("failed", code.unwrap_or("INTERNAL")),
        (_, code) => ("refused", code.unwrap_or("BAD_REQUEST")),
    }
}

/// A pay request's `outcome` and `reason` labels from its answer.
fn pay_outcome(
    status: StatusCode,
    replayed: bool,
    code: Option<&'static str>,
) -> (&'static str, &'static str) {
    match code {
        _ if status.is_success() && replayed => ("replayed", ""),
        _ if status.is_success() => ("accepted", ""),
        Some("TOKEN_INVALID") => ("token_invalid", ""),
        Some("INSUFFICIENT_FUNDS") => ("insufficient_funds", ""),
        code if status == StatusCode::SERVICE_UNAVAILABLE => {
            ("unavailable", code.unwrap_or("SERVICE_UNAVAILABLE"))
        }
        code if status.is_server_error() => ("failed", code.unwrap_or("INTERNAL")),
        code => ("refused", code.unwrap_or("BAD_REQUEST")),
    }
}

/// The text format, after reading the database's numbers (at most 2 s; on
/// failure the counters are still answered, with [`DATABASE_READ`] 0).
pub async fn render(db: &sqlx::PgPool) -> Response {
    let read = tokio::time::timeout(Duration::from_secs(2), refresh_from_database(db)).await;
    let ok = match read {
        Ok(Ok(())) => true,
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "metrics: cannot read the database's numbers");
            false
        }
        Err(_) => {
            tracing::warn!("metrics: the database's numbers took longer than 2 s");
            false
        }
    };
    gauge!(DATABASE_READ).set(if ok { 1.0 } else { 0.0 });
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        handle().render(),
    )
        .into_response()
}

/// `GET /metrics`: every metric in the Prometheus text format, for the
/// operator (the admin bearer token, like `/api/admin/*`).
#[utoipa::path(get, path = "/metrics", tag = "admin", security(("admin_token" = [])),
    responses((status = 200, description = "Prometheus text format (version 0.0.4)", body = String, content_type = "text/plain"),
        (status = 401, description = "UNAUTHORIZED: no or a wrong admin token", body = api_types::ErrorBody),
        (status = 429, description = "RATE_LIMITED: too many wrong tokens from this address", body = api_types::ErrorBody)))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    render(&state.db).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_answers_map_to_outcomes() {
        let ok = StatusCode::OK;
        assert_eq!(
            callback_outcome(ok, Some(CallbackAnswer::Applied), None),
            ("applied", "")
        );
        assert_eq!(
            callback_outcome(
                StatusCode::NO_CONTENT,
                Some(CallbackAnswer::Duplicate),
                None
            ),
            ("duplicate", "")
        );
        assert_eq!(
            callback_outcome(StatusCode::CONFLICT, None, Some("CALLBACK_CONFLICT")),
            ("conflict", "")
        );
        assert_eq!(
            callback_outcome(StatusCode::UNAUTHORIZED, None, Some("SIGNATURE_INVALID")),
            ("refused", "SIGNATURE_INVALID")
        );
        assert_eq!(
            callback_outcome(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                Some("SERVICE_UNAVAILABLE")
            ),
            ("failed", "SERVICE_UNAVAILABLE")
        );
        // A success status without the route's word is not counted as applied.
        assert_eq!(callback_outcome(ok, None, None), ("refused", "BAD_REQUEST"));
    }

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        for invented in ["FOO1", "FOO2", "PROPFIND"] {
            let method = Method::from_bytes(invented.as_bytes()).expect("a method");
            assert_eq!(method_label(&method), "OTHER");
        }
    }

    #[test]
    fn pay_answers_map_to_outcomes() {
        let accepted = StatusCode::ACCEPTED;
        assert_eq!(pay_outcome(accepted, false, None), ("accepted", ""));
        assert_eq!(pay_outcome(accepted, true, None), ("replayed", ""));
        assert_eq!(
            pay_outcome(StatusCode::CONFLICT, false, Some("TOKEN_INVALID")),
            ("token_invalid", "")
        );
        assert_eq!(
            pay_outcome(
                StatusCode::UNPROCESSABLE_ENTITY,
                false,
                Some("INSUFFICIENT_FUNDS")
            ),
            ("insufficient_funds", "")
        );
        assert_eq!(
            pay_outcome(
                StatusCode::SERVICE_UNAVAILABLE,
                false,
                Some("TOKEN_STORE_UNAVAILABLE")
            ),
            ("unavailable", "TOKEN_STORE_UNAVAILABLE")
        );
        assert_eq!(
            pay_outcome(StatusCode::CONFLICT, false, Some("ORDER_NOT_PAYABLE")),
            ("refused", "ORDER_NOT_PAYABLE")
        );
    }
}
