//! The callback side of the ledger: processed callback ids, money movements,
//! anomalies for people to review, and the log of every delivery.

use sqlx::PgExecutor;
use time::OffsetDateTime;
use uuid::Uuid;

/// A processed callback id (`payment_callbacks`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProcessedCallback {
    /// The platform's notification id.
    pub callback_id: String,
    /// SHA-256 of the raw body, hex.
    pub body_sha256: String,
    /// What we did with it the first time.
    pub outcome: String,
}

/// SQL of [`find_and_log_duplicate`]: one statement, so a duplicate costs one round trip.
pub const SEEN_SQL: &str = "WITH seen AS (
             SELECT callback_id, body_sha256, outcome FROM payment_callbacks WHERE callback_id = $1
         ), logged AS (
             INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
             SELECT $1, $2, $3, 'DUPLICATE', 200 FROM seen WHERE seen.body_sha256 = $4
         )
         SELECT callback_id, body_sha256, outcome FROM seen";

/// Looks up a callback id that was already processed and, when `body_sha256`
/// matches (a true duplicate), logs the delivery as `DUPLICATE` in the same
/// statement. A different hash is a conflict, logged by the caller.
#[tracing::instrument(name = "db.callbacks.find_and_log_duplicate", skip(db))]
pub async fn find_and_log_duplicate(
    db: impl PgExecutor<'_>,
    callback_id: &str,
    order_no: &str,
    event_type: &str,
    body_sha256: &str,
) -> sqlx::Result<Option<ProcessedCallback>> {
    sqlx::query_as(SEEN_SQL)
        .bind(callback_id)
        .bind(order_no)
        .bind(event_type)
        .bind(body_sha256)
        .fetch_optional(db)
        .await
}

/// What a new callback row holds.
#[derive(Debug, Clone, Copy)]
pub struct NewCallback<'a> {
    /// The platform's notification id.
    pub callback_id: &'a str,
    /// SHA-256 of the raw body, hex.
    pub body_sha256: &'a str,
    /// `payment.succeeded` or `payment.failed`.
    pub event_type: &'a str,
    /// The order it is about.
    pub order_no: &'a str,
    /// The platform's payment id.
    pub payment_id: &'a str,
    /// What we decided.
    pub outcome: &'a str,
}

/// SQL of [`insert`].
pub const INSERT_SQL: &str = "INSERT INTO payment_callbacks (callback_id, body_sha256, event_type, order_no, payment_id, outcome)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (callback_id) DO NOTHING";

/// Claims a callback id. Returns false when the id was already processed: a
/// concurrent delivery of the same id waits here for the first one to commit.
#[tracing::instrument(name = "db.callbacks.insert", skip(db))]
pub async fn insert(db: impl PgExecutor<'_>, new: NewCallback<'_>) -> sqlx::Result<bool> {
    let result = sqlx::query(INSERT_SQL)
        .bind(new.callback_id)
        .bind(new.body_sha256)
        .bind(new.event_type)
        .bind(new.order_no)
        .bind(new.payment_id)
        .bind(new.outcome)
        .execute(db)
        .await?;
    Ok(result.rows_affected() == 1)
}

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
    /// ISO 4217 code.
    pub currency: &'a str,
    /// The platform's payment id.
    pub payment_id: &'a str,
}

/// SQL of [`insert_charge`].
pub const INSERT_CHARGE_SQL: &str = "INSERT INTO payment_ledger (callback_id, order_no, account_id, amount_cents, currency, kind, payment_id)
         VALUES ($1, $2, $3, $4, $5, 'CHARGE', $6)
         ON CONFLICT DO NOTHING";

/// Writes a `CHARGE` ledger row, `ON CONFLICT DO NOTHING`: returns false when the
/// callback id or the order already has one (the database floor said no).
#[tracing::instrument(name = "db.ledger.insert_charge", skip(db))]
pub async fn insert_charge(db: impl PgExecutor<'_>, charge: NewCharge<'_>) -> sqlx::Result<bool> {
    let result = sqlx::query(INSERT_CHARGE_SQL)
        .bind(charge.callback_id)
        .bind(charge.order_no)
        .bind(charge.account_id)
        .bind(charge.amount_cents)
        .bind(charge.currency)
        .bind(charge.payment_id)
        .execute(db)
        .await?;
    Ok(result.rows_affected() == 1)
}

/// A row of `payment_ledger`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LedgerRow {
    /// The callback that wrote it.
    pub callback_id: String,
    /// The order charged.
    pub order_no: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: String,
    /// `CHARGE`.
    pub kind: String,
    /// The platform's payment id.
    pub payment_id: String,
    /// When it was written.
    pub created_at: OffsetDateTime,
}

/// An account's ledger, oldest first.
#[tracing::instrument(name = "db.ledger.list_for_account", skip(db))]
pub async fn ledger_for_account(
    db: impl PgExecutor<'_>,
    account_id: Uuid,
) -> sqlx::Result<Vec<LedgerRow>> {
    sqlx::query_as(
        "SELECT callback_id, order_no, amount_cents, currency, kind, payment_id, created_at
         FROM payment_ledger WHERE account_id = $1 ORDER BY entry_id",
    )
    .bind(account_id)
    .fetch_all(db)
    .await
}

/// Something a person must review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnomalyKind {
    /// Callback amount or currency differs from the order.
    AmountMismatch,
    /// A success for an order that had already failed: money may have been taken.
    SuccessAfterFailed,
    /// A second success, under a new callback id, for an order already paid.
    SecondSuccessForPaidOrder,
    /// A failure for an order we already charged.
    FailureAfterPaid,
    /// A callback id reused with a different body.
    CallbackConflict,
    /// The platform took the money but the balance here was too low.
    InsufficientFunds,
}

impl AnomalyKind {
    /// The spelling in `anomalies.kind`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AmountMismatch => "AMOUNT_MISMATCH",
            Self::SuccessAfterFailed => "SUCCESS_AFTER_FAILED",
            Self::SecondSuccessForPaidOrder => "SECOND_SUCCESS_FOR_PAID_ORDER",
            Self::FailureAfterPaid => "FAILURE_AFTER_PAID",
            Self::CallbackConflict => "CALLBACK_CONFLICT",
            Self::InsufficientFunds => "INSUFFICIENT_FUNDS",
        }
    }
}

/// Records an anomaly once per (callback id, kind); retries of the same callback add nothing.
#[tracing::instrument(name = "db.anomalies.record", skip(db, details))]
pub async fn record_anomaly(
    db: impl PgExecutor<'_>,
    callback_id: &str,
    order_no: &str,
    kind: AnomalyKind,
    details: serde_json::Value,
) -> sqlx::Result<()> {
    tracing::warn!(callback_id, order_no, kind = kind.as_str(), %details, "anomaly recorded for review");
    sqlx::query(
        "INSERT INTO anomalies (callback_id, order_no, kind, details) VALUES ($1, $2, $3, $4)
         ON CONFLICT ON CONSTRAINT anomalies_once_per_callback_and_kind DO NOTHING",
    )
    .bind(callback_id)
    .bind(order_no)
    .bind(kind.as_str())
    .bind(sqlx::types::Json(details))
    .execute(db)
    .await?;
    Ok(())
}

/// One received delivery and what became of it.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The platform's notification id.
    pub callback_id: &'a str,
    /// The order named in the body.
    pub order_no: Option<&'a str>,
    /// The event type named in the body.
    pub event_type: Option<&'a str>,
    /// What we did.
    pub outcome: &'a str,
    /// What we answered.
    pub http_status: u16,
}

/// SQL of [`record_delivery`].
pub const RECORD_DELIVERY_SQL: &str =
    "INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
         VALUES ($1, $2, $3, $4, $5)";

/// Appends to the delivery log.
#[tracing::instrument(name = "db.deliveries.record", skip(db))]
pub async fn record_delivery(db: impl PgExecutor<'_>, delivery: Delivery<'_>) -> sqlx::Result<()> {
    sqlx::query(RECORD_DELIVERY_SQL)
        .bind(delivery.callback_id)
        .bind(delivery.order_no)
        .bind(delivery.event_type)
        .bind(delivery.outcome)
        .bind(i16::try_from(delivery.http_status).unwrap_or(i16::MAX))
        .execute(db)
        .await?;
    Ok(())
}

/// A `payment_callbacks` row, as shown to people.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProcessedRow {
    /// `payment.succeeded` or `payment.failed`.
    pub event_type: String,
    /// The order.
    pub order_no: String,
    /// The platform's payment id.
    pub payment_id: String,
    /// What was done.
    pub outcome: String,
    /// When.
    pub processed_at: OffsetDateTime,
}

/// How a callback id was applied, if it was.
#[tracing::instrument(name = "db.callbacks.find_processed", skip(db))]
pub async fn find_processed(
    db: impl PgExecutor<'_>,
    callback_id: &str,
) -> sqlx::Result<Option<ProcessedRow>> {
    sqlx::query_as(
        "SELECT event_type, order_no, payment_id, outcome, processed_at
         FROM payment_callbacks WHERE callback_id = $1",
    )
    .bind(callback_id)
    .fetch_optional(db)
    .await
}

/// A `callback_deliveries` row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    /// What became of it.
    pub outcome: String,
    /// What was answered.
    pub http_status: i16,
    /// When it arrived.
    pub received_at: OffsetDateTime,
}

/// Every delivery of a callback id, oldest first.
#[tracing::instrument(name = "db.deliveries.list", skip(db))]
pub async fn deliveries(
    db: impl PgExecutor<'_>,
    callback_id: &str,
) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as(
        "SELECT outcome, http_status, received_at FROM callback_deliveries
         WHERE callback_id = $1 ORDER BY delivery_id",
    )
    .bind(callback_id)
    .fetch_all(db)
    .await
}

/// An `anomalies` row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AnomalyRow {
    /// The callback that raised it.
    pub callback_id: String,
    /// The order concerned.
    pub order_no: String,
    /// Its kind.
    pub kind: String,
    /// Its facts.
    pub details: sqlx::types::Json<serde_json::Value>,
    /// When.
    pub created_at: OffsetDateTime,
}

/// Anomalies, newest first: of one callback id, or all of them (at most `limit`).
#[tracing::instrument(name = "db.anomalies.list", skip(db))]
pub async fn anomalies(
    db: impl PgExecutor<'_>,
    callback_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<AnomalyRow>> {
    sqlx::query_as(
        "SELECT callback_id, order_no, kind, details, created_at FROM anomalies
         WHERE $1::text IS NULL OR callback_id = $1
         ORDER BY anomaly_id DESC LIMIT $2",
    )
    .bind(callback_id)
    .bind(limit)
    .fetch_all(db)
    .await
}
