//! `/api/merchant/*`: a merchant's server, by its own API key
//! ([`crate::http::auth::merchant`]), places orders for our shoppers and
//! sends them to the order's `pay_url`, then reads its orders and what the
//! checkout owes it. A merchant sees only its own orders: anyone else's
//! answers `404 ORDER_NOT_FOUND`, exactly as a missing one does. Idempotency
//! keys are per merchant ([`crate::merchants::idempotency_scope`]).

use crate::db::{books, orders, refunds, shoppers};
use crate::error::ApiError;
use crate::http::auth::merchant::Merchant;
use crate::http::extract::{AppJson, AppQuery, OrderNoPath, plain_text};
use crate::http::openapi::BearerErrors;
use crate::http::routes::orders::{Placed, place};
use crate::idempotency::{self, Begun, IdempotencyKey};
use crate::merchants::idempotency_scope;
use crate::state::AppState;
use api_types::OrderStatus;
use api_types::api::CreateMerchantOrder;
use api_types::merchant::{BalanceEntries, MerchantBalance, MerchantOrder, MerchantOrderList};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use checkout_rules::return_url;
use serde::Deserialize;
use time::OffsetDateTime;

/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Longest `merchant_reference`.
pub const MAX_REFERENCE_CHARS: usize = 64;
/// Most items of one page of a list.
pub const MAX_PAGE: u32 = 100;
/// Items of a page when `limit` is not given.
pub const DEFAULT_PAGE: u32 = 10;

/// `POST /api/merchant/orders` -> 201 the order with its `pay_url`.
#[utoipa::path(post, path = "/merchant/orders", tag = "merchant", security(("merchant_key" = [])), request_body = CreateMerchantOrder,
    params(("Idempotency-Key" = String, Header, description = "A new UUID per order; the same one when retrying it")),
    responses((status = 201, description = "The PENDING order with its pay_url (replays carry Idempotent-Replayed: true)", body = api_types::api::Order),
        (status = 404, description = "SHOPPER_NOT_FOUND", body = api_types::ErrorBody),
        (status = 409, description = "IDEMPOTENCY_KEY_IN_USE or MERCHANT_REFERENCE_IN_USE", body = api_types::ErrorBody),
        (status = 422, description = "IDEMPOTENCY_KEY_REUSED, CURRENCY_MISMATCH or RETURN_URL_NOT_ALLOWED", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn create_order(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    key: IdempotencyKey,
    AppJson(body): AppJson<CreateMerchantOrder>,
) -> Result<Response, ApiError> {
    if body.amount_cents <= 0 {
        return Err(ApiError::BadRequest(
            "amount_cents must be a positive integer".into(),
        ));
    }
    let description = plain_text(&body.description, "description", MAX_DESCRIPTION_CHARS)?;
    let reference = body.merchant_reference.as_deref();
    if reference.is_some_and(|r| {
        r.is_empty()
            || r.chars().count() > MAX_REFERENCE_CHARS
            || r.trim() != r
            || r.chars().any(char::is_control)
    }) {
        return Err(ApiError::BadRequest(format!(
            "merchant_reference must be 1 to {MAX_REFERENCE_CHARS} characters, without control characters or spaces at either end"
        )));
    }
    // Only the merchant's own origins: the page follows these URLs and no
    // other. Kept as the URL parser wrote them back, the form browsers follow.
    let allowed = |url: &Option<String>| -> Result<Option<String>, ApiError> {
        url.as_deref()
            .map(|url| {
                return_url::check(url, &merchant.return_origins)
                    .map(|url| url.to_string())
                    .map_err(|why| ApiError::ReturnUrlNotAllowed(why.to_string()))
            })
            .transpose()
    };
    let return_to = allowed(&body.return_url)?;
    let cancel_to = allowed(&body.cancel_url)?;
    let scope = idempotency_scope(merchant.merchant_id);
    let fingerprint = idempotency::fingerprint(&body)?;
    let mut tx = match idempotency::begin(&state.db, &scope, &key, &fingerprint).await? {
        Begun::Replay(answer) => return Ok(answer),
        Begun::Fresh(tx) => tx,
    };
    if shoppers::email(&mut *tx, body.shopper_id).await?.is_none() {
        return Err(ApiError::ShopperNotFound);
    }
    let order = place(
        &mut tx,
        &state,
        &Placed {
            shopper_id: body.shopper_id,
            amount_cents: body.amount_cents,
            currency: body.currency,
            description,
            merchant_id: merchant.merchant_id,
            merchant_reference: reference,
            return_url: return_to.as_deref(),
            cancel_url: cancel_to.as_deref(),
        },
    )
    .await?;
    tracing::info!(order_no = %order.order_no, merchant_id = %merchant.merchant_id,
        key_prefix = %merchant.key_prefix, shopper_id = %body.shopper_id,
        amount_cents = body.amount_cents, merchant_reference = ?reference, "merchant order placed");
    idempotency::finish(tx, &scope, &key, &fingerprint, StatusCode::CREATED, &order).await
}

/// `GET /api/merchant/orders/{order_no}` -> the merchant's order with its
/// reference and refunds (`404 ORDER_NOT_FOUND` for anyone else's).
#[utoipa::path(get, path = "/merchant/orders/{order_no}", tag = "merchant", security(("merchant_key" = [])),
    params(("order_no" = String, Path, description = "The order number")),
    responses((status = 200, description = "The order, its reference and refunds", body = MerchantOrder),
        (status = 404, description = "ORDER_NOT_FOUND: none of this merchant's orders has that number", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn get_order(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<Json<MerchantOrder>, ApiError> {
    let row = orders::find_of_merchant(&state.db, order_no.as_str(), merchant.merchant_id)
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    let refunds = refunds::list_for_order(&state.db, order_no.as_str()).await?;
    Ok(Json(MerchantOrder {
        order: row.order.to_dto(&state.public_origin),
        merchant_reference: row.merchant_reference,
        refunds: refunds.iter().map(refunds::RefundRow::to_dto).collect(),
    }))
}

/// The query of `GET /api/merchant/orders`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListOrders {
    /// Only orders in this status.
    #[param(value_type = Option<OrderStatus>)]
    status: Option<String>,
    /// Only orders created after this moment (RFC 3339, e.g. `2026-12-01T00:00:00Z`).
    created_after: Option<String>,
    /// How many, 1 to 100 (default 10).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// The cursor: the `order_no` of the last order of the previous page.
    starting_after: Option<String>,
}

/// The page size asked for, 1 to [`MAX_PAGE`].
fn page_size(limit: Option<u32>) -> Result<i64, ApiError> {
    match limit.unwrap_or(DEFAULT_PAGE) {
        n @ 1..=MAX_PAGE => Ok(i64::from(n)),
        _ => Err(ApiError::BadRequest(format!(
            "limit must be 1 to {MAX_PAGE}"
        ))),
    }
}

/// `GET /api/merchant/orders` -> the merchant's orders, newest first, a page
/// at a time (`{"data":[...],"has_more":bool}`).
#[utoipa::path(get, path = "/merchant/orders", tag = "merchant", security(("merchant_key" = [])),
    params(ListOrders),
    responses((status = 200, description = "A page of the merchant's orders, newest first", body = MerchantOrderList),
        BearerErrors))]
pub async fn list_orders(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    AppQuery(query): AppQuery<ListOrders>,
) -> Result<Json<MerchantOrderList>, ApiError> {
    let limit = page_size(query.limit)?;
    let status = query
        .status
        .as_deref()
        .map(|text| {
            text.parse::<OrderStatus>().map_err(|_| {
                ApiError::BadRequest(format!(
                    "status must be one of {}",
                    OrderStatus::ALL.map(OrderStatus::as_str).join(", ")
                ))
            })
        })
        .transpose()?;
    let created_after = query
        .created_after
        .as_deref()
        .map(|text| {
            OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).map_err(
                |_| {
                    ApiError::BadRequest(
                        "created_after must be an RFC 3339 time such as 2026-12-01T00:00:00Z"
                            .into(),
                    )
                },
            )
        })
        .transpose()?;
    // The cursor must be one of the merchant's own orders; anyone else's is
    // refused exactly as a number that names no order.
    let before = match query.starting_after.as_deref() {
        None => None,
        Some(order_no) => {
            let cursor = orders::find_of_merchant(&state.db, order_no, merchant.merchant_id)
                .await?
                .ok_or_else(|| {
                    ApiError::BadRequest(
                        "starting_after must be the order_no of one of your orders".into(),
                    )
                })?;
            Some((cursor.order.created_at, cursor.order.order_no))
        }
    };
    let filter = orders::MerchantOrderFilter {
        status,
        created_after,
        before,
    };
    let mut rows =
        orders::list_for_merchant(&state.db, merchant.merchant_id, &filter, limit + 1).await?;
    let has_more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let order_nos: Vec<String> = rows.iter().map(|row| row.order.order_no.clone()).collect();
    let refunds = refunds::list_for_orders(&state.db, &order_nos).await?;
    let data = rows
        .into_iter()
        .map(|row| MerchantOrder {
            refunds: refunds
                .iter()
                .filter(|refund| refund.order_no == row.order.order_no)
                .map(refunds::RefundRow::to_dto)
                .collect(),
            order: row.order.to_dto(&state.public_origin),
            merchant_reference: row.merchant_reference,
        })
        .collect();
    Ok(Json(MerchantOrderList { data, has_more }))
}

/// `GET /api/merchant/balance` -> what the checkout owes the merchant, per
/// currency, read from its account in the books.
#[utoipa::path(get, path = "/merchant/balance", tag = "merchant", security(("merchant_key" = [])),
    responses((status = 200, description = "The merchant's balance per currency", body = MerchantBalance),
        BearerErrors))]
pub async fn balance(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
) -> Result<Json<MerchantBalance>, ApiError> {
    let balances = books::merchant_balances(&state.db, merchant.merchant_id).await?;
    Ok(Json(MerchantBalance { balances }))
}

/// The query of `GET /api/merchant/balance/entries`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListEntries {
    /// How many, 1 to 100 (default 10).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// The cursor: the `entry_id` of the last entry of the previous page.
    starting_after: Option<String>,
}

/// `GET /api/merchant/balance/entries` -> the posted entries of the
/// merchant's account, newest first, each naming its order or refund.
#[utoipa::path(get, path = "/merchant/balance/entries", tag = "merchant", security(("merchant_key" = [])),
    params(ListEntries),
    responses((status = 200, description = "A page of the account's entries, newest first", body = BalanceEntries),
        BearerErrors))]
pub async fn balance_entries(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    AppQuery(query): AppQuery<ListEntries>,
) -> Result<Json<BalanceEntries>, ApiError> {
    let limit = page_size(query.limit)?;
    let mut data = books::merchant_entries(
        &state.db,
        merchant.merchant_id,
        query.starting_after.as_deref(),
        limit + 1,
    )
    .await?
    .ok_or_else(|| {
        ApiError::BadRequest("starting_after must be the entry_id of one of your entries".into())
    })?;
    let has_more = data.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    data.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(Json(BalanceEntries { data, has_more }))
}
