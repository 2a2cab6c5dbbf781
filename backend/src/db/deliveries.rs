//! `callback_deliveries`: the log of every signed delivery and what we answered,
//! so a person can answer "what happened to callback X?". Append-only and without
//! foreign keys: a delivery for an unknown order is logged too.

use api_types::{CallbackOutcome, CallbackType};
use sqlx::PgExecutor;
use time::OffsetDateTime;

/// One received delivery and what became of it.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The platform's notification id.
    pub callback_id: &'a str,
    /// The order named in the body.
    pub order_no: Option<&'a str>,
    /// The event type named in the body.
    pub event_type: Option<CallbackType>,
    /// What we did.
    pub outcome: CallbackOutcome,
    /// What we answered.
    pub http_status: u16,
}

/// SQL of [`record`], the last step of the callback transaction (the benchmark replays it).
pub const RECORD_SQL: &str = include_str!("../../sql/callback/record_delivery.sql");

/// Appends to the delivery log.
#[tracing::instrument(name = "db.deliveries.record", skip(db))]
pub async fn record(db: impl PgExecutor<'_>, delivery: Delivery<'_>) -> sqlx::Result<()> {
    sqlx::query_file!(
        "sql/callback/record_delivery.sql",
        delivery.callback_id,
        delivery.order_no,
        delivery.event_type.map(CallbackType::as_str),
        delivery.outcome.as_str(),
        i16::try_from(delivery.http_status).unwrap_or(i16::MAX),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// A `callback_deliveries` row.
#[derive(Debug, Clone)]
pub struct DeliveryRow {
    /// What became of it.
    pub outcome: CallbackOutcome,
    /// What was answered.
    pub http_status: i16,
    /// When it arrived.
    pub received_at: OffsetDateTime,
}

/// Every delivery of a callback id, oldest first.
#[tracing::instrument(name = "db.deliveries.list", skip(db))]
pub async fn list(db: impl PgExecutor<'_>, callback_id: &str) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as!(
        DeliveryRow,
        r#"SELECT outcome AS "outcome: CallbackOutcome", http_status, received_at
           FROM callback_deliveries
           WHERE callback_id = $1 ORDER BY delivery_id"#,
        callback_id,
    )
    .fetch_all(db)
    .await
}
