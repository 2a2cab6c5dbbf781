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
    /// The account's currency.
    pub currency: Currency,
    /// When it was opened.
    pub created_at: OffsetDateTime,
}

/// Opens an account; `ON CONFLICT DO NOTHING` makes seeding a fixed id idempotent.
#[tracing::instrument(name = "db.accounts.insert", skip(db))]
pub async fn insert(
    db: impl PgExecutor<'_>,
    account_id: Uuid,
    balance_cents: i64,
    currency: Currency,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO accounts (account_id, balance_cents, opening_balance_cents, currency)
         VALUES ($1, $2, $2, $3)
         ON CONFLICT (account_id) DO NOTHING",
        account_id,
        balance_cents,
        currency.as_str(),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Reads one account.
#[tracing::instrument(name = "db.accounts.find", skip(db))]
pub async fn find(db: impl PgExecutor<'_>, account_id: Uuid) -> sqlx::Result<Option<AccountRow>> {
    sqlx::query_as!(
        AccountRow,
        r#"SELECT account_id, balance_cents, opening_balance_cents,
                  currency AS "currency: Currency", created_at
           FROM accounts WHERE account_id = $1"#,
        account_id,
    )
    .fetch_optional(db)
    .await
}

/// SQL of [`deduct`], a step of the callback transaction (the benchmark replays it).
pub const DEDUCT_SQL: &str = include_str!("../../sql/callback/deduct_balance.sql");

/// Deducts a charge, guarded so the balance can never go below zero.
/// Returns false (and changes nothing) when the balance is too low.
#[tracing::instrument(name = "db.accounts.deduct", skip(db))]
pub async fn deduct(
    db: impl PgExecutor<'_>,
    account_id: Uuid,
    amount_cents: i64,
) -> sqlx::Result<bool> {
    let result = sqlx::query_file!("sql/callback/deduct_balance.sql", account_id, amount_cents)
        .execute(db)
        .await?;
    Ok(result.rows_affected() == 1)
}
