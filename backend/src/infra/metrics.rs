//! Metrics in the Prometheus text format: what a person on call reads first.
//!
//! Counters and histograms are recorded through the `metrics` facade into one
//! Prometheus recorder per process ([`handle`]); `GET /metrics` (the admin
//! token) and, with `METRICS_BIND_ADDR`, a listener of its own without a token
//! render them. Counters start at zero when a process starts (Prometheus'
//! `rate()` and `increase()` take restarts in their stride).
//!
//! Where a number is a fact of the database (orders waiting, open attempts,
//! anomalies, refunds by status), it is read from the database at each scrape
//! ([`refresh_from_database`]) rather than counted, so it is exact, survives
//! restarts and is the same on every instance.
//!
//! Request outcomes are counted in one place, [`crate::http::metrics::track`], from the answer each
//! route gave: its status, the error code [`crate::error::ApiError`] put on it
//! ([`ErrorCodeTag`]), and what a callback route put on it ([`CallbackAnswer`]).
//! `docs/OPERATIONS.md` says what each metric means.

use api_types::{AnomalyKind, AttemptStatus, RefundStatus};
use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// Callbacks received, by `platform`, `outcome` (`applied`, `duplicate`,
/// `ignored`, `conflict`, `refused`, `failed`) and `reason` (the error code of a refusal
/// or failure; empty otherwise).
pub const CALLBACKS_RECEIVED: &str = "checkout_callbacks_received_total";
/// What the charge transaction did with each callback it read, by `result`
/// (the delivery log's outcome: `CHARGED`, `DUPLICATE`, `ORDER_FAILED`, ...).
pub const CALLBACK_RESULTS: &str = "checkout_callback_results_total";
/// Pay requests by `outcome` (`accepted`, `replayed`, `token_invalid`,
/// `insufficient_funds`, `unavailable`, `refused`, `failed`) and `reason`.
pub const PAY_REQUESTS: &str = "checkout_pay_requests_total";
/// Request tokens issued.
pub const TOKENS_ISSUED: &str = "checkout_request_tokens_issued_total";
/// Request tokens taken out of the token store by the one winning pay.
pub const TOKENS_CONSUMED: &str = "checkout_request_tokens_consumed_total";
/// Hand-overs a pay left to the dispatcher because
/// [`crate::platform::HAND_OVERS_IN_FLIGHT_MAX`] were in flight (a slow or stalled platform).
pub const HAND_OVERS_DEFERRED: &str = "checkout_hand_overs_deferred_total";
/// Calls to the payment platform by `operation` (`hand_over`, `query`,
/// `close`, `refund`, `refund_query`) and `result`.
pub const PLATFORM_CALLS: &str = "checkout_platform_calls_total";
/// How long each call to the payment platform took, by `operation`.
pub const PLATFORM_CALL_SECONDS: &str = "checkout_platform_call_duration_seconds";
/// Request latency by `method`, `route` (the route's pattern) and `status`.
pub const HTTP_SECONDS: &str = "checkout_http_request_duration_seconds";
/// From BEGIN to COMMIT of a callback's charge transaction.
pub const CHARGE_TX_SECONDS: &str = "checkout_charge_transaction_duration_seconds";
/// Orders waiting to be paid (`PENDING`), read from the database.
pub const ORDERS_PENDING: &str = "checkout_orders_pending";
/// Payment attempts not yet final, by `status` (`CREATED`, `SUBMITTED`, `UNKNOWN`).
pub const ATTEMPTS_OPEN: &str = "checkout_payment_attempts_open";
/// Age in seconds of the oldest attempt not yet final (0 when there is none).
pub const OLDEST_OPEN_ATTEMPT_SECONDS: &str = "checkout_oldest_open_attempt_age_seconds";
/// Money we hold that is not ours, by `currency`, in minor units: the balance
/// of the books' suspense account (successes we could not book whose
/// automatic refund has not given them back yet), read from the database.
pub const SUSPENSE_MINOR_UNITS: &str = "checkout_suspense_balance_minor_units";
/// Anomalies recorded for review, by `kind` (all time, from the database).
pub const ANOMALIES: &str = "checkout_anomalies_total";
/// Refunds by `status` (`PENDING`, `SUCCEEDED`, `FAILED`), from the database.
pub const REFUNDS: &str = "checkout_refunds";
/// 1 when the last scrape could read the database's numbers, else 0 (and the
/// database gauges keep their previous values).
pub const DATABASE_READ: &str = "checkout_metrics_database_read";

/// Histogram buckets (seconds) for every `*_seconds` metric: 1 ms to 10 s.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The process's recorder, installed as the `metrics` facade's global
/// recorder on first use. Should another recorder already be installed (a
/// test harness), the handle renders an empty recorder rather than failing.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)
            .expect("the buckets are not empty");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!(
                "another metrics recorder is installed: /metrics shows only what it is given"
            );
        }
        describe();
        handle
    })
}

/// Drains histogram samples into their buckets every few seconds, so memory
/// stays flat between scrapes. Runs until the process stops.
pub async fn run_upkeep() {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        handle().run_upkeep();
    }
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        CALLBACKS_RECEIVED,
        "Payment result callbacks received, by platform, outcome and refusal reason"
    );
    describe_counter!(
        CALLBACK_RESULTS,
        "What the charge transaction did with each callback it read"
    );
    describe_counter!(PAY_REQUESTS, "Pay now requests, by outcome");
    describe_counter!(TOKENS_ISSUED, "Request tokens issued");
    describe_counter!(TOKENS_CONSUMED, "Request tokens consumed by a winning pay");
    describe_counter!(
        PLATFORM_CALLS,
        "Calls to the payment platform, by operation and result"
    );
    describe_histogram!(
        PLATFORM_CALL_SECONDS,
        Unit::Seconds,
        "Payment platform call duration"
    );
    describe_histogram!(HTTP_SECONDS, Unit::Seconds, "HTTP request duration");
    describe_histogram!(
        CHARGE_TX_SECONDS,
        Unit::Seconds,
        "Callback charge transaction duration, BEGIN to COMMIT"
    );
    describe_gauge!(ORDERS_PENDING, "Orders waiting to be paid");
    describe_gauge!(ATTEMPTS_OPEN, "Payment attempts not yet final, by status");
    describe_gauge!(
        OLDEST_OPEN_ATTEMPT_SECONDS,
        Unit::Seconds,
        "Age of the oldest payment attempt not yet final"
    );
    describe_gauge!(
        SUSPENSE_MINOR_UNITS,
        "Money held that is not ours (the suspense account), by currency, in minor units"
    );
    describe_counter!(ANOMALIES, "Anomalies recorded for review, by kind");
    describe_gauge!(REFUNDS, "Refunds by status");
    describe_gauge!(
        DATABASE_READ,
        "Whether the last scrape read the database's numbers"
    );
}

/// The error code of an answer, put on the response by [`crate::error::ApiError`]
/// and by the platforms' notification routes, for [`crate::http::metrics::track`] to count.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCodeTag(pub &'static str);

/// What a callback route did with an acknowledged notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackAnswer {
    /// It was new and the charge transaction committed.
    Applied,
    /// It had been applied before; nothing changed.
    Duplicate,
    /// Acknowledged with nothing to apply (an Alipay notification of a trade
    /// still waiting for the buyer).
    Ignored,
}

impl CallbackAnswer {
    /// `applied`, `duplicate` or `ignored`: the `outcome` label, and the log's word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Duplicate => "duplicate",
            Self::Ignored => "ignored",
        }
    }
}

/// Pay replays per minute over the last hour, of this process: the console's
/// activity chart ([`crate::http::routes::ops::activity`]). A replay changes nothing, so
/// nothing of it is written to the database.
pub static RECENT_REPLAYS: RecentMinutes = RecentMinutes::new();

/// Counts per minute for the last 60 minutes.
pub struct RecentMinutes(Mutex<VecDeque<(i64, i64)>>);

impl RecentMinutes {
    const fn new() -> Self {
        Self(Mutex::new(VecDeque::new()))
    }

    /// One more in the minute of `at`.
    pub fn record(&self, at: OffsetDateTime) {
        let minute = at.unix_timestamp().div_euclid(60);
        let mut minutes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match minutes.back_mut() {
            Some((last, n)) if *last == minute => *n += 1,
            _ => minutes.push_back((minute, 1)),
        }
        while minutes
            .front()
            .is_some_and(|(first, _)| *first <= minute - 60)
        {
            minutes.pop_front();
        }
    }

    /// The count of the minute starting at `minute_start` (0 when none).
    pub fn of_minute(&self, minute_start: OffsetDateTime) -> i64 {
        let minute = minute_start.unix_timestamp().div_euclid(60);
        let minutes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        minutes
            .iter()
            .find(|(m, _)| *m == minute)
            .map_or(0, |(_, n)| *n)
    }
}

/// One result of the charge transaction (the delivery log's outcome).
pub fn callback_result(result: &'static str) {
    counter!(CALLBACK_RESULTS, "result" => result).increment(1);
}

/// One request token issued.
pub fn token_issued() {
    counter!(TOKENS_ISSUED).increment(1);
}

/// One hand-over left to the dispatcher: every hand-over slot was taken.
pub fn hand_over_deferred() {
    counter!(HAND_OVERS_DEFERRED).increment(1);
}

/// One request token taken by a winning pay.
pub fn token_consumed() {
    counter!(TOKENS_CONSUMED).increment(1);
}

/// One call to the platform: its operation, what came of it, and how long it took.
pub fn platform_call(operation: &'static str, result: &'static str, started: Instant) {
    counter!(PLATFORM_CALLS, "operation" => operation, "result" => result).increment(1);
    histogram!(PLATFORM_CALL_SECONDS, "operation" => operation).record(started.elapsed());
}

/// One charge transaction, BEGIN to COMMIT.
pub fn charge_transaction(started: Instant) {
    histogram!(CHARGE_TX_SECONDS).record(started.elapsed());
}

/// Reads the database's numbers into their gauges: orders waiting, open
/// attempts and the oldest one's age, anomalies by kind, refunds by status,
/// the suspense balance by currency.
/// Every known label value is written, 0 when absent, so a series never
/// vanishes when its count drops to zero.
pub async fn refresh_from_database(db: &sqlx::PgPool) -> sqlx::Result<()> {
    let pending =
        sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM orders WHERE status = 'PENDING'"#)
            .fetch_one(db)
            .await?;
    let attempts = sqlx::query!(
        r#"SELECT status AS "status!", count(*) AS "n!",
                  extract(epoch FROM now() - min(created_at))::float8 AS "oldest_secs!"
           FROM payment_attempts
           WHERE status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')
           GROUP BY status"#
    )
    .fetch_all(db)
    .await?;
    let anomalies =
        sqlx::query!(r#"SELECT kind AS "kind!", count(*) AS "n!" FROM anomalies GROUP BY kind"#)
            .fetch_all(db)
            .await?;
    let refunds = sqlx::query!(
        r#"SELECT status AS "status!", count(*) AS "n!" FROM refunds GROUP BY status"#
    )
    .fetch_all(db)
    .await?;
    // A hot account: its balance is read from its entries (the view sums them
    // through the debit and credit indexes), never kept on its row.
    let suspense = sqlx::query!(
        r#"SELECT currency AS "currency!", balance_cents AS "balance!" FROM ledger_balances WHERE kind = 'SUSPENSE'"#
    )
    .fetch_all(db)
    .await?;

    gauge!(ORDERS_PENDING).set(count(pending));
    let mut oldest: f64 = 0.0;
    for status in AttemptStatus::ALL.iter().filter(|s| !s.is_final()) {
        let row = attempts.iter().find(|row| row.status == status.as_str());
        gauge!(ATTEMPTS_OPEN, "status" => status.as_str()).set(row.map_or(0.0, |r| count(r.n)));
        if let Some(row) = row {
            oldest = oldest.max(row.oldest_secs);
        }
    }
    gauge!(OLDEST_OPEN_ATTEMPT_SECONDS).set(oldest);
    for kind in AnomalyKind::ALL {
        let n = anomalies
            .iter()
            .find(|row| row.kind == kind.as_str())
            .map_or(0, |row| row.n);
        counter!(ANOMALIES, "kind" => kind.as_str()).absolute(u64::try_from(n).unwrap_or(0));
    }
    for status in RefundStatus::ALL {
        let n = refunds
            .iter()
            .find(|row| row.status == status.as_str())
            .map_or(0, |row| row.n);
        gauge!(REFUNDS, "status" => status.as_str()).set(count(n));
    }
    for row in suspense {
        gauge!(SUSPENSE_MINOR_UNITS, "currency" => row.currency).set(count(row.balance));
    }
    Ok(())
}

#[allow(clippy::cast_precision_loss)] // counts of rows, far below 2^53
fn count(n: i64) -> f64 {
    n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_minutes_keep_the_last_hour_per_minute() {
        let recent = RecentMinutes::new();
        let start = OffsetDateTime::from_unix_timestamp(1_800_000_000) // a whole minute
            .expect("a time");
        recent.record(start);
        recent.record(start + Duration::from_secs(59));
        recent.record(start + Duration::from_secs(60));
        assert_eq!(recent.of_minute(start), 2);
        assert_eq!(recent.of_minute(start + Duration::from_secs(60)), 1);
        // An hour later the first minute is forgotten.
        recent.record(start + Duration::from_secs(3600));
        assert_eq!(recent.of_minute(start), 0);
        assert_eq!(recent.of_minute(start + Duration::from_secs(3600)), 1);
    }
}
