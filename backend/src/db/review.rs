//! What the operator console reads and writes: the anomalies queue and its
//! resolutions, an order's timeline, search, and the last hour's traffic.
//! Anomalies are resolved once and never deleted (a trigger of migration 11
//! holds that, whatever calls it).

use api_types::AnomalyKind;
use api_types::ops::{ActivityMinute, AnomalyState, OpsOrder, ReviewAnomaly, TimelineEvent};
use api_types::{Currency, OrderStatus};
use sqlx::PgExecutor;
use time::OffsetDateTime;
use uuid::Uuid;

/// Anomalies newest first, of one state (and kind, and merchant), at most `limit`.
#[tracing::instrument(name = "db.review.anomalies", skip(db))]
pub async fn anomalies(
    db: impl PgExecutor<'_>,
    state: AnomalyState,
    kind: Option<AnomalyKind>,
    merchant_id: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<ReviewAnomaly>> {
    let (open, resolved) = match state {
        AnomalyState::Open => (true, false),
        AnomalyState::Resolved => (false, true),
        AnomalyState::All => (true, true),
    };
    sqlx::query_as!(
        ReviewAnomaly,
        r#"SELECT anomaly_id, callback_id, order_no, kind AS "kind: AnomalyKind", details,
                  created_at, resolved_at, resolved_by, resolution_note
           FROM anomalies
           WHERE ((resolved_at IS NULL AND $1) OR (resolved_at IS NOT NULL AND $2))
             AND ($3::text IS NULL OR kind = $3)
             AND ($5::uuid IS NULL OR EXISTS (SELECT FROM orders o
                                              WHERE o.order_no = anomalies.order_no AND o.merchant_id = $5))
           ORDER BY anomaly_id DESC LIMIT $4"#,
        open,
        resolved,
        kind.map(AnomalyKind::as_str),
        limit,
        merchant_id,
    )
    .fetch_all(db)
    .await
}

/// One anomaly.
#[tracing::instrument(name = "db.review.anomaly", skip(db))]
pub async fn anomaly(
    db: impl PgExecutor<'_>,
    anomaly_id: i64,
) -> sqlx::Result<Option<ReviewAnomaly>> {
    sqlx::query_as!(
        ReviewAnomaly,
        r#"SELECT anomaly_id, callback_id, order_no, kind AS "kind: AnomalyKind", details,
                  created_at, resolved_at, resolved_by, resolution_note
           FROM anomalies WHERE anomaly_id = $1"#,
        anomaly_id,
    )
    .fetch_optional(db)
    .await
}

/// Resolves an open anomaly: `None` when there is no open anomaly by that
/// number (none at all, or resolved before: the caller tells which).
#[tracing::instrument(name = "db.review.resolve", skip(db, note))]
pub async fn resolve(
    db: impl PgExecutor<'_>,
    anomaly_id: i64,
    by: &str,
    note: &str,
) -> sqlx::Result<Option<ReviewAnomaly>> {
    sqlx::query_as!(
        ReviewAnomaly,
        r#"UPDATE anomalies SET resolved_at = now(), resolved_by = $2, resolution_note = $3
           WHERE anomaly_id = $1 AND resolved_at IS NULL
           RETURNING anomaly_id, callback_id, order_no, kind AS "kind: AnomalyKind", details,
                     created_at, resolved_at, resolved_by, resolution_note"#,
        anomaly_id,
        by,
        note,
    )
    .fetch_optional(db)
    .await
}

/// An order as the console shows it, with its shopper's email.
#[tracing::instrument(name = "db.review.order", skip(db))]
pub async fn order(db: impl PgExecutor<'_>, order_no: &str) -> sqlx::Result<Option<OpsOrder>> {
    sqlx::query_as!(
        OpsOrder,
        r#"SELECT o.order_no, coalesce(s.email, '') AS "shopper_email!", o.amount_cents,
                  o.currency AS "currency: Currency", o.status AS "status: OrderStatus",
                  o.refunded_cents, o.created_at
           FROM orders o LEFT JOIN shoppers s ON s.shopper_id = o.shopper_id
           WHERE o.order_no = $1"#,
        order_no,
    )
    .fetch_optional(db)
    .await
}

/// One row of the timeline as the SQL gives it (its kind as text).
pub struct TimelineRow {
    /// When.
    pub at: OffsetDateTime,
    /// A [`api_types::ops::TimelineKind`] spelled in snake case.
    pub kind: String,
    /// One line for people.
    pub title: String,
    /// The facts.
    pub details: serde_json::Value,
}

/// Everything that happened to an order, oldest first, in one statement: the
/// order, its tokens, its attempt, every delivery (query answers are the
/// `query:` ones), its ledger rows, refunds and anomalies.
#[tracing::instrument(name = "db.review.timeline", skip(db))]
pub async fn timeline(db: impl PgExecutor<'_>, order_no: &str) -> sqlx::Result<Vec<TimelineRow>> {
    sqlx::query_file_as!(TimelineRow, "sql/ops/timeline.sql", order_no)
        .fetch_all(db)
        .await
}

/// Turns rows into events; a kind the SQL and the wire type disagree on is an
/// error. An event whose facts carry an amount and its currency shows the
/// amount after its title, written as people read money (`24.50 EUR`, from
/// the integer minor units, never through a float).
pub fn events(rows: Vec<TimelineRow>) -> Result<Vec<TimelineEvent>, serde_json::Error> {
    rows.into_iter()
        .map(|row| {
            let amount = row.details["amount_cents"].as_i64().zip(
                row.details["currency"]
                    .as_str()
                    .and_then(|code| code.parse::<Currency>().ok()),
            );
            let title = match amount {
                Some((cents, currency)) => {
                    format!(
                        "{}: {}",
                        row.title,
                        api_types::format_minor(cents, currency)
                    )
                }
                None => row.title,
            };
            Ok(TimelineEvent {
                at: row.at,
                kind: serde_json::from_value(serde_json::Value::String(row.kind))?,
                title,
                details: row.details,
            })
        })
        .collect()
}

/// Orders matching `q` exactly by number, by a callback id delivered for it,
/// by our or the platform's payment id, or (case-insensitively) by the
/// shopper's email, only `merchant_id`'s when given (without `q`: that
/// merchant's, matched by `merchant`); newest first, at most 50, each with
/// what matched.
#[tracing::instrument(name = "db.review.search", skip(db))]
pub async fn search(
    db: impl PgExecutor<'_>,
    q: Option<&str>,
    merchant_id: Option<Uuid>,
) -> sqlx::Result<Vec<(OpsOrder, String)>> {
    let rows = sqlx::query!(
        r#"WITH hits AS (
               SELECT order_no, 'order_no' AS matched_by FROM orders WHERE order_no = $1
               UNION
               SELECT order_no, 'callback_id' FROM callback_deliveries
                   WHERE callback_id = $1 AND order_no IS NOT NULL
               UNION
               SELECT order_no, 'payment_id' FROM payment_attempts
                   WHERE payment_id::text = lower($1) OR platform_payment_id = $1
               UNION
               SELECT o.order_no, 'shopper_email' FROM orders o
                   JOIN shoppers s ON s.shopper_id = o.shopper_id
                   WHERE lower(s.email) = lower($1)
               UNION
               SELECT order_no, 'merchant' FROM orders WHERE $1::text IS NULL AND merchant_id = $2)
           SELECT o.order_no AS "order_no!", coalesce(s.email, '') AS "shopper_email!",
                  o.amount_cents AS "amount_cents!", o.currency AS "currency!: Currency",
                  o.status AS "status!: OrderStatus", o.refunded_cents AS "refunded_cents!",
                  o.created_at AS "created_at!", min(h.matched_by) AS "matched_by!"
           FROM hits h JOIN orders o ON o.order_no = h.order_no
           LEFT JOIN shoppers s ON s.shopper_id = o.shopper_id
           WHERE $2::uuid IS NULL OR o.merchant_id = $2
           GROUP BY o.order_no, s.email
           ORDER BY o.created_at DESC LIMIT 50"#,
        q,
        merchant_id,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            (
                OpsOrder {
                    order_no: row.order_no,
                    shopper_email: row.shopper_email,
                    amount_cents: row.amount_cents,
                    currency: row.currency,
                    status: row.status,
                    refunded_cents: row.refunded_cents,
                    created_at: row.created_at,
                },
                row.matched_by,
            )
        })
        .collect())
}

/// The last 60 minutes (the current one last): deliveries and duplicates from
/// the delivery log (query answers left out), pays from the attempts. Replays
/// are not in the database; the caller adds them.
#[tracing::instrument(name = "db.review.activity", skip(db))]
pub async fn activity(db: impl PgExecutor<'_>) -> sqlx::Result<Vec<ActivityMinute>> {
    sqlx::query_as!(
        ActivityMinute,
        r#"WITH minutes AS (
               SELECT generate_series(date_trunc('minute', now()) - interval '59 minutes',
                                      date_trunc('minute', now()), interval '1 minute') AS minute),
           deliveries AS (
               SELECT date_trunc('minute', received_at) AS minute, count(*) AS n,
                      count(*) FILTER (WHERE outcome = 'DUPLICATE') AS duplicates
               FROM callback_deliveries
               WHERE received_at >= date_trunc('minute', now()) - interval '59 minutes'
                 AND callback_id NOT LIKE 'query:%'
               GROUP BY 1),
           pays AS (
               SELECT date_trunc('minute', created_at) AS minute, count(*) AS n
               FROM payment_attempts
               WHERE created_at >= date_trunc('minute', now()) - interval '59 minutes'
               GROUP BY 1)
           SELECT m.minute AS "minute!", coalesce(d.n, 0) AS "deliveries!",
                  coalesce(d.duplicates, 0) AS "duplicates!", coalesce(p.n, 0) AS "pays!",
                  0::bigint AS "replays!"
           FROM minutes m
           LEFT JOIN deliveries d ON d.minute = m.minute
           LEFT JOIN pays p ON p.minute = m.minute
           ORDER BY m.minute"#,
    )
    .fetch_all(db)
    .await
}

#[cfg(test)]
mod tests {
    use super::{TimelineRow, events};
    use serde_json::json;
    use time::macros::datetime;

    fn row(kind: &str, title: &str, details: serde_json::Value) -> TimelineRow {
        TimelineRow {
            at: datetime!(2026-12-07 10:00 UTC),
            kind: kind.into(),
            title: title.into(),
            details,
        }
    }

    #[test]
    fn a_timeline_title_writes_its_amount_as_people_read_money() {
        let titles: Vec<String> = events(vec![
            row(
                "order_placed",
                "order placed",
                json!({"amount_cents": 2450, "currency": "EUR"}),
            ),
            row(
                "ledger",
                "ledger CHARGE",
                json!({"amount_cents": 123_456, "currency": "CNY"}),
            ),
            row(
                "refund",
                "refund ref_1 asked for by merchant",
                json!({"amount_cents": 5, "currency": "JPY"}),
            ),
            row(
                "token_issued",
                "request token issued (page loaded)",
                json!({}),
            ),
        ])
        .expect("known kinds")
        .into_iter()
        .map(|event| event.title)
        .collect();

        assert_eq!(
            titles,
            [
                "order placed: 24.50 EUR",
                "ledger CHARGE: 1,234.56 CNY",
                "refund ref_1 asked for by merchant: 5 JPY",
                "request token issued (page loaded)",
            ]
        );
    }
}
