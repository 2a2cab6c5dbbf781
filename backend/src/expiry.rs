//! Order expiry: every few seconds, close the PENDING orders that passed their
//! `expires_at` with no payment attempt (`db::orders::close_expired`). Rows
//! are claimed with `FOR UPDATE SKIP LOCKED`, so any number of backend
//! instances sweep side by side without closing one order twice or waiting on
//! a pay that is deciding about it. An expired order that *has* an attempt is
//! left to its payment's result (the platform query and close come next).

use crate::db::orders;
use sqlx::PgPool;
use std::time::Duration;

/// How often the sweep runs.
pub const SWEEP_EVERY: Duration = Duration::from_secs(2);
/// Most orders one sweep closes.
const BATCH: i64 = 500;

/// Forever: closes expired unpaid orders.
pub async fn run(db: PgPool) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    loop {
        tick.tick().await;
        match orders::close_expired(&db, BATCH).await {
            Ok(closed) => {
                for order_no in &closed {
                    tracing::info!(%order_no, "order expired unpaid: CLOSED, nothing charged");
                }
            }
            Err(err) => tracing::warn!(error = %err, "expiry sweep failed; the next one retries"),
        }
    }
}
