//! `idempotency_keys`: the answer each (caller, key) got, for replays.

use sqlx::PgConnection;

/// A stored answer.
#[derive(Debug, Clone)]
pub struct StoredAnswer {
    /// Fingerprint of the request that made it.
    pub request_fingerprint: String,
    /// Its HTTP status.
    pub response_status: i16,
    /// Its JSON body.
    pub response_body: serde_json::Value,
}

/// Takes the transaction-scoped lock of (scope, key) without waiting: false
/// when another transaction holds it (its request is still running).
#[tracing::instrument(name = "db.idempotency.try_lock", skip(conn, key))]
pub async fn try_lock(conn: &mut PgConnection, scope: &str, key: &str) -> sqlx::Result<bool> {
    let locked = sqlx::query_scalar!(
        "SELECT pg_try_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 0)) AS \"locked!\"",
        scope,
        key,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(locked)
}

/// The answer stored for (scope, key), if any.
#[tracing::instrument(name = "db.idempotency.find", skip(conn, key))]
pub async fn find(
    conn: &mut PgConnection,
    scope: &str,
    key: &str,
) -> sqlx::Result<Option<StoredAnswer>> {
    sqlx::query_as!(
        StoredAnswer,
        "SELECT request_fingerprint, response_status, response_body
         FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2",
        scope,
        key,
    )
    .fetch_optional(&mut *conn)
    .await
}

/// Stores the answer of (scope, key), in the transaction that did the work.
#[tracing::instrument(name = "db.idempotency.insert", skip(conn, key, body))]
pub async fn insert(
    conn: &mut PgConnection,
    scope: &str,
    key: &str,
    fingerprint: &str,
    status: i16,
    body: &serde_json::Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO idempotency_keys (scope, idempotency_key, request_fingerprint, response_status, response_body)
         VALUES ($1, $2, $3, $4, $5)",
        scope,
        key,
        fingerprint,
        status,
        body,
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}
