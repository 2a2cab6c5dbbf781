//! `reconciliation_items` and `reconciliation_runs`: how a day's bill compared
//! with the ledger ([`crate::reconcile`]), and the facts it is compared with,
//! read from `payment_ledger`, `orders` and `refunds`.

use api_types::api::{ReconCount, ReconItem};
use api_types::{Currency, OrderStatus, ReconClass, RefundRequester, RefundStatus};
use checkout_rules::reconcile::classify::{Item, LedgerRow, RefundFact};
use sqlx::PgExecutor;
use time::{Date, OffsetDateTime};

/// Waits for the date's transaction-scoped advisory lock: two reconciliations
/// of one date (two instances' workers, a worker and the command) run one
/// after the other, and the second finds the first's rows.
#[tracing::instrument(name = "db.reconciliation.lock_date", skip(db))]
pub async fn lock_date(db: impl PgExecutor<'_>, date: Date) -> sqlx::Result<()> {
    sqlx::query_scalar!(
        r#"SELECT true AS "locked!" FROM pg_advisory_xact_lock(hashtextextended('reconcile:' || $1::date::text, 0))"#,
        date,
    )
    .fetch_one(db)
    .await?;
    Ok(())
}

/// CHARGE rows naming these platform payments, REFUND rows of these refund
/// numbers, and every CHARGE and REFUND row booked in `[from, to)`.
#[tracing::instrument(
    name = "db.reconciliation.ledger_rows",
    skip(db, payment_ids, refund_nos)
)]
pub async fn ledger_rows(
    db: impl PgExecutor<'_>,
    payment_ids: &[String],
    refund_nos: &[String],
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> sqlx::Result<Vec<LedgerRow>> {
    let rows = sqlx::query!(
        r#"SELECT order_no, refund_no, payment_id, amount_cents, currency AS "currency: Currency", created_at
           FROM payment_ledger
           WHERE (kind = 'CHARGE' AND payment_id = ANY($1::text[]))
              OR (kind = 'REFUND' AND refund_no = ANY($2::text[]))
              OR (created_at >= $3 AND created_at < $4)
           ORDER BY entry_id"#,
        payment_ids,
        refund_nos,
        from,
        to,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| LedgerRow {
            refund_no: row.refund_no,
            order_no: row.order_no,
            platform_payment_id: row.payment_id,
            amount_cents: row.amount_cents,
            currency: row.currency,
            booked_at: row.created_at,
        })
        .collect())
}

/// The status of each of these orders that exists.
#[tracing::instrument(name = "db.reconciliation.order_statuses", skip(db, order_nos))]
pub async fn order_statuses(
    db: impl PgExecutor<'_>,
    order_nos: &[String],
) -> sqlx::Result<Vec<(String, OrderStatus)>> {
    let rows = sqlx::query!(
        r#"SELECT order_no, status AS "status: OrderStatus" FROM orders WHERE order_no = ANY($1::text[])"#,
        order_nos,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| (row.order_no, row.status))
        .collect())
}

/// Refunds with these numbers, and automatic refunds of these platform payments.
#[tracing::instrument(name = "db.reconciliation.refunds", skip(db, refund_nos, payment_ids))]
pub async fn refunds(
    db: impl PgExecutor<'_>,
    refund_nos: &[String],
    payment_ids: &[String],
) -> sqlx::Result<Vec<RefundFact>> {
    sqlx::query_as!(
        RefundFact,
        r#"SELECT refund_no, order_no, platform_payment_id, amount_cents,
                  currency AS "currency: Currency", status AS "status: RefundStatus",
                  requested_by AS "requested_by: RefundRequester"
           FROM refunds
           WHERE refund_no = ANY($1::text[])
              OR (requested_by = 'automatic' AND platform_payment_id = ANY($2::text[]))"#,
        refund_nos,
        payment_ids,
    )
    .fetch_all(db)
    .await
}

/// Which of these keys an earlier reconciliation found on another day's bill.
#[tracing::instrument(name = "db.reconciliation.billed_elsewhere", skip(db, keys))]
pub async fn billed_elsewhere(
    db: impl PgExecutor<'_>,
    date: Date,
    keys: &[String],
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        "SELECT DISTINCT row_key FROM reconciliation_items
         WHERE row_key = ANY($1::text[]) AND bill_date <> $2 AND bill IS NOT NULL",
        keys,
        date,
    )
    .fetch_all(db)
    .await
}

/// Stores a classified row unless the date already has one with its key;
/// true when it was stored now.
#[tracing::instrument(name = "db.reconciliation.insert_item", skip(db, item), fields(row_key = %item.row_key, class = item.class.as_str()))]
pub async fn insert_item(db: impl PgExecutor<'_>, date: Date, item: &Item) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "INSERT INTO reconciliation_items (bill_date, row_key, class, order_no, bill, ledger)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT ON CONSTRAINT reconciliation_items_once_per_date_and_row DO NOTHING",
        date,
        item.row_key,
        item.class.as_str(),
        item.order_no,
        item.bill,
        item.ledger,
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Records that the date was reconciled (the first time only).
#[tracing::instrument(name = "db.reconciliation.record_run", skip(db))]
pub async fn record_run(db: impl PgExecutor<'_>, date: Date, bill_rows: i32) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO reconciliation_runs (bill_date, bill_rows) VALUES ($1, $2)
         ON CONFLICT (bill_date) DO NOTHING",
        date,
        bill_rows,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// When the date was reconciled and how many rows its bill had; None if never.
#[tracing::instrument(name = "db.reconciliation.run_of", skip(db))]
pub async fn run_of(
    db: impl PgExecutor<'_>,
    date: Date,
) -> sqlx::Result<Option<(OffsetDateTime, i32)>> {
    let row = sqlx::query!(
        "SELECT reconciled_at, bill_rows FROM reconciliation_runs WHERE bill_date = $1",
        date,
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| (row.reconciled_at, row.bill_rows)))
}

/// The date's rows, mismatches first, then by key, read straight into the wire type.
#[tracing::instrument(name = "db.reconciliation.items", skip(db))]
pub async fn items(db: impl PgExecutor<'_>, date: Date) -> sqlx::Result<Vec<ReconItem>> {
    sqlx::query_as!(
        ReconItem,
        r#"SELECT row_key, class AS "class: ReconClass", order_no, bill, ledger
           FROM reconciliation_items WHERE bill_date = $1
           ORDER BY class = 'MATCHED', class, row_key"#,
        date,
    )
    .fetch_all(db)
    .await
}

/// How many of the date's rows fell into each class; every class is listed.
#[tracing::instrument(name = "db.reconciliation.counts", skip(db))]
pub async fn counts(db: impl PgExecutor<'_>, date: Date) -> sqlx::Result<Vec<ReconCount>> {
    let rows = sqlx::query!(
        r#"SELECT class AS "class: ReconClass", count(*) AS "count!"
           FROM reconciliation_items WHERE bill_date = $1 GROUP BY class"#,
        date,
    )
    .fetch_all(db)
    .await?;
    Ok(ReconClass::ALL
        .iter()
        .map(|&class| ReconCount {
            class,
            count: rows
                .iter()
                .find(|row| row.class == class)
                .map_or(0, |row| row.count),
        })
        .collect())
}

/// A day's reconciliation as the admin API and the console show it: when it
/// ran, the count per class and every row (a day not reconciled yet: no run, no rows).
pub async fn view(db: &sqlx::PgPool, date: Date) -> sqlx::Result<api_types::api::Reconciliation> {
    let run = run_of(db, date).await?;
    Ok(api_types::api::Reconciliation {
        date: date.to_string(),
        reconciled_at: run.map(|(at, _)| at),
        bill_rows: run.map(|(_, rows)| rows),
        counts: counts(db, date).await?,
        items: items(db, date).await?,
    })
}
