//! When payments are handed over: right after an attempt commits
//! ([`dispatch`]), and, forever in the background, again for attempts a crash or
//! a platform outage left committed but unsubmitted ([`run`]).

use super::Platform;
use crate::db::attempts::{self, AttemptRow};
use sqlx::PgPool;
use std::time::Duration;
use tracing::Instrument;

/// How old an unsubmitted attempt must be before the dispatcher hands it over
/// again: younger ones are still being handed over by the request that made them.
const DISPATCH_MIN_AGE_SECS: i64 = 5;

/// Hands one committed attempt to the platform and records when that is done.
/// Concurrent calls for the same attempt in this process collapse into one.
#[tracing::instrument(name = "dispatch", skip_all,
    fields(order_no = %attempt.order_no, payment_id = %attempt.payment_id))]
pub async fn dispatch(
    db: &PgPool,
    platform: &Platform,
    attempt: &AttemptRow,
) -> anyhow::Result<()> {
    {
        let mut in_flight = platform.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if !in_flight.insert(attempt.payment_id) {
            return Ok(());
        }
    }
    let result = platform.hand_over(attempt).await;
    platform
        .in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&attempt.payment_id);
    let handed_over = match result {
        Ok(handed_over) => handed_over,
        Err(err @ super::HandOverError::Unknown(_)) => {
            if attempts::mark_unknown(db, attempt.payment_id).await? {
                tracing::warn!(payment_id = %attempt.payment_id, error = %err,
                    "hand-over outcome unknown: the attempt is UNKNOWN (not failed) and will be sent again with the same key");
            }
            return Err(err.into());
        }
        Err(err) => return Err(err.into()),
    };
    attempts::mark_submitted(
        db,
        attempt.payment_id,
        handed_over.platform_payment_id.as_deref(),
        handed_over.qr_code.as_deref(),
    )
    .await?;
    tracing::info!(payment_id = %attempt.payment_id, order_no = %attempt.order_no,
        platform_payment_id = handed_over.platform_payment_id.as_deref().unwrap_or("(none yet)"),
        qr_code = handed_over.qr_code.is_some(), "payment handed to the platform");
    Ok(())
}

/// Until `stop` drains: hands over again the attempts that a crash (or a platform outage)
/// left committed but unsubmitted.
pub async fn run(db: PgPool, platform: Platform, stop: crate::shutdown::Shutdown) {
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    while stop.tick(&mut tick).await {
        let stuck = match attempts::list_unsubmitted(&db, DISPATCH_MIN_AGE_SECS, 100).await {
            Ok(rows) => rows,
            Err(err) => {
                tracing::warn!(error = %err, "dispatcher could not list unsubmitted attempts");
                continue;
            }
        };
        for attempt in stuck {
            let (db, platform) = (db.clone(), platform.clone());
            let span = tracing::info_span!("dispatcher.resend",
                order_no = %attempt.order_no, payment_id = %attempt.payment_id);
            tokio::spawn(
                async move {
                    tracing::info!("handing over an attempt left unsubmitted");
                    if let Err(err) = dispatch(&db, &platform, &attempt).await {
                        tracing::warn!(error = %err, "hand-over failed; will retry");
                    }
                }
                .instrument(span),
            );
        }
    }
}
