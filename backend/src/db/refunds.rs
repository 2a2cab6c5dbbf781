//! `refunds`: one row per refund number, and the order and ledger changes a
//! refund makes. The amounts are guarded twice: the code checks them under the
//! order's row lock, and the CHECKs `orders_refunds_within_charge` keep
//! `refunded <= reserved <= charge` whatever the code does.

use crate::db::attempts::DUE_CANDIDATES;
use api_types::{Currency, PlatformPaymentId, RefundRequester, RefundStatus};
use sqlx::{PgConnection, PgExecutor};
use time::OffsetDateTime;
use uuid::Uuid;

/// A row of `refunds`.
#[derive(Debug, Clone)]
pub struct RefundRow {
    /// Our refund number, the platform's idempotency key for it.
    pub refund_no: String,
    /// The order refunded.
    pub order_no: String,
    /// Amount given back.
    pub amount_cents: i64,
    /// Its currency (the order's).
    pub currency: Currency,
    /// Why.
    pub reason: String,
    /// Where it stands.
    pub status: RefundStatus,
    /// The platform payment refunded.
    pub platform_payment_id: String,
    /// The platform's id for the refund, once known.
    pub platform_refund_id: Option<String>,
    /// Who asked for it.
    pub requested_by: RefundRequester,
    /// Why the platform refused it at hand-over.
    pub failure_reason: Option<String>,
    /// When it was asked for.
    pub created_at: OffsetDateTime,
    /// When the platform accepted it.
    pub submitted_at: Option<OffsetDateTime>,
    /// When its result was booked.
    pub settled_at: Option<OffsetDateTime>,
}

impl RefundRow {
    /// The wire form.
    pub fn to_dto(&self) -> api_types::api::Refund {
        api_types::api::Refund {
            refund_no: self.refund_no.clone(),
            order_no: self.order_no.clone(),
            amount_cents: self.amount_cents,
            currency: self.currency,
            status: self.status,
            reason: self.reason.clone(),
            requested_by: self.requested_by,
            failure_reason: self.failure_reason.clone(),
            created_at: self.created_at,
            settled_at: self.settled_at,
        }
    }
}

/// A new refund.
#[derive(Debug, Clone, Copy)]
pub struct NewRefund<'a> {
    /// Our refund number.
    pub refund_no: &'a str,
    /// The order.
    pub order_no: &'a str,
    /// Amount.
    pub amount_cents: i64,
    /// Currency.
    pub currency: Currency,
    /// Why.
    pub reason: &'a str,
    /// The platform payment refunded.
    pub platform_payment_id: &'a str,
    /// The merchant or an operator ([`insert`]), or the checkout ([`insert_automatic`]).
    pub requested_by: RefundRequester,
    /// For an automatic refund: the callback (or query answer) whose success
    /// could not be booked; `None` otherwise.
    pub cause_callback_id: Option<&'a str>,
}

/// A new refund number: `rfd_` and 32 hex digits.
pub fn new_refund_no() -> String {
    format!("rfd_{}", Uuid::new_v4().simple())
}

/// Inserts a PENDING refund.
#[tracing::instrument(name = "db.refunds.insert", skip(db))]
pub async fn insert(db: impl PgExecutor<'_>, new: NewRefund<'_>) -> sqlx::Result<RefundRow> {
    sqlx::query_as!(
        RefundRow,
        r#"INSERT INTO refunds (refund_no, order_no, amount_cents, currency, reason, platform_payment_id, requested_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           RETURNING refund_no, order_no, amount_cents, currency AS "currency: Currency", reason,
                     status AS "status: RefundStatus", platform_payment_id, platform_refund_id,
                     requested_by AS "requested_by: RefundRequester", failure_reason,
                     created_at, submitted_at, settled_at"#,
        new.refund_no,
        new.order_no,
        new.amount_cents,
        new.currency.as_str(),
        new.reason,
        new.platform_payment_id,
        new.requested_by.as_str(),
    )
    .fetch_one(db)
    .await
}

/// Inserts the automatic refund of a platform payment, unless it has one
/// already (the partial unique index on the platform payment id) or a CHARGE
/// names that payment (money we booked is given back only by a merchant or an
/// operator). `None`: nothing inserted.
#[tracing::instrument(name = "db.refunds.insert_automatic", skip(db))]
pub async fn insert_automatic(
    db: impl PgExecutor<'_>,
    new: NewRefund<'_>,
) -> sqlx::Result<Option<RefundRow>> {
    sqlx::query_as!(
        RefundRow,
        r#"INSERT INTO refunds (refund_no, order_no, amount_cents, currency, reason, platform_payment_id,
                                requested_by, cause_callback_id)
           SELECT $1, $2, $3, $4, $5, $6, 'automatic', $7
           WHERE NOT EXISTS (SELECT 1 FROM payment_ledger
                             WHERE order_no = $2 AND kind = 'CHARGE' AND payment_id = $6)
           ON CONFLICT (platform_payment_id) WHERE requested_by = 'automatic' DO NOTHING
           RETURNING refund_no, order_no, amount_cents, currency AS "currency: Currency", reason,
                     status AS "status: RefundStatus", platform_payment_id, platform_refund_id,
                     requested_by AS "requested_by: RefundRequester", failure_reason,
                     created_at, submitted_at, settled_at"#,
        new.refund_no,
        new.order_no,
        new.amount_cents,
        new.currency.as_str(),
        new.reason,
        new.platform_payment_id,
        new.cause_callback_id,
    )
    .fetch_optional(db)
    .await
}

/// An order's refunds, oldest first.
#[tracing::instrument(name = "db.refunds.list_for_order", skip(db))]
pub async fn list_for_order(
    db: impl PgExecutor<'_>,
    order_no: &str,
) -> sqlx::Result<Vec<RefundRow>> {
    list_for_orders(db, &[order_no.to_owned()]).await
}

/// The refunds of these orders, oldest first.
#[tracing::instrument(name = "db.refunds.list_for_orders", skip(db, order_nos))]
pub async fn list_for_orders(
    db: impl PgExecutor<'_>,
    order_nos: &[String],
) -> sqlx::Result<Vec<RefundRow>> {
    sqlx::query_as!(
        RefundRow,
        r#"SELECT refund_no, order_no, amount_cents, currency AS "currency: Currency", reason,
                  status AS "status: RefundStatus", platform_payment_id, platform_refund_id,
                  requested_by AS "requested_by: RefundRequester", failure_reason,
                  created_at, submitted_at, settled_at
           FROM refunds WHERE order_no = ANY($1) ORDER BY created_at, refund_no"#,
        order_nos,
    )
    .fetch_all(db)
    .await
}

/// Locks a refund of `order_no` for booking its result.
#[tracing::instrument(name = "db.refunds.lock", skip(db))]
pub async fn lock(
    db: impl PgExecutor<'_>,
    refund_no: &str,
    order_no: &str,
) -> sqlx::Result<Option<RefundRow>> {
    sqlx::query_as!(
        RefundRow,
        r#"SELECT refund_no, order_no, amount_cents, currency AS "currency: Currency", reason,
                  status AS "status: RefundStatus", platform_payment_id, platform_refund_id,
                  requested_by AS "requested_by: RefundRequester", failure_reason,
                  created_at, submitted_at, settled_at
           FROM refunds WHERE refund_no = $1 AND order_no = $2
           FOR UPDATE"#,
        refund_no,
        order_no,
    )
    .fetch_optional(db)
    .await
}

/// Records that the platform accepted the refund, with its id for it.
#[tracing::instrument(name = "db.refunds.mark_submitted", skip(db))]
pub async fn mark_submitted(
    db: impl PgExecutor<'_>,
    refund_no: &str,
    platform_refund_id: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE refunds SET submitted_at = coalesce(submitted_at, now()),
                            platform_refund_id = coalesce(platform_refund_id, $2)
         WHERE refund_no = $1",
        refund_no,
        platform_refund_id,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// PENDING refunds never accepted by the platform, for the dispatcher to hand
/// over: those older than `min_age_secs` (the request that made them hands
/// them over itself first), and automatic ones at once (nobody else does).
#[tracing::instrument(name = "db.refunds.list_unsubmitted", skip(db))]
pub async fn list_unsubmitted(
    db: impl PgExecutor<'_>,
    min_age_secs: f64,
    limit: i64,
) -> sqlx::Result<Vec<RefundRow>> {
    sqlx::query_as!(
        RefundRow,
        r#"SELECT refund_no, order_no, amount_cents, currency AS "currency: Currency", reason,
                  status AS "status: RefundStatus", platform_payment_id, platform_refund_id,
                  requested_by AS "requested_by: RefundRequester", failure_reason,
                  created_at, submitted_at, settled_at
           FROM refunds
           WHERE submitted_at IS NULL AND status = 'PENDING'
             AND (created_at < now() - make_interval(secs => $1) OR requested_by = 'automatic')
           ORDER BY created_at LIMIT $2"#,
        min_age_secs,
        limit,
    )
    .fetch_all(db)
    .await
}

/// Reserves `amount_cents` of a PAID order's charge for a new refund. Returns
/// false (and changes nothing) when the order is not PAID or the reserved
/// total would exceed the charge (compared as what is left, so no amount, up
/// to `i64::MAX`, can overflow the sum). Run under the order's row lock.
#[tracing::instrument(name = "db.refunds.reserve", skip(db))]
pub async fn reserve(
    db: impl PgExecutor<'_>,
    order_no: &str,
    amount_cents: i64,
) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE orders SET refund_reserved_cents = refund_reserved_cents + $2, updated_at = now()
         WHERE order_no = $1 AND status = 'PAID' AND $2 <= amount_cents - refund_reserved_cents",
        order_no,
        amount_cents,
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Books a succeeded refund in the caller's transaction (which holds the
/// order's and account's row locks): the REFUND ledger row (at most one per
/// refund number, and per callback id), the refund SUCCEEDED, the order's
/// refunded total (REFUNDED once it equals the charge), and, when the wallet
/// paid (`to_wallet`), the account credited: a platform payment's refund goes
/// back to the shopper's own account at the platform. An automatic refund gives back money that never entered our books: it is
/// only marked SUCCEEDED. Returns false when nothing was written (the ledger
/// already had its row, or the refund was no longer PENDING).
#[tracing::instrument(name = "db.refunds.book_success", skip(tx))]
pub async fn book_success(
    tx: &mut PgConnection,
    refund: &RefundRow,
    account_id: Uuid,
    to_wallet: bool,
    callback_id: &str,
    platform_refund_id: Option<&str>,
) -> sqlx::Result<bool> {
    if refund.requested_by == RefundRequester::Automatic {
        let settled = sqlx::query!(
            "UPDATE refunds SET status = 'SUCCEEDED', settled_at = now(),
                                platform_refund_id = coalesce(platform_refund_id, $2)
             WHERE refund_no = $1 AND status = 'PENDING'",
            refund.refund_no,
            platform_refund_id,
        )
        .execute(&mut *tx)
        .await?;
        if settled.rows_affected() != 1 {
            return Ok(false);
        }
        // Out of suspense: the money we held that was not ours went back.
        crate::db::books::suspense(
            tx,
            crate::db::books::Suspense::GivenBack,
            &refund.refund_no,
            &refund.order_no,
            refund.amount_cents,
            refund.currency,
        )
        .await?;
        return Ok(true);
    }
    let inserted = sqlx::query!(
        "INSERT INTO payment_ledger (callback_id, order_no, account_id, amount_cents, currency, kind, payment_id, refund_no)
         VALUES ($1, $2, $3, $4, $5, 'REFUND', $6, $7)
         ON CONFLICT DO NOTHING",
        callback_id,
        refund.order_no,
        account_id,
        refund.amount_cents,
        refund.currency.as_str(),
        refund.platform_payment_id,
        refund.refund_no,
    )
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() != 1 {
        return Ok(false);
    }
    sqlx::query!(
        "UPDATE refunds SET status = 'SUCCEEDED', settled_at = now(),
                            platform_refund_id = coalesce(platform_refund_id, $2)
         WHERE refund_no = $1 AND status = 'PENDING'",
        refund.refund_no,
        platform_refund_id,
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "UPDATE orders
         SET refunded_cents = refunded_cents + $2,
             status = CASE WHEN refunded_cents + $2 = amount_cents THEN 'REFUNDED' ELSE status END,
             updated_at = now()
         WHERE order_no = $1",
        refund.order_no,
        refund.amount_cents,
    )
    .execute(&mut *tx)
    .await?;
    if to_wallet {
        sqlx::query!(
            "UPDATE accounts SET balance_cents = balance_cents + $2 WHERE account_id = $1",
            account_id,
            refund.amount_cents,
        )
        .execute(&mut *tx)
        .await?;
    }
    // From the merchant back to the wallet that paid, or to the platform's clearing account.
    crate::db::books::refund(
        tx,
        &refund.refund_no,
        &refund.order_no,
        refund.amount_cents,
        refund.currency,
        to_wallet.then_some(account_id),
    )
    .await?;
    Ok(true)
}

/// Books a failed refund: FAILED (with the platform's reason when it refused
/// it outright), and its amount free on the order again (an automatic refund
/// reserved nothing).
#[tracing::instrument(name = "db.refunds.book_failure", skip(tx))]
pub async fn book_failure(
    tx: &mut PgConnection,
    refund: &RefundRow,
    platform_refund_id: Option<&str>,
    failure_reason: Option<&str>,
) -> sqlx::Result<()> {
    let settled = sqlx::query!(
        "UPDATE refunds SET status = 'FAILED', settled_at = now(), failure_reason = $3,
                            platform_refund_id = coalesce(platform_refund_id, $2)
         WHERE refund_no = $1 AND status = 'PENDING'",
        refund.refund_no,
        platform_refund_id,
        failure_reason,
    )
    .execute(&mut *tx)
    .await?;
    if settled.rows_affected() != 1 || refund.requested_by == RefundRequester::Automatic {
        return Ok(());
    }
    sqlx::query!(
        "UPDATE orders SET refund_reserved_cents = refund_reserved_cents - $2, updated_at = now()
         WHERE order_no = $1",
        refund.order_no,
        refund.amount_cents,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A PENDING refund a query worker holds: its order's row is locked `FOR
/// UPDATE` until the worker's transaction ends (the lock every refund result
/// takes first), so nothing else books it meanwhile and a crash releases it.
#[derive(Debug, Clone)]
pub struct ClaimedRefund {
    /// Our refund number.
    pub refund_no: String,
    /// The order refunded.
    pub order_no: String,
    /// The platform payment refunded.
    pub platform_payment_id: PlatformPaymentId,
}

/// Claims one PENDING refund due for a query: its `next_query_at`, or
/// `query_after_secs` after its hand-over (its creation if never accepted),
/// has passed; the one due longest ago first. Orders another transaction holds
/// are skipped, not waited for.
///
/// As for payments ([`crate::db::attempts::claim_due_query`]), each kind of due
/// time has its own index in due order (migration `20261206000001`) and the
/// claim reads the first [`DUE_CANDIDATES`] entries of each, so it costs the
/// same with ten refunds in flight or a million.
#[tracing::instrument(name = "db.refunds.claim_due_query", skip(tx))]
pub async fn claim_due_query(
    tx: &mut PgConnection,
    query_after_secs: f64,
) -> sqlx::Result<Option<ClaimedRefund>> {
    sqlx::query_file_as!(
        ClaimedRefund,
        "sql/query/claim_due_refund.sql",
        query_after_secs,
        DUE_CANDIDATES,
    )
    .fetch_optional(&mut *tx)
    .await
}

/// SQL of [`claim_due_query`] (`$1` the seconds after a hand-over before the
/// first query, `$2` [`DUE_CANDIDATES`]); its test `EXPLAIN`s it.
pub const CLAIM_DUE_REFUND_SQL: &str = include_str!("../../sql/query/claim_due_refund.sql");

/// Counts a refund query that brought no result and schedules the next one;
/// returns the queries made so far.
#[tracing::instrument(name = "db.refunds.record_query", skip(db))]
pub async fn record_query(
    db: impl PgExecutor<'_>,
    refund_no: &str,
    next_in_secs: f64,
) -> sqlx::Result<i32> {
    sqlx::query_scalar!(
        "UPDATE refunds SET queries = queries + 1, next_query_at = now() + make_interval(secs => $2)
         WHERE refund_no = $1
         RETURNING queries",
        refund_no,
        next_in_secs,
    )
    .fetch_one(db)
    .await
}

/// A refund's status now (in the caller's transaction).
#[tracing::instrument(name = "db.refunds.status", skip(db))]
pub async fn status(
    db: impl PgExecutor<'_>,
    refund_no: &str,
) -> sqlx::Result<Option<RefundStatus>> {
    sqlx::query_scalar!(
        r#"SELECT status AS "status: RefundStatus" FROM refunds WHERE refund_no = $1"#,
        refund_no,
    )
    .fetch_optional(db)
    .await
}

/// A PENDING refund is due for a query now (a failure was notified: the
/// platform's answer, not the notification, frees its amount).
#[tracing::instrument(name = "db.refunds.query_now", skip(db))]
pub async fn query_now(db: impl PgExecutor<'_>, refund_no: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE refunds SET next_query_at = now() WHERE refund_no = $1 AND status = 'PENDING'",
        refund_no,
    )
    .execute(db)
    .await?;
    Ok(())
}
