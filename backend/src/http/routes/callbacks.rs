//! `POST /api/payments/callback`: payment result callbacks from the platform.
//!
//! Raw body (at most 64 KiB) -> signature check -> parse -> the charge
//! transaction -> answer. Nothing here touches Redis: callbacks are exactly-once
//! by the database alone. The idempotency key of a callback is `webhook-id`.

use crate::callback::VerifiedCallback;
use crate::charge;
use crate::db::deliveries::{self, Delivery};
use crate::error::ApiError;
use crate::http::openapi::PublicErrors;
use crate::http::routes::notify::MAX_CALLBACK_BYTES;
use crate::infra::metrics::CallbackAnswer;
use crate::state::AppState;
use api_types::CallbackOutcome;
use api_types::api::{CallbackAck, CallbackEvent};
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use checkout_rules::origin::Origin;
use sha2::{Digest, Sha256};

/// `POST /api/payments/callback`: verify the signature over the raw body, then apply the
/// callback in one transaction ([`charge::apply_callback`]); answer 200 only after commit.
#[utoipa::path(post, path = "/payments/callback", tag = "platform", security(("webhook_signature" = [])), request_body = CallbackEvent,
    params(("webhook-id" = String, Header, description = "The notification id: the callback's idempotency key"),
        ("webhook-timestamp" = String, Header, description = "Unix seconds when it was signed")),
    responses((status = 200, description = "Applied, or a duplicate: stop retrying", body = CallbackAck),
        (status = 400, description = "Signed but malformed", body = api_types::ErrorBody),
        (status = 401, description = "SIGNATURE_INVALID", body = api_types::ErrorBody),
        (status = 404, description = "ORDER_NOT_FOUND", body = api_types::ErrorBody),
        (status = 409, description = "CALLBACK_CONFLICT: the id was used with another body", body = api_types::ErrorBody),
        (status = 413, description = "PAYLOAD_TOO_LARGE", body = api_types::ErrorBody),
        (status = 422, description = "AMOUNT_MISMATCH", body = api_types::ErrorBody),
        PublicErrors))]
pub async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(Extension<CallbackAnswer>, Json<CallbackAck>), ApiError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(MAX_CALLBACK_BYTES)
        } else {
            ApiError::BadRequest(rejection.body_text())
        }
    })?;

    let callback_id = state.webhook.verify(&body, &headers).map_err(|reason| {
        tracing::warn!(%reason, "callback refused: signature check failed; nothing written");
        ApiError::SignatureInvalid(reason.to_string())
    })?;

    let parsed = serde_json::from_slice::<CallbackEvent>(&body)
        .map_err(|err| err.to_string())
        // PostgreSQL text cannot hold U+0000: refuse it here, as malformed, not with a 500.
        .and_then(|event| crate::http::routes::notify::check_event_text(&event).map(|()| event));
    let event = match parsed {
        Ok(event) => event,
        Err(err) => {
            // Signed by the platform, so worth a line in the delivery log for people.
            deliveries::record(
                &state.db,
                Delivery {
                    callback_id,
                    order_no: None,
                    event_type: None,
                    outcome: CallbackOutcome::MalformedBody,
                    http_status: 400,
                },
            )
            .await?;
            tracing::warn!(callback_id, outcome = CallbackOutcome::MalformedBody.as_str(), error = %err,
                "signed callback with a malformed body");
            return Err(ApiError::BadRequest(format!(
                "callback body is not a valid event: {err}"
            )));
        }
    };

    let callback = VerifiedCallback {
        callback_id: callback_id.to_owned(),
        body_sha256: hex::encode(Sha256::digest(&body)),
        event,
        origin: Origin::Notification,
    };
    let ack = charge::apply_callback(&state.db, &state.warm, &state.seen, &callback).await?;
    let answer = if ack.duplicate {
        CallbackAnswer::Duplicate
    } else {
        CallbackAnswer::Applied
    };
    Ok((Extension(answer), Json(ack)))
}
