//! Refunds of a paid order, asked for by its merchant (`/api/merchant/...`,
//! by the merchant's key; another merchant's order is `404 ORDER_NOT_FOUND`)
//! or the operator (`/api/admin/...`, Bearer `ADMIN_TOKEN`), with the same
//! `Idempotency-Key` rules as placing an order (`crate::idempotency`), keys
//! per caller. The work is `crate::refund`.

use crate::db::merchants::Caller;
use crate::db::refunds as store;
use crate::error::ApiError;
use crate::http::auth::merchant::Merchant;
use crate::http::extract::{AppJson, OrderNoPath};
use crate::http::openapi::BearerErrors;
use crate::idempotency::{self, Begun, IdempotencyKey};
use crate::merchants::idempotency_scope;
use crate::state::AppState;
use api_types::RefundRequester;
use api_types::api::{CreateRefund, Refund};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use checkout_rules::order_no::OrderNo;
use serde_json::json;

/// `POST /api/merchant/orders/{order_no}/refunds` -> 202 the PENDING refund.
#[utoipa::path(post, path = "/merchant/orders/{order_no}/refunds", tag = "merchant", security(("merchant_key" = [])),
    request_body = CreateRefund,
    params(("order_no" = String, Path, description = "The paid order"),
        ("Idempotency-Key" = String, Header, description = "A new UUID per refund; the same one when retrying it")),
    responses((status = 202, description = "The refund, PENDING until the platform answers (replays carry Idempotent-Replayed: true)", body = Refund),
        (status = 404, description = "ORDER_NOT_FOUND", body = api_types::ErrorBody),
        (status = 409, description = "ORDER_NOT_REFUNDABLE or IDEMPOTENCY_KEY_IN_USE", body = api_types::ErrorBody),
        (status = 422, description = "REFUND_EXCEEDS_CHARGE or IDEMPOTENCY_KEY_REUSED", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn merchant_create(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    OrderNoPath(order_no): OrderNoPath,
    key: IdempotencyKey,
    AppJson(body): AppJson<CreateRefund>,
) -> Result<Response, ApiError> {
    create(&state, Asker::Merchant(&merchant), &order_no, &key, &body).await
}

/// `404 ORDER_NOT_FOUND` unless the order is the merchant's.
async fn ensure_merchants(
    state: &AppState,
    merchant: &Caller,
    order_no: &OrderNo,
) -> Result<(), ApiError> {
    crate::db::orders::find_of_merchant(&state.db, order_no.as_str(), merchant.merchant_id)
        .await?
        .map(|_| ())
        .ok_or(ApiError::OrderNotFound)
}

/// `GET /api/merchant/orders/{order_no}/refunds` -> the order's refunds, oldest first.
#[utoipa::path(get, path = "/merchant/orders/{order_no}/refunds", tag = "merchant", security(("merchant_key" = [])),
    params(("order_no" = String, Path, description = "The order")),
    responses((status = 200, description = "Its refunds, oldest first", body = Vec<Refund>),
        (status = 404, description = "ORDER_NOT_FOUND", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn merchant_list(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<Json<Vec<Refund>>, ApiError> {
    ensure_merchants(&state, &merchant, &order_no).await?;
    refunds_of(&state, &order_no).await
}

/// `POST /api/admin/orders/{order_no}/refunds`: the operator's refund, same rules.
#[utoipa::path(post, path = "/admin/orders/{order_no}/refunds", tag = "admin", security(("admin_token" = [])),
    request_body = CreateRefund,
    params(("order_no" = String, Path, description = "The paid order"),
        ("Idempotency-Key" = String, Header, description = "A new UUID per refund; the same one when retrying it")),
    responses((status = 202, description = "The refund, PENDING until the platform answers (replays carry Idempotent-Replayed: true)", body = Refund),
        (status = 404, description = "ORDER_NOT_FOUND", body = api_types::ErrorBody),
        (status = 409, description = "ORDER_NOT_REFUNDABLE or IDEMPOTENCY_KEY_IN_USE", body = api_types::ErrorBody),
        (status = 422, description = "REFUND_EXCEEDS_CHARGE or IDEMPOTENCY_KEY_REUSED", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn admin_create(
    State(state): State<AppState>,
    OrderNoPath(order_no): OrderNoPath,
    key: IdempotencyKey,
    AppJson(body): AppJson<CreateRefund>,
) -> Result<Response, ApiError> {
    create(&state, Asker::Operator, &order_no, &key, &body).await
}

/// `GET /api/admin/orders/{order_no}/refunds`.
#[utoipa::path(get, path = "/admin/orders/{order_no}/refunds", tag = "admin", security(("admin_token" = [])),
    params(("order_no" = String, Path, description = "The order")),
    responses((status = 200, description = "Its refunds, oldest first", body = Vec<Refund>),
        (status = 404, description = "ORDER_NOT_FOUND", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn admin_list(
    State(state): State<AppState>,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<Json<Vec<Refund>>, ApiError> {
    list(&state, &order_no).await
}

/// Who asks for a refund: a merchant (of its own orders only) or the operator.
enum Asker<'a> {
    /// The merchant whose key the request carries.
    Merchant(&'a Caller),
    /// The operator, under the admin token.
    Operator,
}

/// One refund request on behalf of `asker`, with its keys in the asker's
/// scope (a caller's refunds and orders share its key space). Another
/// merchant's order answers as a missing one, before anything is kept.
async fn create(
    state: &AppState,
    asker: Asker<'_>,
    order_no: &OrderNo,
    key: &IdempotencyKey,
    body: &CreateRefund,
) -> Result<Response, ApiError> {
    crate::refund::validate(body)?;
    let (requested_by, scope) = match asker {
        Asker::Merchant(merchant) => {
            ensure_merchants(state, merchant, order_no).await?;
            (
                RefundRequester::Merchant,
                idempotency_scope(merchant.merchant_id),
            )
        }
        Asker::Operator => (
            RefundRequester::Operator,
            RefundRequester::Operator.as_str().to_owned(),
        ),
    };
    let scope = scope.as_str();
    // The order is part of what the key means: the same key on another order is a reuse.
    let fingerprint = idempotency::fingerprint(&json!({
        "refund_of": order_no.as_str(),
        "amount_cents": body.amount_cents,
        "reason": body.reason.trim(),
    }))?;
    let mut tx = match idempotency::begin(&state.db, scope, key, &fingerprint).await? {
        Begun::Replay(answer) => return Ok(answer),
        Begun::Fresh(tx) => tx,
    };
    let refund =
        crate::refund::create_in_tx(&mut tx, order_no.as_str(), body, requested_by).await?;
    let answer = idempotency::finish(
        tx,
        scope,
        key,
        &fingerprint,
        StatusCode::ACCEPTED,
        &refund.to_dto(),
    )
    .await?;
    // At most HAND_OVERS_IN_FLIGHT_MAX at once, payments and refunds together:
    // with every slot taken (a stalled platform), the committed refund waits
    // for the dispatcher.
    let refund_no = refund.refund_no.clone();
    if !crate::refund::spawn_dispatch(&state.db, &state.platform, refund) {
        crate::infra::metrics::hand_over_deferred();
        tracing::info!(%refund_no,
            "hand-overs in flight at the limit: this refund is left to the dispatcher");
    }
    Ok(answer)
}

/// The order's refunds, for the operator: `404 ORDER_NOT_FOUND` when there is no such order.
async fn list(state: &AppState, order_no: &OrderNo) -> Result<Json<Vec<Refund>>, ApiError> {
    if crate::db::orders::find(&state.db, order_no.as_str())
        .await?
        .is_none()
    {
        return Err(ApiError::OrderNotFound);
    }
    refunds_of(state, order_no).await
}

/// The refunds of an order the caller was found to own, oldest first.
async fn refunds_of(state: &AppState, order_no: &OrderNo) -> Result<Json<Vec<Refund>>, ApiError> {
    let rows = store::list_for_order(&state.db, order_no.as_str()).await?;
    Ok(Json(rows.iter().map(store::RefundRow::to_dto).collect()))
}

/// `GET /api/orders/{order_no}/refunds` -> the refunds of the shopper's own
/// order, oldest first, for the receipt (404 for anyone else's).
#[utoipa::path(get, path = "/orders/{order_no}/refunds", tag = "shopper", security(("session" = [])),
    params(("order_no" = String, Path, description = "The order number")),
    responses((status = 200, description = "Its refunds, oldest first", body = Vec<Refund>),
        crate::http::openapi::ShopperErrors))]
pub async fn shopper_list(
    State(state): State<AppState>,
    signed_in: crate::http::auth::session::SignedIn,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<Json<Vec<Refund>>, ApiError> {
    crate::db::orders::find_owned(&state.db, order_no.as_str(), signed_in.shopper_id)
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    refunds_of(&state, &order_no).await
}
