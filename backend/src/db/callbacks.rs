//! `payment_callbacks`: every callback id we applied, once. The idempotency
//! record of callbacks: a later delivery of the same id finds its row here and
//! is answered without touching the order again.

use api_types::{CallbackOutcome, CallbackType};
use sqlx::PgExecutor;

/// A processed callback id (`payment_callbacks`).
#[derive(Debug, Clone)]
pub struct ProcessedCallback {
    /// The platform's notification id.
    pub callback_id: String,
    /// SHA-256 of the raw body, hex.
    pub body_sha256: String,
    /// What we did with it the first time.
    pub outcome: CallbackOutcome,
}

/// SQL of [`find_and_log_duplicate`]: one statement, so a duplicate costs one
/// round trip. The first statement of every callback (the benchmark replays it).
pub const SEEN_SQL: &str = include_str!("../../sql/callback/seen.sql");

/// Looks up a callback id that was already processed and, when `body_sha256`
/// matches (a true duplicate), logs the delivery as `DUPLICATE` in the same
/// statement. A different hash is a conflict, logged by the caller.
#[tracing::instrument(name = "db.callbacks.find_and_log_duplicate", skip(db))]
pub async fn find_and_log_duplicate(
    db: impl PgExecutor<'_>,
    callback_id: &str,
    order_no: &str,
    event_type: CallbackType,
    body_sha256: &str,
) -> sqlx::Result<Option<ProcessedCallback>> {
    sqlx::query_file_as!(
        ProcessedCallback,
        "sql/callback/seen.sql",
        callback_id,
        order_no,
        event_type.as_str(),
        body_sha256,
    )
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
    /// What the callback reports.
    pub event_type: CallbackType,
    /// The order it is about.
    pub order_no: &'a str,
    /// The platform's payment id.
    pub payment_id: &'a str,
    /// What we decided.
    pub outcome: CallbackOutcome,
}

/// SQL of [`insert`], a step of the callback transaction (the benchmark replays it).
pub const INSERT_SQL: &str = include_str!("../../sql/callback/insert_callback.sql");

/// Claims a callback id. Returns false when the id was already processed: a
/// concurrent delivery of the same id waits here for the first one to commit.
#[tracing::instrument(name = "db.callbacks.insert", skip(db))]
pub async fn insert(db: impl PgExecutor<'_>, new: NewCallback<'_>) -> sqlx::Result<bool> {
    let result = sqlx::query_file!(
        "sql/callback/insert_callback.sql",
        new.callback_id,
        new.body_sha256,
        new.event_type.as_str(),
        new.order_no,
        new.payment_id,
        new.outcome.as_str(),
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// How a callback id was applied, if it was, read straight into the wire type.
#[tracing::instrument(name = "db.callbacks.find_processed", skip(db))]
pub async fn find_processed(
    db: impl PgExecutor<'_>,
    callback_id: &str,
) -> sqlx::Result<Option<api_types::api::ProcessedCallback>> {
    sqlx::query_as!(
        api_types::api::ProcessedCallback,
        r#"SELECT event_type AS "event_type: CallbackType", order_no, payment_id,
                  outcome AS "outcome: CallbackOutcome", processed_at
           FROM payment_callbacks WHERE callback_id = $1"#,
        callback_id,
    )
    .fetch_optional(db)
    .await
}
