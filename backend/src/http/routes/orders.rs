//! `/api/orders`: a shopper places orders from the catalogue, lists and reads
//! their own, and takes one-time request tokens for them. Every route needs a
//! session ([`SignedIn`]); somebody else's order answers exactly as a missing
//! one does (`404 ORDER_NOT_FOUND`), so order numbers cannot be probed.

use crate::db::{self, orders, products, shoppers};
use crate::error::ApiError;
use crate::http::auth::session::SignedIn;
use crate::http::extract::{AppJson, OrderNoPath};
use crate::http::openapi::ShopperErrors;
use crate::idempotency::{self, Begun, IdempotencyKey};
use crate::infra::tokens::{TokenBinding, TokenFingerprint};
use crate::merchants::SHOP_MERCHANT_ID;
use crate::state::AppState;
use api_types::Currency;
use api_types::api::{CreateOrder, Order, RequestToken};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use checkout_rules::order_no::OrderNo;
use uuid::Uuid;

/// Most items of one product in one order.
pub const MAX_QUANTITY: u32 = 100;
/// Most orders `GET /api/orders` lists.
pub const LIST_LIMIT: i64 = 50;

/// `POST /api/orders` (`Idempotency-Key` required) -> 201 the PENDING order,
/// priced from the catalogue, on the shopper's account in the product's currency.
#[utoipa::path(post, path = "/orders", tag = "shopper", security(("session" = [])), request_body = CreateOrder,
    params(("Idempotency-Key" = String, Header, description = "A new UUID per order; the same one when retrying it")),
    responses((status = 201, description = "The PENDING order, priced from the catalogue (replays carry Idempotent-Replayed: true)", body = Order),
        (status = 409, description = "IDEMPOTENCY_KEY_IN_USE: the first request with this key is still running", body = api_types::ErrorBody),
        (status = 422, description = "IDEMPOTENCY_KEY_REUSED or CURRENCY_MISMATCH", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn create_order(
    State(state): State<AppState>,
    signed_in: SignedIn,
    key: IdempotencyKey,
    AppJson(body): AppJson<CreateOrder>,
) -> Result<Response, ApiError> {
    let shopper_id = signed_in.shopper_id;
    state.limits.orders.check(&shopper_id)?;
    if body.quantity == 0 || body.quantity > MAX_QUANTITY {
        return Err(ApiError::BadRequest(format!(
            "quantity must be 1 to {MAX_QUANTITY}"
        )));
    }
    if !crate::http::routes::products::is_valid_sku(&body.sku) {
        // No product can have it; not even looked up.
        return Err(ApiError::ProductNotFound);
    }
    let scope = format!("shopper:{shopper_id}");
    let fingerprint = idempotency::fingerprint(&body)?;
    let mut tx = match idempotency::begin(&state.db, &scope, &key, &fingerprint).await? {
        Begun::Replay(answer) => return Ok(answer),
        Begun::Fresh(tx) => tx,
    };
    let product = products::find(&mut *tx, &body.sku)
        .await?
        .ok_or(ApiError::ProductNotFound)?;
    let amount_cents = product
        .price_cents
        .checked_mul(i64::from(body.quantity))
        .ok_or_else(|| ApiError::BadRequest("the order's amount is too large".into()))?;
    let description = if body.quantity == 1 {
        product.name.clone()
    } else {
        format!("{} × {}", body.quantity, product.name)
    };
    let order = place(
        &mut tx,
        &state,
        &Placed {
            shopper_id,
            amount_cents,
            currency: product.currency,
            description: &description,
            merchant_id: SHOP_MERCHANT_ID,
            merchant_reference: None,
            return_url: None,
            cancel_url: None,
        },
    )
    .await?;
    tracing::info!(order_no = %order.order_no, %shopper_id, sku = %product.sku, quantity = body.quantity, amount_cents, "order placed");
    idempotency::finish(tx, &scope, &key, &fingerprint, StatusCode::CREATED, &order).await
}

/// What an order is placed with: whose, how much, what for, whose sale.
#[derive(Debug, Clone)]
pub struct Placed<'a> {
    /// The shopper who will pay it.
    pub shopper_id: Uuid,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Its currency: the shopper's account in it pays (or is named, for a platform payment).
    pub currency: Currency,
    /// What is being bought.
    pub description: &'a str,
    /// The merchant whose sale it is (the shop's own: [`SHOP_MERCHANT_ID`]).
    pub merchant_id: Uuid,
    /// The merchant's own id for it.
    pub merchant_reference: Option<&'a str>,
    /// Where the shopper goes back once it is final (already checked).
    pub return_url: Option<&'a str>,
    /// Where a shopper who gives up goes (already checked).
    pub cancel_url: Option<&'a str>,
}

/// Inserts a PENDING order for the shopper on their account in its currency
/// (`422 CURRENCY_MISMATCH` when they have none), in the caller's
/// transaction; `409 MERCHANT_REFERENCE_IN_USE` when the merchant gave
/// another of its orders the same reference.
pub async fn place(
    tx: &mut sqlx::PgConnection,
    state: &AppState,
    placed: &Placed<'_>,
) -> Result<Order, ApiError> {
    let account_id = shoppers::account_in(&mut *tx, placed.shopper_id, placed.currency)
        .await?
        .ok_or(ApiError::NoAccountInCurrency(placed.currency))?;
    let order_no = OrderNo::generate();
    let row = orders::insert(
        &mut *tx,
        &orders::NewOrder {
            order_no: order_no.as_str(),
            shopper_id: placed.shopper_id,
            account_id,
            amount_cents: placed.amount_cents,
            currency: placed.currency,
            description: placed.description,
            ttl_secs: state.order_ttl_secs,
            merchant_id: placed.merchant_id,
            merchant_reference: placed.merchant_reference,
            return_url: placed.return_url,
            cancel_url: placed.cancel_url,
        },
    )
    .await
    .map_err(|err| match placed.merchant_reference {
        Some(reference) if db::is_unique_violation(&err, orders::MERCHANT_REFERENCE_UNIQUE) => {
            ApiError::MerchantReferenceInUse(reference.to_owned())
        }
        _ => err.into(),
    })?;
    Ok(row.to_dto(&state.public_origin))
}

/// `GET /api/orders` -> the signed-in shopper's newest orders.
#[utoipa::path(get, path = "/orders", tag = "shopper", security(("session" = [])),
    responses((status = 200, description = "The shopper's newest orders", body = Vec<Order>), ShopperErrors))]
pub async fn list_orders(
    State(state): State<AppState>,
    signed_in: SignedIn,
) -> Result<Json<Vec<Order>>, ApiError> {
    let rows = orders::list_for_shopper(&state.db, signed_in.shopper_id, LIST_LIMIT).await?;
    Ok(Json(
        rows.iter()
            .map(|row| row.to_dto(&state.public_origin))
            .collect(),
    ))
}

/// `GET /api/orders/{order_no}` -> the order, if it is the shopper's.
#[utoipa::path(get, path = "/orders/{order_no}", tag = "shopper", security(("session" = [])),
    params(("order_no" = String, Path, description = "The order number")),
    responses((status = 200, description = "The order", body = Order), ShopperErrors))]
pub async fn get_order(
    State(state): State<AppState>,
    signed_in: SignedIn,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<Json<Order>, ApiError> {
    let row = orders::find_owned(&state.db, order_no.as_str(), signed_in.shopper_id)
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    Ok(Json(row.to_dto(&state.public_origin)))
}

/// `POST /api/orders/{order_no}/request-token` -> 201 a one-time token bound to
/// the shopper, the order and its amount.
#[utoipa::path(post, path = "/orders/{order_no}/request-token", tag = "shopper", security(("session" = [])),
    params(("order_no" = String, Path, description = "The order number")),
    responses((status = 201, description = "A one-time token for one Pay now", body = RequestToken),
        (status = 409, description = "ORDER_NOT_PAYABLE: the order is final", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn issue_request_token(
    State(state): State<AppState>,
    signed_in: SignedIn,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<(StatusCode, Json<RequestToken>), ApiError> {
    state.limits.tokens.check(&signed_in.shopper_id)?;
    let order = orders::find_owned(&state.db, order_no.as_str(), signed_in.shopper_id)
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    crate::pay::ensure_payable(order.status, order.expires_at)?;
    let binding = TokenBinding {
        order_no: order.order_no.clone(),
        shopper_id: signed_in.shopper_id,
        amount_cents: order.amount_cents,
        currency: order.currency,
    };
    let (token, expires_at) = state
        .tokens
        .issue(&binding)
        .await
        .map_err(ApiError::TokenStoreUnavailable)?;
    // Shared with every token issued meanwhile: one statement, one commit.
    state
        .token_records
        .record(orders::TokenIssued {
            request_token: token,
            order_no: order.order_no,
            expires_at,
        })
        .await?;
    crate::infra::metrics::token_issued();
    tracing::info!(%order_no, token_fp = %TokenFingerprint::of(token), "request token issued");
    Ok((
        StatusCode::CREATED,
        Json(RequestToken {
            request_token: token,
            expires_at,
        }),
    ))
}
