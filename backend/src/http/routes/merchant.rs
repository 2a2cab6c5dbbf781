//! `POST /api/merchant/orders`: a merchant whose catalogue lives elsewhere
//! places an order for one of our shoppers, server to server, and sends the
//! shopper to its `pay_url`. Bearer `MERCHANT_API_KEY` (404 when unset), the
//! same `Idempotency-Key` rules as a shopper's orders.

use crate::db::shoppers;
use crate::error::ApiError;
use crate::http::extract::AppJson;
use crate::http::openapi::BearerErrors;
use crate::http::routes::orders::place;
use crate::idempotency::{self, Begun, IdempotencyKey};
use crate::state::AppState;
use api_types::api::CreateMerchantOrder;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// `POST /api/merchant/orders` -> 201 the order with its `pay_url`.
#[utoipa::path(post, path = "/merchant/orders", tag = "merchant", security(("merchant_key" = [])), request_body = CreateMerchantOrder,
    params(("Idempotency-Key" = String, Header, description = "A new UUID per order; the same one when retrying it")),
    responses((status = 201, description = "The PENDING order with its pay_url (replays carry Idempotent-Replayed: true)", body = api_types::api::Order),
        (status = 409, description = "IDEMPOTENCY_KEY_IN_USE", body = api_types::ErrorBody),
        (status = 422, description = "IDEMPOTENCY_KEY_REUSED or CURRENCY_MISMATCH", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn create_order(
    State(state): State<AppState>,
    key: IdempotencyKey,
    AppJson(body): AppJson<CreateMerchantOrder>,
) -> Result<Response, ApiError> {
    if body.amount_cents <= 0 {
        return Err(ApiError::BadRequest(
            "amount_cents must be a positive integer".into(),
        ));
    }
    let description = body.description.trim();
    let chars = description.chars().count();
    if chars == 0 || chars > MAX_DESCRIPTION_CHARS || description.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(format!(
            "description must be 1 to {MAX_DESCRIPTION_CHARS} characters, none of them control characters"
        )));
    }
    let scope = "merchant";
    let fingerprint = idempotency::fingerprint(&body)?;
    let mut tx = match idempotency::begin(&state.db, scope, &key, &fingerprint).await? {
        Begun::Replay(answer) => return Ok(answer),
        Begun::Fresh(tx) => tx,
    };
    if shoppers::email(&mut *tx, body.shopper_id).await?.is_none() {
        return Err(ApiError::ShopperNotFound);
    }
    let order = place(
        &mut tx,
        &state,
        body.shopper_id,
        body.amount_cents,
        body.currency,
        description,
    )
    .await?;
    tracing::info!(order_no = %order.order_no, shopper_id = %body.shopper_id, amount_cents = body.amount_cents, "merchant order placed");
    idempotency::finish(tx, scope, &key, &fingerprint, StatusCode::CREATED, &order).await
}
