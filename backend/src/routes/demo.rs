//! `GET /api/demo`: the demo shop's account and orders (demo mode only).

use crate::db::{accounts, orders};
use crate::error::ApiError;
use crate::state::AppState;
use api_types::Currency;
use api_types::api::{Account, DemoShop};
use axum::Json;
use axum::extract::State;
use uuid::Uuid;

/// The demo account's fixed id, so restarts find the same account.
pub const DEMO_ACCOUNT_ID: Uuid = Uuid::from_u128(0x6465_6d6f_0000_4000_8000_0000_0000_0001);
/// The demo account's opening balance: 1,000.00 EUR.
pub const DEMO_OPENING_BALANCE_CENTS: i64 = 100_000;
/// The demo account's currency.
pub const DEMO_CURRENCY: Currency = Currency::EUR;

/// The demo account with its newest orders; 404 when demo mode is off.
pub async fn shop(State(state): State<AppState>) -> Result<Json<DemoShop>, ApiError> {
    let account_id = state.demo_account.ok_or(ApiError::NotFound)?;
    let account = accounts::find(&state.db, account_id)
        .await?
        .ok_or(ApiError::AccountNotFound)?;
    let orders = orders::list_for_account(&state.db, account_id, 20)
        .await?
        .iter()
        .map(orders::OrderRow::to_dto)
        .collect();
    Ok(Json(DemoShop {
        account: Account {
            account_id,
            balance_cents: account.balance_cents,
            currency: account.currency,
        },
        orders,
    }))
}

/// Opens the demo account if it does not exist yet.
pub async fn seed(db: &sqlx::PgPool) -> sqlx::Result<Uuid> {
    accounts::insert(
        db,
        DEMO_ACCOUNT_ID,
        DEMO_OPENING_BALANCE_CENTS,
        DEMO_CURRENCY,
    )
    .await?;
    Ok(DEMO_ACCOUNT_ID)
}
