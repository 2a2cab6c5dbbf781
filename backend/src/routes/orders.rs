//! `/api/orders`: create and read orders, and hand out one-time request tokens.

use crate::db::{accounts, orders};
use crate::error::ApiError;
use crate::extract::AppJson;
use crate::order_no::OrderNo;
use crate::state::AppState;
use crate::tokens::{TokenBinding, TokenFingerprint};
use api_types::OrderStatus;
use api_types::api::{CreateOrder, Order, RequestToken};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

/// `POST /api/orders` -> 201 the PENDING order.
pub async fn create_order(
    State(state): State<AppState>,
    AppJson(body): AppJson<CreateOrder>,
) -> Result<(StatusCode, Json<Order>), ApiError> {
    if body.amount_cents <= 0 {
        return Err(ApiError::BadRequest(
            "amount_cents must be a positive integer".into(),
        ));
    }
    let account = accounts::find(&state.db, body.account_id)
        .await?
        .ok_or(ApiError::AccountNotFound)?;
    if account.currency != body.currency {
        return Err(ApiError::CurrencyMismatch {
            account: account.currency,
            order: body.currency,
        });
    }
    let order_no = OrderNo::generate();
    let row = orders::insert(
        &state.db,
        order_no.as_str(),
        body.account_id,
        body.amount_cents,
        body.currency,
    )
    .await?;
    tracing::info!(%order_no, amount_cents = body.amount_cents, "order created");
    Ok((StatusCode::CREATED, Json(row.to_dto())))
}

/// `GET /api/orders/{order_no}` -> the order.
pub async fn get_order(
    State(state): State<AppState>,
    order_no: OrderNo,
) -> Result<Json<Order>, ApiError> {
    let row = orders::find(&state.db, order_no.as_str())
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    Ok(Json(row.to_dto()))
}

/// `POST /api/orders/{order_no}/request-token` -> 201 a one-time token bound to the order and amount.
pub async fn issue_request_token(
    State(state): State<AppState>,
    order_no: OrderNo,
) -> Result<(StatusCode, Json<RequestToken>), ApiError> {
    let order = orders::find(&state.db, order_no.as_str())
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    if order.status != OrderStatus::Pending {
        return Err(ApiError::OrderNotPayable(order.status));
    }
    let binding = TokenBinding {
        order_no: order.order_no.clone(),
        amount_cents: order.amount_cents,
        currency: order.currency,
    };
    let (token, expires_at) = state
        .tokens
        .issue(&binding)
        .await
        .map_err(ApiError::TokenStoreUnavailable)?;
    orders::record_token_issued(&state.db, token, order_no.as_str(), expires_at).await?;
    tracing::info!(%order_no, token_fp = %TokenFingerprint::of(token), "request token issued");
    Ok((
        StatusCode::CREATED,
        Json(RequestToken {
            request_token: token,
            expires_at,
        }),
    ))
}
