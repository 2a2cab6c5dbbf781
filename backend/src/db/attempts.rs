//! `payment_attempts`: one per request token and one per order; holds the answer to replay.

use crate::infra::tokens::TokenFingerprint;
use api_types::{AttemptStatus, Currency, PaymentMethod, PlatformPaymentId};
use sqlx::PgExecutor;
use time::OffsetDateTime;
use uuid::Uuid;

/// Unique constraint: a request token makes at most one attempt.
pub const TOKEN_UNIQUE: &str = "payment_attempts_request_token_key";
/// Unique constraint: an order has at most one attempt.
pub const ORDER_UNIQUE: &str = "payment_attempts_order_no_key";

/// A row of `payment_attempts`.
#[derive(Debug, Clone)]
pub struct AttemptRow {
    /// Our payment id.
    pub payment_id: Uuid,
    /// The token that made it.
    pub request_token: Uuid,
    /// The order it pays.
    pub order_no: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// What pays: the wallet (held at pay) or the platform (nothing held).
    pub method: PaymentMethod,
    /// HTTP status of the winner's answer.
    pub response_status: i16,
    /// Body of the winner's answer.
    pub response_body: serde_json::Value,
    /// When the platform accepted it; NULL until then.
    pub submitted_at: Option<OffsetDateTime>,
}

/// The attempt a token made, if any: how a replay is answered without Redis.
#[tracing::instrument(name = "db.attempts.find_by_token", skip(db, request_token), fields(token_fp = %TokenFingerprint::of(request_token)))]
pub async fn find_by_token(
    db: impl PgExecutor<'_>,
    request_token: Uuid,
) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_as!(
        AttemptRow,
        r#"SELECT payment_id, request_token, order_no, amount_cents, currency AS "currency: Currency",
                  method AS "method: PaymentMethod", response_status, response_body, submitted_at
           FROM payment_attempts WHERE request_token = $1"#,
        request_token,
    )
    .fetch_optional(db)
    .await
}

/// The attempt already paying an order, if any.
#[tracing::instrument(name = "db.attempts.find_by_order", skip(db))]
pub async fn find_by_order(
    db: impl PgExecutor<'_>,
    order_no: &str,
) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_as!(
        AttemptRow,
        r#"SELECT payment_id, request_token, order_no, amount_cents, currency AS "currency: Currency",
                  method AS "method: PaymentMethod", response_status, response_body, submitted_at
           FROM payment_attempts WHERE order_no = $1"#,
        order_no,
    )
    .fetch_optional(db)
    .await
}

/// What a new attempt row holds.
#[derive(Debug, Clone, Copy)]
pub struct NewAttempt<'a> {
    /// Our payment id.
    pub payment_id: Uuid,
    /// The consumed request token.
    pub request_token: Uuid,
    /// The order it pays.
    pub order_no: &'a str,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// What pays: a `wallet` attempt holds the amount, a `platform` one nothing.
    pub method: PaymentMethod,
    /// HTTP status of the answer to replay.
    pub response_status: i16,
    /// Body of the answer to replay.
    pub response_body: &'a serde_json::Value,
}

/// Inserts a new attempt with the answer that will be replayed for its token.
#[tracing::instrument(name = "db.attempts.insert", skip(db, new), fields(order_no = new.order_no))]
pub async fn insert(db: impl PgExecutor<'_>, new: NewAttempt<'_>) -> sqlx::Result<AttemptRow> {
    sqlx::query_as!(
        AttemptRow,
        r#"INSERT INTO payment_attempts
               (payment_id, request_token, order_no, amount_cents, currency, method, response_status, response_body)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           RETURNING payment_id, request_token, order_no, amount_cents, currency AS "currency: Currency",
                     method AS "method: PaymentMethod", response_status, response_body, submitted_at"#,
        new.payment_id,
        new.request_token,
        new.order_no,
        new.amount_cents,
        new.currency.as_str(),
        new.method.as_str(),
        new.response_status,
        new.response_body,
    )
    .fetch_one(db)
    .await
}

/// SQL of [`start_in_one`]: pay's common case in one statement (the benchmark replays it).
pub const START_IN_ONE_SQL: &str = include_str!("../../sql/pay/start_attempt.sql");

/// Pay's common case in one statement (`sql/pay/start_attempt.sql`): when the
/// order is PENDING, unexpired (against `now`), of the token's amount and
/// currency, has no attempt yet and (for a wallet payment) its account has the
/// amount available, it locks order and account, inserts the attempt and (for a
/// wallet payment) holds the amount, all or nothing, and returns the attempt. Otherwise it writes nothing and returns
/// `None`: the caller's general transaction then says exactly why (or joins
/// the attempt a concurrent submit made).
#[tracing::instrument(name = "db.attempts.start_in_one", skip(db, new, now), fields(order_no = new.order_no))]
pub async fn start_in_one(
    db: impl PgExecutor<'_>,
    new: NewAttempt<'_>,
    now: OffsetDateTime,
) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_file_as!(
        AttemptRow,
        "sql/pay/start_attempt.sql",
        new.payment_id,
        new.request_token,
        new.order_no,
        new.amount_cents,
        new.currency.as_str(),
        new.response_body,
        now,
        new.method.as_str(),
    )
    .fetch_optional(db)
    .await
}

/// A hand-over the platform accepted, to be recorded ([`mark_submitted`]).
#[derive(Debug, Clone)]
pub struct Submitted {
    /// Our payment id.
    pub payment_id: Uuid,
    /// The platform's id for the payment, when it gave one at once.
    pub platform_payment_id: Option<PlatformPaymentId>,
    /// The code the shopper scans, when the platform pays by QR code.
    pub qr_code: Option<String>,
}

/// Records that the platform accepted these attempts, in one statement: the
/// hand-over time, `SUBMITTED` unless a result settled an attempt first (a
/// callback can beat this bookkeeping), and the platform's id and QR code where
/// none is recorded. An attempt recorded before is left as it is.
#[tracing::instrument(name = "db.attempts.mark_submitted", skip_all, fields(attempts = handed_over.len()))]
pub async fn mark_submitted(
    db: impl PgExecutor<'_>,
    handed_over: &[Submitted],
) -> sqlx::Result<()> {
    let ids: Vec<Uuid> = handed_over.iter().map(|h| h.payment_id).collect();
    let platform_ids: Vec<Option<&str>> = handed_over
        .iter()
        .map(|h| {
            h.platform_payment_id
                .as_ref()
                .map(PlatformPaymentId::as_str)
        })
        .collect();
    let qr_codes: Vec<Option<&str>> = handed_over.iter().map(|h| h.qr_code.as_deref()).collect();
    sqlx::query_file!(
        "sql/pay/mark_submitted.sql",
        &ids,
        &platform_ids as &[Option<&str>],
        &qr_codes as &[Option<&str>],
    )
    // Planned afresh for each batch: a plan cached while the table was small
    // (a scan of the whole table) would otherwise serve it for good.
    .persistent(false)
    .execute(db)
    .await?;
    Ok(())
}

/// SQL of [`mark_submitted`] (`$1` payment ids, `$2` platform ids, `$3` QR
/// codes); its test `EXPLAIN`s it.
pub const MARK_SUBMITTED_SQL: &str = include_str!("../../sql/pay/mark_submitted.sql");

/// A hand-over whose answer was lost (timeout, 5xx, connection dropped): the
/// platform may or may not have the payment. `UNKNOWN`, never `FAILED`; the
/// dispatcher sends it again with the same idempotency key.
#[tracing::instrument(name = "db.attempts.mark_unknown", skip(db))]
pub async fn mark_unknown(db: impl PgExecutor<'_>, payment_id: Uuid) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE payment_attempts SET status = 'UNKNOWN'
         WHERE payment_id = $1 AND status = 'CREATED'",
        payment_id,
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// SQL of [`settle`], a step of the callback transaction (the benchmark replays it).
pub const SETTLE_SQL: &str = include_str!("../../sql/callback/settle_attempt.sql");

/// Moves the order's open attempt (if it has one) to the final `status` its
/// result gave, in the transaction that applies the result.
#[tracing::instrument(name = "db.attempts.settle", skip(db))]
pub async fn settle(
    db: impl PgExecutor<'_>,
    order_no: &str,
    status: AttemptStatus,
    platform_payment_id: Option<&PlatformPaymentId>,
) -> sqlx::Result<()> {
    sqlx::query_file!(
        "sql/callback/settle_attempt.sql",
        order_no,
        status.as_str(),
        platform_payment_id.map(PlatformPaymentId::as_str)
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Marks the attempts of still-PENDING orders as not handed over and forgets
/// their platform ids, which died with the old in-process simulator (see
/// `Platform::forget_in_process_hand_overs`). Returns how many.
#[tracing::instrument(name = "db.attempts.reset_submitted_of_pending_orders", skip(db))]
pub async fn reset_submitted_of_pending_orders(db: impl PgExecutor<'_>) -> sqlx::Result<u64> {
    let result = sqlx::query!(
        "UPDATE payment_attempts a
         SET submitted_at = NULL,
             platform_payment_id = NULL,
             status = CASE WHEN a.status = 'SUBMITTED' THEN 'UNKNOWN' ELSE a.status END
         FROM orders o
         WHERE o.order_no = a.order_no AND o.status = 'PENDING' AND a.submitted_at IS NOT NULL
           AND a.status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')",
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected())
}

/// Attempts committed but never handed to the platform (e.g. the process died in between),
/// older than `min_age_secs`, for the dispatcher to send again. Expired orders are left
/// to the expiry sweep, which closes their payments at the platform instead.
#[tracing::instrument(name = "db.attempts.list_unsubmitted", skip(db))]
pub async fn list_unsubmitted(
    db: impl PgExecutor<'_>,
    min_age_secs: i64,
    limit: i64,
) -> sqlx::Result<Vec<AttemptRow>> {
    // make_interval takes seconds as double precision.
    let min_age_secs = min_age_secs as f64;
    sqlx::query_as!(
        AttemptRow,
        r#"SELECT p.payment_id, p.request_token, p.order_no, p.amount_cents,
                  p.currency AS "currency: Currency", p.method AS "method: PaymentMethod",
                  p.response_status, p.response_body, p.submitted_at
           FROM payment_attempts p JOIN orders o ON o.order_no = p.order_no
           WHERE p.submitted_at IS NULL AND p.status IN ('CREATED', 'UNKNOWN')
             AND p.created_at < now() - make_interval(secs => $1)
             AND o.expires_at > now()
           ORDER BY p.created_at LIMIT $2"#,
        min_age_secs,
        limit,
    )
    .fetch_all(db)
    .await
}

/// An open attempt a worker holds: its order's row is locked `FOR UPDATE`
/// until the worker's transaction ends, so no other instance's worker, no
/// callback and no pay can act on the order meanwhile, and a crash releases it.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The order.
    pub order_no: String,
    /// Our payment id, the platform's merchant reference.
    pub payment_id: Uuid,
    /// The platform's id, when recorded.
    pub platform_payment_id: Option<PlatformPaymentId>,
    /// Where the attempt stands (`CREATED`, `SUBMITTED` or `UNKNOWN`).
    pub status: AttemptStatus,
    /// The order's account (its hold is released when the order closes).
    pub account_id: Uuid,
    /// What the order holds on the account: its amount for a wallet payment,
    /// 0 for a platform one (which holds nothing).
    pub hold_cents: i64,
}

/// Claims one open attempt of a PENDING order that is due for a query: its
/// `next_query_at`, or `query_after_secs` after its hand-over (its creation if
/// it was never accepted), has passed; the one due longest ago first. Orders
/// another transaction holds are skipped, not waited for.
///
/// Each kind of due time has its own index in due order (migration
/// `20261205000001`), and the claim reads the first [`DUE_CANDIDATES`] entries
/// of each, so it costs the same with ten open attempts or a million. An order
/// is locked only while a platform call settles it (another instance's
/// worker, an expiry sweep) or a callback charges it: when every candidate is
/// held, nothing is claimed and the next sweep looks again.
#[tracing::instrument(name = "db.attempts.claim_due_query", skip(tx))]
pub async fn claim_due_query(
    tx: &mut sqlx::PgConnection,
    query_after_secs: f64,
) -> sqlx::Result<Option<Claimed>> {
    sqlx::query_file_as!(
        Claimed,
        "sql/query/claim_due_attempt.sql",
        query_after_secs,
        DUE_CANDIDATES,
    )
    .fetch_optional(&mut *tx)
    .await
}

/// How many of the earliest due attempts of each kind one claim considers
/// ([`claim_due_query`]).
pub const DUE_CANDIDATES: i64 = 32;

/// SQL of [`claim_due_query`] (`$1` the seconds after a hand-over before the
/// first query, `$2` [`DUE_CANDIDATES`]); its test `EXPLAIN`s it.
pub const CLAIM_DUE_QUERY_SQL: &str = include_str!("../../sql/query/claim_due_attempt.sql");

/// Claims one expired PENDING order that has an open attempt (the ones
/// without are closed by `orders::close_expired`), other than `skip`, as
/// [`claim_due_query`] does.
#[tracing::instrument(name = "db.attempts.claim_expired", skip(tx, skip))]
pub async fn claim_expired(
    tx: &mut sqlx::PgConnection,
    skip: &[String],
) -> sqlx::Result<Option<Claimed>> {
    sqlx::query_as!(
        Claimed,
        r#"SELECT o.order_no, p.payment_id,
                  p.platform_payment_id AS "platform_payment_id: PlatformPaymentId",
                  p.status AS "status: AttemptStatus", o.account_id,
                  CASE WHEN p.method = 'wallet' THEN o.amount_cents ELSE 0 END AS "hold_cents!"
           FROM orders o JOIN payment_attempts p ON p.order_no = o.order_no
           WHERE o.status = 'PENDING' AND o.expires_at <= now()
             AND p.status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')
             AND NOT (o.order_no = ANY($1))
           ORDER BY o.expires_at
           LIMIT 1
           FOR UPDATE OF o SKIP LOCKED"#,
        skip,
    )
    .fetch_optional(&mut *tx)
    .await
}

/// Counts a query that brought no result and schedules the next one
/// `next_in_secs` from now. A platform id the answer revealed is recorded, and
/// an attempt the platform turned out to have is `SUBMITTED` (the caller
/// passes no id where that must not happen: an answer without one, or a
/// platform whose hand-over answer brings the code the shopper scans, see
/// `active_query::query_one`). Returns the queries made so far.
#[tracing::instrument(name = "db.attempts.record_query", skip(db))]
pub async fn record_query(
    db: impl PgExecutor<'_>,
    payment_id: Uuid,
    next_in_secs: f64,
    platform_payment_id: Option<&PlatformPaymentId>,
) -> sqlx::Result<i32> {
    sqlx::query_scalar!(
        "UPDATE payment_attempts
         SET queries = queries + 1,
             next_query_at = now() + make_interval(secs => $2),
             platform_payment_id = coalesce(platform_payment_id, $3),
             status = CASE WHEN $3::text IS NOT NULL AND status IN ('CREATED', 'UNKNOWN')
                           THEN 'SUBMITTED' ELSE status END,
             submitted_at = CASE WHEN $3::text IS NOT NULL THEN coalesce(submitted_at, now())
                                 ELSE submitted_at END
         WHERE payment_id = $1
         RETURNING queries",
        payment_id,
        next_in_secs,
        platform_payment_id.map(PlatformPaymentId::as_str),
    )
    .fetch_one(db)
    .await
}

/// The payment link a platform gave for the order's attempt, while the order
/// can still be paid: what the page shows as a QR code.
#[tracing::instrument(name = "db.attempts.payable_qr_code", skip(db))]
pub async fn payable_qr_code(
    db: impl PgExecutor<'_>,
    order_no: &str,
    shopper_id: Uuid,
) -> sqlx::Result<Option<String>> {
    let row = sqlx::query_scalar!(
        "SELECT p.qr_code
         FROM payment_attempts p JOIN orders o ON o.order_no = p.order_no
         WHERE p.order_no = $1 AND o.shopper_id = $2 AND o.status = 'PENDING'",
        order_no,
        shopper_id,
    )
    .fetch_optional(db)
    .await?;
    Ok(row.flatten())
}
