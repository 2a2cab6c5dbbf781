//! `accounts`: balances in minor units.

use api_types::Currency;
use sqlx::PgExecutor;
use time::OffsetDateTime;
use uuid::Uuid;

/// A row of `accounts`.
#[derive(Debug, Clone)]
pub struct AccountRow {
    /// Primary key.
    pub account_id: Uuid,
    /// Current balance.
    pub balance_cents: i64,
    /// Balance at opening.
    pub opening_balance_cents: i64,
    /// Held for payments in flight.
    pub held_cents: i64,
    /// The account's currency.
    pub currency: Currency,
    /// When it was opened.
    pub created_at: OffsetDateTime,
}

/// Reads one account.
#[tracing::instrument(name = "db.accounts.find", skip(db))]
pub async fn find(db: impl PgExecutor<'_>, account_id: Uuid) -> sqlx::Result<Option<AccountRow>> {
    sqlx::query_as!(
        AccountRow,
        r#"SELECT account_id, balance_cents, opening_balance_cents, held_cents,
                  currency AS "currency: Currency", created_at
           FROM accounts WHERE account_id = $1"#,
        account_id,
    )
    .fetch_optional(db)
    .await
}

/// SQL of [`deduct`], a step of the callback transaction (the benchmark replays it).
pub const DEDUCT_SQL: &str = include_str!("../../sql/callback/deduct_balance.sql");

/// Deducts a charge and captures the order's hold (`hold_cents`: its amount,
/// or 0 for an order nobody held), guarded so that neither the balance nor the
/// available money can go below zero. Returns false (and changes nothing) when
/// the balance is too low.
#[tracing::instrument(name = "db.accounts.deduct", skip(db))]
pub async fn deduct(
    db: impl PgExecutor<'_>,
    account_id: Uuid,
    amount_cents: i64,
    hold_cents: i64,
) -> sqlx::Result<bool> {
    let result = sqlx::query_file!(
        "sql/callback/deduct_balance.sql",
        account_id,
        amount_cents,
        hold_cents
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Holds `amount_cents` for a payment in flight, if that much is available.
/// Returns false (and changes nothing) when it is not.
#[tracing::instrument(name = "db.accounts.hold", skip(db))]
pub async fn hold(
    db: impl PgExecutor<'_>,
    account_id: Uuid,
    amount_cents: i64,
) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE accounts SET held_cents = held_cents + $2
         WHERE account_id = $1 AND balance_cents - held_cents >= $2",
        account_id,
        amount_cents,
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Releases the hold of payment `payment_id` (it failed or closed): the
/// wallet's held money goes down by `hold_cents` and the books void the hold,
/// in the caller's transaction. Returns false when less than `hold_cents` is
/// held or the books have no such hold, which the caller treats as a broken
/// invariant. A hold of 0 (a platform payment holds nothing) touches nothing.
#[tracing::instrument(name = "db.accounts.release", skip(tx))]
pub async fn release(
    tx: &mut sqlx::PgConnection,
    account_id: Uuid,
    payment_id: Uuid,
    hold_cents: i64,
) -> sqlx::Result<bool> {
    if hold_cents == 0 {
        return Ok(true);
    }
    let result = sqlx::query!(
        "UPDATE accounts SET held_cents = held_cents - $2
         WHERE account_id = $1 AND held_cents >= $2",
        account_id,
        hold_cents,
    )
    .execute(&mut *tx)
    .await?;
    Ok(result.rows_affected() == 1 && crate::db::books::void(tx, payment_id).await?)
}
