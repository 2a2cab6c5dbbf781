//! `POST /api/payments/callback/alipay`: Alipay's asynchronous notifications
//! (异步通知, `notify_type` `trade_status_sync`), form-encoded.
//!
//! Raw body (at most 64 KiB) -> the form's parameters -> RSA2 (`sign_type`
//! must be `RSA2`) over the parameters without `sign` and `sign_type`, sorted
//! by name, with the Alipay public key
//! ([`platform_protocols::alipay::verify_notification`]; the order of the
//! parameters in the body does not matter, their values do) -> `app_id` is
//! ours (another: a `MERCHANT_MISMATCH` anomaly) -> the checkout's one
//! internal event, applied by the same charge transaction as every platform's
//! ([`crate::charge::apply_callback`]). The idempotency key is `notify_id`; the body
//! fingerprint is the SHA-256 of the event's canonical JSON, so a retry with
//! another `notify_time` is still the same notification.
//!
//! How a notification becomes an event:
//!
//! - `TRADE_SUCCESS` and `TRADE_FINISHED` (the refund period over) are both
//!   `payment.succeeded` of the trade, `payment_id` = `trade_no`, amount =
//!   `total_amount` in fen (exactly: `"12.50"` is 1250; `1.234`, `-1`, `1e3`
//!   are refused as malformed), our payment id from `passback_params`. They
//!   come with different `notify_id`s: the second is the same payment reported
//!   again on a PAID order, which the charge transaction ignores
//!   (`IGNORED_ORDER_FINAL`, no anomaly, no second charge, no refund).
//! - A notification with `out_biz_no` is a refund's: `refund.succeeded` with
//!   `refund_no` = `out_biz_no`. Its `refund_fee` is the trade's refunded
//!   *total*, not this refund's amount, which Alipay does not send. The
//!   refund's amount is the one we asked for (Alipay refuses the same
//!   `out_request_no` with another amount, `ACQ.DISCORDANT_REPEAT_REQUEST`),
//!   so the event carries our refund's amount when the total is consistent
//!   with it: at least this refund, and at most all the order's refunds that
//!   have not failed. Any other total (or no such refund) is passed on as it
//!   is, and the refund transaction refuses it with an anomaly.
//! - `WAIT_BUYER_PAY` and `TRADE_CLOSED` without `out_biz_no` (closed unpaid;
//!   Alipay does not send these by default) are acknowledged and change nothing.
//!
//! Alipay reads the body: exactly `success` (HTTP 200) after commit, for a
//! duplicate too; anything else is answered 4xx/5xx with `fail`, and Alipay
//! delivers it again later (4m, 10m, 10m, 1h, 2h, 6h, 15h).

use crate::db::{anomalies, refunds};
use crate::error::ApiError;
use crate::http::routes::notify::{self, Refusal, record_malformed};
use crate::infra::metrics::CallbackAnswer;
use crate::state::AppState;
use api_types::api::{CallbackData, CallbackEvent, EventTimestamp};
use api_types::{AnomalyKind, CallbackType, Currency, PlatformPaymentId, RefundStatus};
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use platform_protocols::alipay::{
    self as ali, AlipayError, NOTIFY_FAIL, NOTIFY_SUCCESS, TradeNotification, TradeStatus,
};
use serde_json::json;
use time::format_description::well_known::Rfc3339;
use tracing::Instrument;

/// Alipay reads only whether the body is `success`; the reason goes to our log.
fn fail_reply(refusal: &Refusal) -> Response {
    plain(refusal.status, NOTIFY_FAIL)
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// `POST /api/payments/callback/alipay`: verify, apply; `success` after commit.
#[utoipa::path(post, path = "/payments/callback/alipay", tag = "platform",
    request_body(content = String, description = "Alipay's notification: form parameters, RSA2 `sign` over the sorted parameters without `sign` and `sign_type`", content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Applied, a duplicate, or a status that changes nothing: the body is exactly `success` and Alipay stops delivering it", body = String, content_type = "text/plain"),
        (status = 400, description = "`fail`: signed but unreadable (a bad amount among them), or for another app (anomaly)", body = String, content_type = "text/plain"),
        (status = 401, description = "`fail`: signature missing or wrong, or sign_type not RSA2; nothing written", body = String, content_type = "text/plain"),
        (status = 404, description = "`fail`: no such order, or Alipay is not this backend's platform", body = String, content_type = "text/plain"),
        (status = 409, description = "`fail`: the notify_id was used with another content", body = String, content_type = "text/plain"),
        (status = 413, description = "`fail`: larger than 64 KiB", body = String, content_type = "text/plain"),
        (status = 422, description = "`fail`: amount or currency differ from the order's (anomaly)", body = String, content_type = "text/plain"),
        (status = 503, description = "`fail`: the database is unavailable: deliver again", body = String, content_type = "text/plain")))]
#[tracing::instrument(name = "alipay_notify", skip_all,
    fields(callback_id = tracing::field::Empty, order_no = tracing::field::Empty))]
pub async fn receive(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match handle(&state, body).await {
        Ok(answer) => {
            tracing::info!(
                outcome = answer.as_str(),
                "Alipay notification answered success"
            );
            notify::acknowledged(answer, plain(StatusCode::OK, NOTIFY_SUCCESS))
        }
        Err(refusal) => {
            tracing::warn!(status = refusal.status.as_u16(), code = refusal.code, message = %refusal.message,
                "Alipay notification refused; it will be delivered again");
            refusal.tag(fail_reply(&refusal))
        }
    }
}

async fn handle(
    state: &AppState,
    body: Result<Bytes, BytesRejection>,
) -> Result<CallbackAnswer, Refusal> {
    let Some(settings) = state.platform.alipay_settings() else {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            "Alipay is not this checkout's platform",
        ));
    };
    let body = notify::body(body)?;
    let text = std::str::from_utf8(&body)
        .map_err(|_| Refusal::new(StatusCode::BAD_REQUEST, "the body is not UTF-8"))?;
    // Unreadable before any signature could be checked: nothing is written.
    let params = ali::parse_form(text)
        .map_err(|err| Refusal::new(StatusCode::BAD_REQUEST, format!("not a form: {err}")))?;
    // PostgreSQL text cannot hold U+0000 (`%00`), and the id, the order and the
    // anomaly's details all come from these fields: refused, nothing written.
    if params
        .iter()
        .any(|(key, value)| !notify::fits_postgres_text(key) || !notify::fits_postgres_text(value))
    {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "no field of the notification may contain U+0000",
        ));
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .filter(|value| !value.is_empty())
    };
    let notification = match ali::verify_notification(
        text,
        &settings.app_id,
        &settings.alipay_public_key,
    ) {
        Ok(notification) => notification,
        Err(AlipayError::WrongAppId { expected, got }) => {
            // Signed by Alipay, for another application.
            let callback_id = param("notify_id").unwrap_or_default();
            let order_no = param("out_trade_no").unwrap_or_default();
            anomalies::record(
                &state.db,
                &callback_id,
                &order_no,
                AnomalyKind::MerchantMismatch,
                json!({"platform": "alipay", "app_id": got, "expected_app_id": expected,
                        "trade_no": param("trade_no"), "total_amount": param("total_amount"),
                        "trade_status": param("trade_status"),
                        "note": "a signed notification for another application: refused"}),
            )
            .await
            .map_err(ApiError::from)?;
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "the notification is for another app_id",
            )
            .counted_as(AnomalyKind::MerchantMismatch.as_str()));
        }
        // The signature verified, but the fields are not what they must be
        // (an amount that is not exact yuan, a missing notify_id, ...).
        Err(AlipayError::Form(message)) => {
            let Some(callback_id) = param("notify_id") else {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    format!("unreadable notification without notify_id: {message}"),
                ));
            };
            record_malformed(state, &callback_id).await?;
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                format!("unreadable notification: {message}"),
            ));
        }
        Err(err) => {
            tracing::warn!(reason = %err, "Alipay notification refused: signature check failed; nothing written");
            return Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                format!("验签失败: {err}"),
            ));
        }
    };
    let callback_id = notification.notify_id.clone();
    // On the request's span too, so its closing line ("answered", "refused") names it.
    tracing::Span::current().record("callback_id", callback_id.as_str());
    tracing::Span::current().record(
        "order_no",
        tracing::field::display(&notification.out_trade_no),
    );
    let span = tracing::info_span!("alipay_notification", callback_id = %callback_id,
        out_trade_no = %notification.out_trade_no,
        trade_status = ?notification.trade_status);
    let mut event = match span.in_scope(|| decode(&notification)) {
        Ok(Some(event)) => event,
        Ok(None) => {
            tracing::info!(parent: &span, "Alipay notification changes nothing; acknowledged");
            return Ok(CallbackAnswer::Ignored);
        }
        Err(message) => {
            record_malformed(state, &callback_id)
                .instrument(span.clone())
                .await?;
            return Err(Refusal::new(StatusCode::BAD_REQUEST, message));
        }
    };
    if event.kind == CallbackType::RefundSucceeded {
        event.data.amount_cents = refund_amount(state, &event.data)
            .instrument(span.clone())
            .await?;
    }
    notify::apply(state, callback_id, event, span).await
}

/// The amount of the one refund a refund notification is about. `data`
/// carries `refund_fee`, the trade's refunded total: when the order has the
/// refund and the total lies between its amount and the sum of the order's
/// refunds that have not failed, the refund's own amount; otherwise the
/// total as it is, which the refund transaction then refuses (no such
/// refund: `REFUND_RESULT_CONFLICT`; an amount that cannot be: `AMOUNT_MISMATCH`).
async fn refund_amount(state: &AppState, data: &CallbackData) -> Result<i64, Refusal> {
    let total = data.amount_cents;
    let Some(refund_no) = data.refund_no.as_deref() else {
        return Ok(total);
    };
    let order_refunds = refunds::list_for_order(&state.db, &data.order_no)
        .await
        .map_err(|err| Refusal::from(ApiError::from(err)))?;
    let Some(refund) = order_refunds.iter().find(|r| r.refund_no == refund_no) else {
        return Ok(total);
    };
    let not_failed: i64 = order_refunds
        .iter()
        .filter(|r| r.status != RefundStatus::Failed)
        .map(|r| r.amount_cents)
        .sum();
    Ok(refund_amount_of(refund.amount_cents, total, not_failed))
}

/// The rule of [`refund_amount`]: the refund's amount when the trade's refunded
/// `total` is at least that and at most `not_failed`, else the total.
fn refund_amount_of(refund_cents: i64, total: i64, not_failed: i64) -> i64 {
    if (refund_cents..=not_failed.max(refund_cents)).contains(&total) {
        refund_cents
    } else {
        total
    }
}

/// Alipay's `yyyy-MM-dd HH:mm:ss` (Beijing time) as RFC 3339, when it reads.
fn rfc3339(at: Option<&str>) -> Option<String> {
    // `gmt_refund` may carry milliseconds: the seconds are enough here.
    let at = at?.get(..19)?;
    ali::parse_timestamp(at).ok()?.format(&Rfc3339).ok()
}

/// The checkout's event for a verified notification of our app; `None` when
/// it changes nothing; `Err` when it is not what its status promises.
fn decode(notification: &TradeNotification) -> Result<Option<CallbackEvent>, String> {
    let sent_at = rfc3339(Some(&notification.notify_time))
        .unwrap_or_else(|| notification.notify_time.clone());
    let missing = || "a notification without trade_no or out_trade_no".to_owned();
    if notification.out_trade_no.is_empty() {
        return Err(missing());
    }
    let trade_no = PlatformPaymentId::new(notification.trade_no.as_str()).map_err(|_| missing())?;
    if let Some(refund_no) = notification
        .out_biz_no
        .as_deref()
        .filter(|number| !number.is_empty())
    {
        let refunded = notification
            .refund_fee
            .ok_or_else(|| format!("refund {refund_no} notified without refund_fee"))?;
        let timestamp = rfc3339(notification.gmt_refund.as_deref()).unwrap_or(sent_at);
        return Ok(Some(CallbackEvent {
            kind: CallbackType::RefundSucceeded,
            timestamp: EventTimestamp::Text(timestamp),
            data: CallbackData {
                order_no: notification.out_trade_no.clone(),
                // The trade's refunded total; `refund_amount` makes it this refund's.
                amount_cents: refunded.fen(),
                currency: Currency::CNY,
                payment_id: trade_no,
                merchant_reference: None,
                refund_no: Some(refund_no.to_owned()),
                // Alipay has no id for a refund: the request number names it.
                refund_id: Some(refund_no.to_owned()),
            },
        }));
    }
    match notification.trade_status {
        Some(TradeStatus::TradeSuccess | TradeStatus::TradeFinished) => {
            let total = notification
                .total_amount
                .ok_or_else(|| "a paid trade notified without total_amount".to_owned())?;
            let timestamp = rfc3339(notification.gmt_payment.as_deref()).unwrap_or(sent_at);
            Ok(Some(CallbackEvent {
                kind: CallbackType::PaymentSucceeded,
                timestamp: EventTimestamp::Text(timestamp),
                data: CallbackData {
                    order_no: notification.out_trade_no.clone(),
                    amount_cents: total.fen(),
                    currency: Currency::CNY,
                    payment_id: trade_no,
                    merchant_reference: notification
                        .passback_params
                        .clone()
                        .filter(|reference| !reference.is_empty()),
                    refund_no: None,
                    refund_id: None,
                },
            }))
        }
        // Waiting, or closed unpaid: nothing to book.
        Some(TradeStatus::WaitBuyerPay | TradeStatus::TradeClosed) => Ok(None),
        None => Err("a trade notification without trade_status".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refund_notification_s_total_becomes_the_refund_s_amount_when_it_fits() {
        // The first refund of a trade: the total is the refund.
        assert_eq!(refund_amount_of(500, 500, 500), 500);
        // The second of two: the total covers both.
        assert_eq!(refund_amount_of(300, 800, 800), 300);
        // A third asked for but not made yet does not change that.
        assert_eq!(refund_amount_of(300, 800, 1_000), 300);
        // Less than the refund itself, or more than every refund asked for: passed on.
        assert_eq!(refund_amount_of(500, 400, 500), 400);
        assert_eq!(refund_amount_of(500, 900, 800), 900);
    }

    #[test]
    fn alipay_times_become_rfc3339() {
        assert_eq!(
            rfc3339(Some("2026-12-03 18:00:00")).as_deref(),
            Some("2026-12-03T18:00:00+08:00")
        );
        assert_eq!(
            rfc3339(Some("2026-12-03 18:00:00.123")).as_deref(),
            Some("2026-12-03T18:00:00+08:00")
        );
        assert_eq!(rfc3339(Some("yesterday")), None);
    }
}
