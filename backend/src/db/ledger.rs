//! `payment_ledger`: the money movements. Kept apart from the callback record
//! because its own constraints (one row per callback id, one `CHARGE` per order)
//! are the floor that makes a charge happen once.

use api_types::api::LedgerEntry;
use api_types::{Currency, LedgerKind};
use sqlx::PgExecutor;
use uuid::Uuid;

/// A money movement.
#[derive(Debug, Clone, Copy)]
pub struct NewCharge<'a> {
    /// The callback that caused it.
    pub callback_id: &'a str,
    /// The order charged.
    pub order_no: &'a str,
    /// The account debited.
    pub account_id: Uuid,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// The platform's payment id.
    pub payment_id: &'a str,
}

/// SQL of [`insert_charge`], a step of the callback transaction (the benchmark replays it).
pub const INSERT_CHARGE_SQL: &str = include_str!("../../sql/callback/insert_charge.sql");

/// Writes a `CHARGE` ledger row, `ON CONFLICT DO NOTHING`: returns false when the
/// callback id or the order already has one (the database floor said no).
#[tracing::instrument(name = "db.ledger.insert_charge", skip(db))]
pub async fn insert_charge(db: impl PgExecutor<'_>, charge: NewCharge<'_>) -> sqlx::Result<bool> {
    let result = sqlx::query_file!(
        "sql/callback/insert_charge.sql",
        charge.callback_id,
        charge.order_no,
        charge.account_id,
        charge.amount_cents,
        charge.currency.as_str(),
        charge.payment_id,
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// The platform payment an order's CHARGE names, if it was charged.
#[tracing::instrument(name = "db.ledger.charge_of", skip(db))]
pub async fn charge_of(db: impl PgExecutor<'_>, order_no: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT payment_id FROM payment_ledger WHERE order_no = $1 AND kind = 'CHARGE'",
        order_no,
    )
    .fetch_optional(db)
    .await
}

/// An account's ledger, oldest first, read straight into the wire type (its
/// fields are the columns, one to one).
#[tracing::instrument(name = "db.ledger.list_for_account", skip(db))]
pub async fn list_for_account(
    db: impl PgExecutor<'_>,
    account_id: Uuid,
) -> sqlx::Result<Vec<LedgerEntry>> {
    sqlx::query_as!(
        LedgerEntry,
        r#"SELECT callback_id, order_no, amount_cents, currency AS "currency: Currency",
                  kind AS "kind: LedgerKind", payment_id, created_at
           FROM payment_ledger WHERE account_id = $1 ORDER BY entry_id"#,
        account_id,
    )
    .fetch_all(db)
    .await
}
