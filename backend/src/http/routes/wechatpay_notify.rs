//! `POST /api/payments/callback/wechatpay`: WeChat Pay API v3 notifications
//! (`TRANSACTION.SUCCESS`, `REFUND.SUCCESS`, `REFUND.ABNORMAL`, `REFUND.CLOSED`).
//!
//! Raw body (at most 64 KiB) -> `Wechatpay-Signature` over `TIMESTAMP\nNONCE\nBODY\n`
//! with the platform public key, its serial and a five-minute window -> the
//! envelope -> AEAD_AES_256_GCM decryption of `resource` with the APIv3 key ->
//! `mchid`/`appid` are ours -> the checkout's one internal event, applied by
//! the same charge transaction as every platform's ([`crate::charge::apply_callback`]).
//! The idempotency key is the notification `id`; the body fingerprint is taken
//! over the decrypted content, so a retry that was encrypted afresh is still
//! the same notification.
//!
//! WeChat Pay reads only the status: 204 (no body) after commit, for a
//! duplicate too; anything else is answered 4xx/5xx with
//! `{"code":"FAIL","message":...}` and WeChat Pay delivers it again later.

use crate::config::WechatPaySettings;
use crate::db::anomalies;
use crate::error::ApiError;
use crate::http::routes::notify::{self, Refusal, record_malformed};
use crate::infra::metrics::CallbackAnswer;
use crate::state::AppState;
use api_types::api::{CallbackData, CallbackEvent, EventTimestamp};
use api_types::{AnomalyKind, CallbackType, Currency, PlatformPaymentId};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use platform_protocols::wechatpay::{
    self as wx, EventType, Notification, NotificationPayload, NotificationReply, RefundStatus,
    TradeState,
};
use serde_json::json;
use time::format_description::well_known::Rfc3339;
use tracing::Instrument;

/// The body of every refusal, as WeChat Pay documents it: `{"code":"FAIL","message":...}`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct FailReply {
    /// Always `FAIL`.
    code: String,
    /// Why, for the merchant platform's delivery log.
    message: String,
}

/// A refusal as WeChat Pay reads it: a 4xx/5xx with `{"code":"FAIL","message":...}`.
fn fail_reply(refusal: &Refusal) -> Response {
    let NotificationReply { code, message } = NotificationReply::fail(refusal.message.clone());
    (refusal.status, Json(FailReply { code, message })).into_response()
}

/// `POST /api/payments/callback/wechatpay`: verify, decrypt, apply; 204 after commit.
#[utoipa::path(post, path = "/payments/callback/wechatpay", tag = "platform",
    request_body(content = String, description = "WeChat Pay's notification envelope (JSON, resource encrypted)", content_type = "application/json"),
    params(("Wechatpay-Signature" = String, Header, description = "RSA-SHA256 over TIMESTAMP\\nNONCE\\nBODY\\n"),
        ("Wechatpay-Timestamp" = String, Header, description = "Unix seconds; refused outside five minutes"),
        ("Wechatpay-Nonce" = String, Header, description = "The signature's nonce"),
        ("Wechatpay-Serial" = String, Header, description = "The platform key's id")),
    responses((status = 204, description = "Applied, or a duplicate: WeChat Pay stops delivering it"),
        (status = 400, description = "Signed but unreadable, undecryptable, or for another merchant (anomaly)", body = FailReply),
        (status = 401, description = "Signature, serial or timestamp refused; nothing written", body = FailReply),
        (status = 404, description = "No such order, or WeChat Pay is not this backend's platform", body = FailReply),
        (status = 409, description = "The id was used with another content", body = FailReply),
        (status = 413, description = "Larger than 64 KiB", body = FailReply),
        (status = 422, description = "Amount or currency differ from the order's (anomaly)", body = FailReply),
        (status = 503, description = "The database is unavailable: deliver again", body = FailReply)))]
#[tracing::instrument(name = "wechatpay_notify", skip_all,
    fields(callback_id = tracing::field::Empty, order_no = tracing::field::Empty))]
pub async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match handle(&state, &headers, body).await {
        Ok(answer) => {
            tracing::info!(
                outcome = answer.as_str(),
                "WeChat Pay notification answered 204"
            );
            notify::acknowledged(answer, StatusCode::NO_CONTENT.into_response())
        }
        Err(refusal) => {
            tracing::warn!(status = refusal.status.as_u16(), code = refusal.code, message = %refusal.message,
                "WeChat Pay notification refused; it will be delivered again");
            refusal.tag(fail_reply(&refusal))
        }
    }
}

async fn handle(
    state: &AppState,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<CallbackAnswer, Refusal> {
    let Some(settings) = state.platform.wechatpay_settings() else {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            "WeChat Pay is not this checkout's platform",
        ));
    };
    let body = notify::body(body)?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    wx::verify_platform_message(headers, &body, &settings.platform, now).map_err(|err| {
        tracing::warn!(reason = %err, "WeChat Pay notification refused: signature check failed; nothing written");
        Refusal::new(StatusCode::UNAUTHORIZED, format!("签名验证失败: {err}"))
    })?;
    let notification: Notification = serde_json::from_slice(&body).map_err(|err| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("not a notification: {err}"),
        )
    })?;
    if !notify::fits_postgres_text(&notification.id) {
        // Not even a delivery line can name it: refused, nothing written.
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "the notification id must not contain U+0000",
        ));
    }
    let callback_id = notification.id.clone();
    // On the request's span too, so its closing line ("answered", "refused") names it.
    tracing::Span::current().record("callback_id", callback_id.as_str());
    let span = tracing::info_span!("wechatpay_notification", callback_id = %callback_id,
        event_type = notification.event_type.as_str());
    // Strings PostgreSQL cannot hold (U+0000) make the notification malformed,
    // whatever it decoded to: the event's, or the anomaly's of another merchant.
    let decoded = span
        .in_scope(|| decode(&notification, settings))
        .and_then(|event| {
            notify::check_event_text(&event)
                .map(|()| event)
                .map_err(Decoded::Malformed)
        })
        .map_err(|decoded| match decoded {
            Decoded::OtherMerchant { order_no, details }
                if !notify::fits_postgres_text(&order_no)
                    || !notify::json_fits_postgres(&details) =>
            {
                Decoded::Malformed(
                    "a notification for another merchant, with U+0000 in its strings".into(),
                )
            }
            other => other,
        });
    let event = match decoded {
        Ok(event) => {
            tracing::Span::current().record("order_no", event.data.order_no.as_str());
            event
        }
        Err(Decoded::Malformed(message)) => {
            record_malformed(state, &callback_id)
                .instrument(span.clone())
                .await?;
            return Err(Refusal::new(StatusCode::BAD_REQUEST, message));
        }
        Err(Decoded::OtherMerchant { order_no, details }) => {
            tracing::Span::current().record("order_no", order_no.as_str());
            anomalies::record(
                &state.db,
                &callback_id,
                &order_no,
                AnomalyKind::MerchantMismatch,
                details,
            )
            .instrument(span.clone())
            .await
            .map_err(ApiError::from)?;
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "the notification is for another merchant or app",
            )
            .counted_as(AnomalyKind::MerchantMismatch.as_str()));
        }
    };
    notify::apply(state, callback_id, event, span).await
}

/// Why a verified envelope does not become an event.
enum Decoded {
    /// Undecryptable, or its content is not what the event type promises.
    Malformed(String),
    /// Decrypted, but for another merchant or app.
    OtherMerchant {
        order_no: String,
        details: serde_json::Value,
    },
}

/// Decrypts the resource and turns it into the checkout's event.
fn decode(
    notification: &Notification,
    settings: &WechatPaySettings,
) -> Result<CallbackEvent, Decoded> {
    let payload = notification
        .decrypt(&settings.apiv3_key)
        .map_err(|err| Decoded::Malformed(format!("resource cannot be decrypted: {err}")))?;
    let sent_at = notification
        .create_time
        .format(&Rfc3339)
        .unwrap_or_default();
    let ours = &settings.merchant.mchid;
    match payload {
        NotificationPayload::Transaction(transaction) => {
            if &transaction.mchid != ours || transaction.appid != settings.appid {
                return Err(Decoded::OtherMerchant {
                    order_no: transaction.out_trade_no.to_string(),
                    details: json!({"platform": "wechatpay", "mchid": transaction.mchid,
                        "appid": transaction.appid, "expected_mchid": ours,
                        "expected_appid": settings.appid,
                        "transaction_id": transaction.transaction_id,
                        "amount_cents": transaction.amount.total,
                        "note": "a signed payment notification for another merchant: refused"}),
                });
            }
            if !matches!(transaction.trade_state, TradeState::Success) {
                return Err(Decoded::Malformed(format!(
                    "TRANSACTION.SUCCESS with trade_state {:?}",
                    transaction.trade_state
                )));
            }
            let payment_id =
                PlatformPaymentId::from_optional(transaction.transaction_id.as_deref())
                    .ok_or_else(|| Decoded::Malformed("a success without transaction_id".into()))?;
            let timestamp = transaction
                .success_time
                .and_then(|at| at.format(&Rfc3339).ok())
                .unwrap_or(sent_at);
            Ok(CallbackEvent {
                kind: CallbackType::PaymentSucceeded,
                timestamp: EventTimestamp::Text(timestamp),
                data: CallbackData {
                    order_no: transaction.out_trade_no.to_string(),
                    amount_cents: transaction.amount.total,
                    currency: transaction.amount.currency,
                    payment_id,
                    merchant_reference: transaction.attach.clone(),
                    refund_no: None,
                    refund_id: None,
                },
            })
        }
        NotificationPayload::Refund(refund) => {
            if &refund.mchid != ours {
                return Err(Decoded::OtherMerchant {
                    order_no: refund.out_trade_no.to_string(),
                    details: json!({"platform": "wechatpay", "mchid": refund.mchid,
                        "expected_mchid": ours, "out_refund_no": refund.out_refund_no,
                        "note": "a signed refund notification for another merchant: refused"}),
                });
            }
            let kind = match (notification.event_type, refund.refund_status) {
                (EventType::RefundSuccess, RefundStatus::Success) => CallbackType::RefundSucceeded,
                (EventType::RefundAbnormal, RefundStatus::Abnormal)
                | (EventType::RefundClosed, RefundStatus::Closed) => CallbackType::RefundFailed,
                (event, status) => {
                    return Err(Decoded::Malformed(format!(
                        "{} with refund_status {status:?}",
                        event.as_str()
                    )));
                }
            };
            let timestamp = refund
                .success_time
                .and_then(|at| at.format(&Rfc3339).ok())
                .unwrap_or(sent_at);
            Ok(CallbackEvent {
                kind,
                timestamp: EventTimestamp::Text(timestamp),
                data: CallbackData {
                    order_no: refund.out_trade_no.to_string(),
                    amount_cents: refund.amount.refund,
                    // WeChat Pay refunds are in the order's currency, CNY.
                    currency: Currency::CNY,
                    payment_id: PlatformPaymentId::new(refund.transaction_id.as_str()).map_err(
                        |_| {
                            Decoded::Malformed(
                                "a refund notification without transaction_id".into(),
                            )
                        },
                    )?,
                    merchant_reference: None,
                    refund_no: Some(refund.out_refund_no.clone()),
                    refund_id: Some(refund.refund_id.clone()),
                },
            })
        }
    }
}
