//! `anomalies`: what a person must review (odd callbacks, money the platform took
//! that we could not book). Written inside the transaction that found the oddity,
//! so an anomaly exists exactly when its cause was recorded.

use api_types::AnomalyKind;
use api_types::api::Anomaly;
use sqlx::PgExecutor;

/// Records an anomaly once per (callback id, kind); retries of the same callback add nothing.
#[tracing::instrument(name = "db.anomalies.record", skip(db, details))]
pub async fn record(
    db: impl PgExecutor<'_>,
    callback_id: &str,
    order_no: &str,
    kind: AnomalyKind,
    details: serde_json::Value,
) -> sqlx::Result<()> {
    tracing::warn!(callback_id, order_no, kind = kind.as_str(), %details, "anomaly recorded for review");
    sqlx::query!(
        "INSERT INTO anomalies (callback_id, order_no, kind, details) VALUES ($1, $2, $3, $4)
         ON CONFLICT ON CONSTRAINT anomalies_once_per_callback_and_kind DO NOTHING",
        callback_id,
        order_no,
        kind.as_str(),
        details,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Anomalies, newest first: of one callback id, or all of them (at most `limit`),
/// read straight into the wire type.
#[tracing::instrument(name = "db.anomalies.list", skip(db))]
pub async fn list(
    db: impl PgExecutor<'_>,
    callback_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<Anomaly>> {
    sqlx::query_as!(
        Anomaly,
        r#"SELECT callback_id, order_no, kind AS "kind: AnomalyKind", details, created_at
           FROM anomalies
           WHERE $1::text IS NULL OR callback_id = $1
           ORDER BY anomaly_id DESC LIMIT $2"#,
        callback_id,
        limit,
    )
    .fetch_all(db)
    .await
}
