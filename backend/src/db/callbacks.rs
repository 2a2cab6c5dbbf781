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

/// SQL of [`first_statement`]: the first (and, for a new success on a PENDING
/// order with its hold, or a duplicate, the only) statement of every callback.
pub const CHARGE_IN_ONE_SQL: &str = include_str!("../../sql/callback/charge_in_one.sql");

/// What a callback says, as [`first_statement`] binds it.
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'a> {
    /// The platform's notification id.
    pub callback_id: &'a str,
    /// The order it is about.
    pub order_no: &'a str,
    /// What it reports.
    pub event_type: CallbackType,
    /// SHA-256 of the raw body, hex.
    pub body_sha256: &'a str,
    /// The platform's payment id.
    pub payment_id: &'a str,
    /// Our payment id, when the platform echoes it back (compared as text
    /// with the attempt's, in its canonical form).
    pub merchant_reference: Option<&'a str>,
    /// The amount it reports, minor units.
    pub amount_cents: i64,
    /// Its currency.
    pub currency: &'a str,
}

/// What [`first_statement`] found and did.
#[derive(Debug, Clone)]
pub enum FirstLook {
    /// The id was processed before: its row (a same-body delivery is already logged as `DUPLICATE`).
    Seen(ProcessedCallback),
    /// The common case, applied and committed: ledger row, order PAID, balance
    /// charged and hold captured, attempt SUCCEEDED, callback and delivery recorded.
    Charged,
    /// Neither: nothing was written; the general transaction decides it.
    Undecided,
}

/// One statement (data-modifying CTEs, `sql/callback/charge_in_one.sql`) that
/// answers a seen id and applies the common case in one round trip. It
/// charges only when [`checkout_rules::charge::decide`] says `Charge` (a success naming
/// the attempt of a PENDING order whose account holds the amount for it, amount
/// and currency equal), and even then leaves some cases to the general
/// transaction (a hold that is missing, a reference not in canonical form);
/// otherwise it writes nothing. `tests/api/one_statement.rs` feeds it and the
/// general transaction the same cases.
#[tracing::instrument(name = "db.callbacks.first_statement", skip_all)]
pub async fn first_statement(
    db: impl PgExecutor<'_>,
    incoming: &Incoming<'_>,
) -> sqlx::Result<FirstLook> {
    let row = sqlx::query_file!(
        "sql/callback/charge_in_one.sql",
        incoming.callback_id,
        incoming.order_no,
        incoming.event_type.as_str(),
        incoming.body_sha256,
        incoming.payment_id,
        incoming.merchant_reference,
        incoming.amount_cents,
        incoming.currency,
    )
    .fetch_one(db)
    .await?;
    Ok(match (row.seen_body_sha256, row.seen_outcome) {
        (Some(body_sha256), Some(outcome)) => FirstLook::Seen(ProcessedCallback {
            callback_id: incoming.callback_id.to_owned(),
            body_sha256,
            outcome,
        }),
        _ if row.charged => FirstLook::Charged,
        _ => FirstLook::Undecided,
    })
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
