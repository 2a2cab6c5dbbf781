//! What the routes of the platforms' own notification formats (WeChat Pay,
//! Alipay) share: the refusal they answer with, reading the raw body, the
//! delivery-log line of a signed but unreadable notification, and applying
//! the decoded event through the one charge transaction. Each route words its
//! refusal the way its platform reads it.

use crate::callback::VerifiedCallback;
use crate::charge;
use crate::db::deliveries;
use crate::error::ApiError;
use crate::infra::metrics::{CallbackAnswer, ErrorCodeTag};
use crate::state::AppState;
use api_types::api::{CallbackData, CallbackEvent, EventTimestamp};
use api_types::{CallbackOutcome, ErrorCode};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::Response;
use checkout_rules::origin::Origin;
use sha2::{Digest, Sha256};
use tracing::Instrument;

/// The largest callback body we read.
pub const MAX_CALLBACK_BYTES: usize = crate::http::extract::MAX_BODY_BYTES;

/// Why a notification is refused, with the status the platform is answered
/// and the code it is counted under ([`crate::infra::metrics`]).
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
    pub(crate) code: &'static str,
}

impl Refusal {
    /// A refusal with the code its status stands for.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        let code = match status {
            StatusCode::UNAUTHORIZED => ErrorCode::SignatureInvalid,
            StatusCode::NOT_FOUND => ErrorCode::NotFound,
            StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
            _ => ErrorCode::BadRequest,
        };
        Self {
            status,
            message: message.into(),
            code: code.as_str(),
        }
    }

    /// The same refusal counted under another code.
    pub(crate) fn counted_as(self, code: &'static str) -> Self {
        Self { code, ..self }
    }

    /// The answer in the platform's words (`reply`), tagged with the refusal's code.
    pub(crate) fn tag(&self, mut reply: Response) -> Response {
        reply.extensions_mut().insert(ErrorCodeTag(self.code));
        reply
    }
}

/// An acknowledgement in the platform's words (`reply`), tagged with what was done.
pub(crate) fn acknowledged(answer: CallbackAnswer, mut reply: Response) -> Response {
    reply.extensions_mut().insert(answer);
    reply
}

impl From<ApiError> for Refusal {
    fn from(err: ApiError) -> Self {
        let (status, code) = err.status_and_code();
        let message = match status {
            // Never a database error's text to the outside.
            StatusCode::INTERNAL_SERVER_ERROR | StatusCode::SERVICE_UNAVAILABLE => code.to_string(),
            _ => format!("{code}: {err}"),
        };
        Self {
            status,
            message,
            code: code.as_str(),
        }
    }
}

/// Whether PostgreSQL `text` (and `jsonb`) can hold this string: anything but
/// U+0000. A notification's id, and every string of its event, is checked
/// before it reaches a query; a signed one that fails is malformed (400), never
/// a 500 that the platform would deliver again for days.
pub(crate) fn fits_postgres_text(text: &str) -> bool {
    !text.contains('\0')
}

/// Whether every string (keys too) of a JSON value fits PostgreSQL `jsonb`.
pub(crate) fn json_fits_postgres(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(text) => fits_postgres_text(text),
        serde_json::Value::Array(items) => items.iter().all(json_fits_postgres),
        serde_json::Value::Object(fields) => fields
            .iter()
            .all(|(key, value)| fits_postgres_text(key) && json_fits_postgres(value)),
        _ => true,
    }
}

/// Refuses an event any of whose strings PostgreSQL cannot hold, naming the
/// fields. Every string of the event is destructured by name, so a field
/// added to the event cannot be forgotten here.
pub(crate) fn check_event_text(event: &CallbackEvent) -> Result<(), String> {
    let CallbackEvent {
        kind: _,
        timestamp,
        data:
            CallbackData {
                order_no,
                amount_cents: _,
                currency: _,
                payment_id,
                merchant_reference,
                refund_no,
                refund_id,
            },
    } = event;
    let timestamp = match timestamp {
        EventTimestamp::Text(text) => Some(text.as_str()),
        EventTimestamp::Unix(_) => None,
    };
    let unfit: Vec<&str> = [
        ("timestamp", timestamp),
        ("order_no", Some(order_no.as_str())),
        ("payment_id", Some(payment_id.as_str())),
        ("merchant_reference", merchant_reference.as_deref()),
        ("refund_no", refund_no.as_deref()),
        ("refund_id", refund_id.as_deref()),
    ]
    .into_iter()
    .filter(|(_, text)| text.is_some_and(|text| !fits_postgres_text(text)))
    .map(|(name, _)| name)
    .collect();
    if unfit.is_empty() {
        Ok(())
    } else {
        Err(format!("{} must not contain U+0000", unfit.join(", ")))
    }
}

/// The raw body, or why it could not be read (larger than 64 KiB, cut off).
pub(crate) fn body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, Refusal> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("larger than {MAX_CALLBACK_BYTES} bytes"),
            )
        } else {
            Refusal::new(StatusCode::BAD_REQUEST, rejection.body_text())
        }
    })
}

/// A signed notification that does not read as an event: one line in the
/// delivery log for people, nothing else.
pub(crate) async fn record_malformed(state: &AppState, callback_id: &str) -> Result<(), Refusal> {
    deliveries::record(
        &state.db,
        deliveries::Delivery {
            callback_id,
            order_no: None,
            event_type: None,
            outcome: CallbackOutcome::MalformedBody,
            http_status: 400,
        },
    )
    .await
    .map_err(|err| Refusal::from(ApiError::from(err)))
}

/// Applies a verified, decoded notification in the charge transaction. Its
/// fingerprint is the SHA-256 of the event's canonical JSON, so a retry that
/// was encrypted or signed afresh is still the same notification.
pub(crate) async fn apply(
    state: &AppState,
    callback_id: String,
    event: CallbackEvent,
    span: tracing::Span,
) -> Result<CallbackAnswer, Refusal> {
    let body_sha256 = serde_json::to_vec(&event)
        .map(|canonical| hex::encode(Sha256::digest(canonical)))
        .map_err(|err| Refusal::from(ApiError::Internal(err.into())))?;
    let callback = VerifiedCallback {
        callback_id,
        body_sha256,
        event,
        origin: Origin::Notification,
    };
    let ack = charge::apply_callback(&state.db, &state.warm, &state.seen, &callback)
        .instrument(span)
        .await?;
    Ok(if ack.duplicate {
        CallbackAnswer::Duplicate
    } else {
        CallbackAnswer::Applied
    })
}
