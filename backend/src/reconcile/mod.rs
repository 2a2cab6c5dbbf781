//! Daily bill reconciliation: the platform's bill of a UTC day compared with
//! the ledger, every row classed once ([`classify`] says how), every mismatch
//! an anomaly for a person (docs/OPERATIONS.md says what to do with each).
//!
//! ```text
//! platform: GET bill (CSV)  ->  bill::parse (exact amounts)  ->  BEGIN; advisory lock of the date
//!   -> read what we hold (ledger rows, orders, refunds)  ->  classify (pure)
//!   -> per row: INSERT reconciliation_items ON CONFLICT DO NOTHING; if new and a mismatch,
//!      anomalies::record(callback_id = "reconcile:<date>:<row key>", kind = the class)
//!   -> INSERT reconciliation_runs ON CONFLICT DO NOTHING; COMMIT
//! ```
//!
//! Reconciling a date again inserts nothing: its rows are keyed by (date, row
//! key), its anomalies by their callback id and kind. The first verdict
//! stands, so a payment booked after its day was reconciled keeps its
//! `MISSING_IN_LEDGER` row and anomaly: a person closes it.
//!
//! Run by `backend reconcile --date YYYY-MM-DD` and by the daily worker
//! ([`worker`]), never for today or a later day: a day's bill is complete only
//! once the day is over.

pub mod worker;

use crate::db::{self, anomalies};
use crate::platform::{BillError, Platform};
use api_types::api::{ReconCount, ReconItem};
use api_types::{ReconClass, RefundRequester};
use checkout_rules::reconcile::classify::Books;
use checkout_rules::reconcile::{bill, classify};
use serde_json::json;
use sqlx::PgPool;
use std::collections::HashSet;
use time::{Date, OffsetDateTime};

/// What a reconciliation of a date did, and where the date stands now.
#[derive(Debug, Clone)]
pub struct Report {
    /// The bill's day.
    pub date: Date,
    /// Rows on the bill.
    pub bill_rows: usize,
    /// Rows stored by this run (0 when the date had been reconciled before).
    pub recorded_now: usize,
    /// The date's rows per class, as stored.
    pub counts: Vec<ReconCount>,
    /// The date's rows, as stored, mismatches first.
    pub items: Vec<ReconItem>,
}

impl Report {
    /// The stored rows that are not `MATCHED`.
    pub fn mismatches(&self) -> impl Iterator<Item = &ReconItem> {
        self.items
            .iter()
            .filter(|item| item.class != ReconClass::Matched)
    }
}

/// Why a date could not be reconciled. Nothing was stored.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// No bill: the connector has none, the platform refused or did not answer.
    #[error(transparent)]
    Bill(#[from] BillError),
    /// The bill does not read.
    #[error("the platform's bill cannot be read: {0}")]
    Format(#[from] bill::BillFormatError),
    /// The database failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

/// Refuses today and later days (UTC): their bills are not complete yet.
pub fn check_day_is_over(date: Date, now: OffsetDateTime) -> Result<(), String> {
    let today = now.to_offset(time::UtcOffset::UTC).date();
    if date >= today {
        return Err(format!(
            "{date} is not over yet (today is {today} UTC): a day is reconciled once its bill is complete, from the next day on"
        ));
    }
    Ok(())
}

/// Reconciles `date`: downloads the platform's bill, compares it with the
/// ledger and stores the verdicts, in one transaction under the date's lock.
/// Does not check that the day is over ([`check_day_is_over`]); the command
/// and the worker do.
pub async fn reconcile(
    db: &PgPool,
    platform: &Platform,
    date: Date,
) -> Result<Report, ReconcileError> {
    let text = platform.daily_bill(date).await?;
    let rows = bill::parse(&text)?;
    let from = date.midnight().assume_utc();
    let to = date
        .next_day()
        .map_or(from, |next| next.midnight().assume_utc());

    let mut tx = db.begin().await?;
    db::reconciliation::lock_date(&mut *tx, date).await?;
    let books = books(&mut tx, date, &rows, from, to).await?;
    let items = classify::classify(&rows, &books);
    let mut recorded_now = 0;
    for item in &items {
        if !db::reconciliation::insert_item(&mut *tx, date, item).await? {
            continue;
        }
        recorded_now += 1;
        if let Some(kind) = item.class.anomaly() {
            let details = json!({
                "bill_date": date.to_string(),
                "row_key": item.row_key,
                "class": item.class.as_str(),
                "bill": item.bill,
                "ledger": item.ledger,
            });
            let callback_id = format!("reconcile:{date}:{}", item.row_key);
            anomalies::record(&mut *tx, &callback_id, &item.order_no, kind, details).await?;
        }
    }
    let bill_rows = i32::try_from(rows.len()).unwrap_or(i32::MAX);
    db::reconciliation::record_run(&mut *tx, date, bill_rows).await?;
    tx.commit().await?;
    tracing::info!(%date, bill_rows = rows.len(), recorded_now, "daily bill reconciled");

    Ok(Report {
        date,
        bill_rows: rows.len(),
        recorded_now,
        counts: db::reconciliation::counts(db, date).await?,
        items: db::reconciliation::items(db, date).await?,
    })
}

/// Reads what we hold about the bill's rows and the day's bookings.
async fn books(
    tx: &mut sqlx::PgConnection,
    date: Date,
    rows: &[bill::BillRow],
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> sqlx::Result<Books> {
    let payment_ids: Vec<String> = rows
        .iter()
        .map(|row| row.transaction_id.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let refund_nos: Vec<String> = rows
        .iter()
        .filter_map(|row| row.refund.as_ref().map(|r| r.out_refund_no.clone()))
        .collect();
    let order_nos: Vec<String> = rows.iter().map(|row| row.out_trade_no.clone()).collect();

    let mut books = Books::default();
    let ledger =
        db::reconciliation::ledger_rows(&mut *tx, &payment_ids, &refund_nos, from, to).await?;
    for row in ledger {
        if row.booked_at >= from && row.booked_at < to {
            books.booked_on_day.push(row.clone());
        }
        match &row.refund_no {
            Some(refund_no) => {
                books.refunds_booked.insert(refund_no.clone(), row);
            }
            None => {
                books.charges.insert(row.platform_payment_id.clone(), row);
            }
        }
    }
    books.orders = db::reconciliation::order_statuses(&mut *tx, &order_nos)
        .await?
        .into_iter()
        .collect();
    for refund in db::reconciliation::refunds(&mut *tx, &refund_nos, &payment_ids).await? {
        if refund.requested_by == RefundRequester::Automatic {
            books
                .automatic
                .insert(refund.platform_payment_id.clone(), refund.clone());
        }
        books.refunds.insert(refund.refund_no.clone(), refund);
    }
    let day_keys: Vec<String> = books.booked_on_day.iter().map(|row| row.key()).collect();
    books.billed_elsewhere = db::reconciliation::billed_elsewhere(&mut *tx, date, &day_keys)
        .await?
        .into_iter()
        .collect();
    Ok(books)
}

/// The lines `backend reconcile` prints: a per-class summary, then every mismatch.
pub fn report_lines(report: &Report) -> Vec<String> {
    let mut lines = vec![
        format!(
            "reconciliation of {}: {} bill rows, {} rows recorded by this run",
            report.date, report.bill_rows, report.recorded_now
        ),
        format!("{:<20} {:>6}", "class", "rows"),
    ];
    for count in &report.counts {
        lines.push(format!("{:<20} {:>6}", count.class.as_str(), count.count));
    }
    let mismatches: Vec<_> = report.mismatches().collect();
    if mismatches.is_empty() {
        lines.push("no mismatches".to_owned());
    } else {
        lines.push(format!("{} mismatches:", mismatches.len()));
        for item in mismatches {
            let show = |value: &Option<serde_json::Value>| {
                value
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), ToString::to_string)
            };
            lines.push(format!(
                "  {:<18} {}  order {}  bill: {}  ledger: {}",
                item.class.as_str(),
                item.row_key,
                item.order_no,
                show(&item.bill),
                show(&item.ledger)
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_days_that_are_over_are_reconciled() {
        let now = time::macros::datetime!(2026-12-04 00:00:01 UTC);
        assert!(check_day_is_over(time::macros::date!(2026 - 12 - 03), now).is_ok());
        assert!(check_day_is_over(time::macros::date!(2026 - 12 - 04), now).is_err());
        assert!(check_day_is_over(time::macros::date!(2027 - 01 - 01), now).is_err());
    }
}
