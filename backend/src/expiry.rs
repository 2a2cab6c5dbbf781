//! Order expiry: every few seconds, close the PENDING orders that passed their
//! `expires_at`. Those with no payment attempt become CLOSED here
//! (`db::orders::close_expired`); those with one are queried and closed at the
//! platform first ([`crate::settlement::expire_attempts`]). Rows are claimed
//! with `FOR UPDATE SKIP LOCKED`, so any number of backend instances sweep side
//! by side without closing one order twice or waiting on a pay that is
//! deciding about it.

use crate::db::orders;
use crate::platform::Platform;
use sqlx::PgPool;
use std::time::Duration;

/// How often the sweep runs.
pub const SWEEP_EVERY: Duration = Duration::from_secs(2);
/// Most orders one sweep closes.
const BATCH: i64 = 500;

/// Until `stop` drains: closes expired unpaid orders.
pub async fn run(db: PgPool, platform: Platform, stop: crate::shutdown::Shutdown) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    while stop.tick(&mut tick).await {
        match orders::close_expired(&db, BATCH).await {
            Ok(closed) => {
                for order_no in &closed {
                    tracing::info!(%order_no, "order expired unpaid: CLOSED, nothing charged");
                }
            }
            Err(err) => tracing::warn!(error = %err, "expiry sweep failed; the next one retries"),
        }
        crate::settlement::expire_attempts(&db, &platform).await;
    }
}
