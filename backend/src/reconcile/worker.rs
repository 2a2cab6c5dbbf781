//! The daily worker: in every serving instance, once a minute, after
//! `RECONCILE_AT_UTC` it reconciles the previous UTC day if
//! `reconciliation_runs` has no row for it yet. Two instances may both start:
//! the date's advisory lock makes the second wait, and it then stores nothing
//! new. A failed attempt (platform down) is tried again 10 minutes later.
//!
//! Started only for `PLATFORM=remote` and unless `RECONCILE_DAILY=false`: the
//! in-process sandbox's payments die with the process (after a restart its
//! bill of yesterday would be empty and every booking of the day would read as
//! missing from it), and the WeChat Pay and Alipay connectors download no
//! bills yet. It never returns: the serving process stops when a worker ends.

use crate::platform::Platform;
use sqlx::PgPool;
use std::time::Duration;
use time::{OffsetDateTime, Time};

/// How often the worker looks at the clock.
const TICK: Duration = Duration::from_secs(60);

/// How long the worker waits after a failed reconciliation before trying again.
const AFTER_FAILURE: Duration = Duration::from_secs(600);

/// The day to reconcile at `now`: yesterday, once `now` is past `at`.
pub fn due_day(now: OffsetDateTime, at: Time) -> Option<time::Date> {
    let now = now.to_offset(time::UtcOffset::UTC);
    if now.time() < at {
        return None;
    }
    now.date().previous_day()
}

/// Until `stop` drains: reconciles the previous day once a day, after `at` (UTC).
pub async fn run(db: PgPool, platform: Platform, at: Time, stop: crate::infra::shutdown::Shutdown) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while stop.tick(&mut tick).await {
        let Some(day) = due_day(OffsetDateTime::now_utc(), at) else {
            continue;
        };
        match crate::db::reconciliation::run_of(&db, day).await {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(err) => {
                tracing::warn!(error = %err, %day, "cannot tell whether the day was reconciled");
                continue;
            }
        }
        match super::reconcile(&db, &platform, day).await {
            Ok(report) => {
                let mismatches = report.mismatches().count();
                if mismatches > 0 {
                    tracing::warn!(%day, mismatches, "the daily bill disagrees with the ledger: see the anomalies");
                }
            }
            Err(err) => {
                tracing::error!(error = %err, %day, "daily reconciliation failed; trying again in 10 minutes");
                stop.sleep(AFTER_FAILURE).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::{date, datetime, time};

    #[test]
    fn the_previous_day_is_due_once_the_time_of_day_is_reached() {
        let at = time!(10:00);
        assert_eq!(due_day(datetime!(2026-12-04 09:59:59 UTC), at), None);
        assert_eq!(
            due_day(datetime!(2026-12-04 10:00 UTC), at),
            Some(date!(2026 - 12 - 03))
        );
        assert_eq!(
            due_day(datetime!(2026-12-04 23:00 UTC), at),
            Some(date!(2026 - 12 - 03))
        );
    }
}
