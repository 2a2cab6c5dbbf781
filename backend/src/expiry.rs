//! Order expiry: every few seconds, close the PENDING orders that passed their
//! `expires_at`. Those with no payment attempt become CLOSED here
//! (`db::orders::close_expired`); those with one are queried and closed at the
//! platform first ([`expire_attempts`]). Rows are claimed with `FOR UPDATE SKIP
//! LOCKED`, so any number of backend instances sweep side by side without
//! closing one order twice or waiting on a pay that is deciding about it.
//!
//! An expired order with an open attempt is queried first (paid: booked as a
//! success); otherwise the payment is closed at the platform. Closed (or never
//! received) → the order is `CLOSED` and its hold released; "already paid" →
//! asked again and booked as a success, never `CLOSED`.

use crate::active_query::{PER_TICK, apply_state, close, is_decided};
use crate::db::{attempts, orders};
use crate::infra::faults;
use crate::platform::{CloseAnswer, PaymentRef, Platform};
use api_types::platform::PaymentStatus;
use sqlx::PgPool;
use std::time::Duration;

/// How often the sweep runs.
pub const SWEEP_EVERY: Duration = Duration::from_secs(2);
/// Most orders one sweep closes.
const BATCH: i64 = 500;

/// Until `stop` drains: closes expired unpaid orders.
pub async fn run(db: PgPool, platform: Platform, stop: crate::infra::shutdown::Shutdown) {
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
        expire_attempts(&db, &platform).await;
    }
}

/// Part of each expiry sweep: settles expired orders that have an open
/// attempt, one claimed order at a time, each at most once per sweep, until
/// none is left.
pub async fn expire_attempts(db: &PgPool, platform: &Platform) {
    let mut handled = Vec::new();
    for _ in 0..PER_TICK {
        match expire_one(db, platform, &mut handled).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(err) => {
                tracing::warn!(error = %format!("{err:#}"), "closing an expired payment failed; the next sweep retries");
                break;
            }
        }
    }
}

/// Claims one expired order with an open attempt, other than those in
/// `handled` (to which it is added), and settles it: booked if the platform
/// has a result, else closed there and here. An answer that cannot be booked
/// (flagged for a person) leaves the order to the next sweep. Returns false
/// when nothing was claimed.
pub async fn expire_one(
    db: &PgPool,
    platform: &Platform,
    handled: &mut Vec<String>,
) -> anyhow::Result<bool> {
    let mut tx = db.begin().await?;
    let Some(claimed) = attempts::claim_expired(&mut tx, handled).await? else {
        return Ok(false);
    };
    handled.push(claimed.order_no.clone());
    let span = tracing::info_span!("settlement.expire", order_no = %claimed.order_no, payment_id = %claimed.payment_id);
    let _enter = span.enter();
    // Query first: a close can be refused because the payment was paid.
    let known = platform.query(PaymentRef::of(&claimed)).await?;
    match known {
        Some(state) if is_decided(state.status) => {
            tracing::info!(status = ?state.status, "expired order: the platform has a result; booking it");
            apply_state(&mut tx, &claimed, &state).await?;
        }
        Some(state) if state.status == PaymentStatus::Closed => {
            tracing::info!("expired order: already closed at the platform; CLOSED");
            close(&mut tx, &claimed).await?;
        }
        _ => match platform.close(PaymentRef::of(&claimed)).await? {
            CloseAnswer::Closed(state) if state.status == PaymentStatus::Failed => {
                tracing::info!(
                    "expired order: the platform had refused the payment; booking the failure"
                );
                apply_state(&mut tx, &claimed, &state).await?;
            }
            CloseAnswer::Closed(_) => {
                tracing::info!(
                    "expired order: payment closed at the platform; CLOSED, hold released"
                );
                close(&mut tx, &claimed).await?;
            }
            CloseAnswer::NotFound => {
                tracing::info!(
                    "expired order: the platform never had the payment; CLOSED, hold released"
                );
                close(&mut tx, &claimed).await?;
            }
            CloseAnswer::AlreadyPaid => {
                tracing::info!(
                    "expired order: the close was refused, already paid; booking the success"
                );
                match platform.query(PaymentRef::of(&claimed)).await? {
                    Some(state) if state.status == PaymentStatus::Succeeded => {
                        apply_state(&mut tx, &claimed, &state).await?;
                    }
                    other => anyhow::bail!(
                        "the platform refused the close as already paid but its query answers {other:?}"
                    ),
                }
            }
        },
    }
    faults::crash_point("expiry.in_tx");
    tx.commit().await?;
    Ok(true)
}
