//! The active query: asking the platform about payments whose result did not
//! come by itself.
//!
//! An open attempt of a PENDING order with no result `QUERY_AFTER_SECS` after
//! its hand-over is asked about ([`run_queries`]), then again every
//! `QUERY_EVERY_SECS` (the schedule is `checkout_rules::query_schedule`);
//! after `QUERY_RETRIES` more answers without a result a `STUCK_PAYMENT`
//! anomaly puts it in front of a person (the queries go on). A SUCCEEDED or
//! FAILED answer is applied by the callback's own transaction body
//! (`charge::apply_in_tx`) under an event id of its own
//! (`query:<payment id>:<event>`), so a query's answer and the platform's
//! callback for the same payment charge once, whatever their order. PENDING
//! refunds are asked about on the same schedule ([`query_refund_one`]) and
//! their answers booked by the refund callback's body under
//! `query:<refund no>:<event>`. The close of expired orders
//! ([`crate::expiry`]) books the answers it gets the same way
//! (`apply_state`).
//!
//! **One runner per order.** Each step claims one order with `SELECT ... FOR
//! UPDATE OF orders SKIP LOCKED` and keeps that row lock, inside one
//! transaction, while it talks to the platform and writes the result. Another
//! instance's worker skips the order; a callback or a pay for it waits for the
//! commit and then sees the result. Nothing of a claim outlives a crash: the
//! transaction rolls back and the next sweep claims the order again.

use crate::callback::{Applied, VerifiedCallback};
use crate::charge;
use crate::db::{anomalies, attempts, orders};
use crate::infra::faults;
use crate::platform::{PaymentRef, Platform, RefundRef};
use api_types::api::{CallbackData, CallbackEvent, CallbackType, EventTimestamp};
use api_types::platform::{PaymentState, PaymentStatus};
use api_types::{AnomalyKind, AttemptStatus, CallbackOutcome, PlatformPaymentId};
use checkout_rules::origin::Origin;
use checkout_rules::query_schedule::QuerySchedule;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::{PgPool, Postgres, Transaction};
use std::time::Duration;

/// How often the query worker looks for due attempts.
const QUERY_TICK: Duration = Duration::from_secs(1);
/// Most orders one tick of a worker settles (the rest wait for the next tick).
pub(crate) const PER_TICK: usize = 200;

/// Until `stop` drains: queries the platform about attempts and refunds that are due.
pub async fn run_queries(
    db: PgPool,
    platform: Platform,
    schedule: QuerySchedule,
    stop: crate::infra::shutdown::Shutdown,
) {
    let mut tick = tokio::time::interval(QUERY_TICK);
    while stop.tick(&mut tick).await {
        drain("query worker", || query_one(&db, &platform, schedule)).await;
        drain("refund query", || {
            query_refund_one(&db, &platform, schedule)
        })
        .await;
    }
}

/// Runs `step` (one claimed row each) until nothing is left, at most
/// `PER_TICK` times; a failure ends the round (the next sweep retries).
async fn drain<F, Fut>(what: &str, mut step: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    for _ in 0..PER_TICK {
        match step().await {
            Ok(true) => {}
            Ok(false) => break,
            Err(err) => {
                tracing::warn!(error = %format!("{err:#}"), "{what} step failed; the next sweep retries");
                break;
            }
        }
    }
}

/// Claims one PENDING refund due for a query, asks the platform, and books
/// its result through the refund callback's transaction body (event id
/// `query:<refund no>:<event>`), or reschedules it. Returns false when nothing
/// was due.
pub async fn query_refund_one(
    db: &PgPool,
    platform: &Platform,
    schedule: QuerySchedule,
) -> anyhow::Result<bool> {
    let mut tx = db.begin().await?;
    let Some(claimed) =
        crate::db::refunds::claim_due_query(&mut tx, schedule.after.as_secs_f64()).await?
    else {
        return Ok(false);
    };
    let span = tracing::info_span!("settlement.query_refund", order_no = %claimed.order_no, refund_no = %claimed.refund_no);
    let _enter = span.enter();
    let answer = platform
        .query_refund(RefundRef {
            order_no: &claimed.order_no,
            refund_no: &claimed.refund_no,
            payment_id: &claimed.platform_payment_id,
        })
        .await;
    let decided = match &answer {
        Ok(Some(state)) if state.status != api_types::platform::RefundStatus::Processing => {
            Some(state)
        }
        Ok(Some(_)) => {
            tracing::info!("refund query: still processing");
            None
        }
        Ok(None) => {
            tracing::info!("refund query: the platform does not have the refund (yet)");
            None
        }
        Err(err) => {
            tracing::warn!(error = %err, "refund query: no usable answer; asking again later");
            None
        }
    };
    if let Some(state) = decided {
        tracing::info!(status = ?state.status, "refund query: the platform has a result");
        let event = refund_statement(&claimed, state);
        charge::apply_in_tx(&mut tx, &event)
            .await
            .map_err(anyhow::Error::from)?;
    }
    let still_pending = crate::db::refunds::status(&mut *tx, &claimed.refund_no).await?
        == Some(api_types::RefundStatus::Pending);
    if still_pending {
        let queries = crate::db::refunds::record_query(
            &mut *tx,
            &claimed.refund_no,
            schedule.every.as_secs_f64(),
        )
        .await?;
        if schedule.spent_at(queries) {
            anomalies::record(
                &mut *tx,
                &format!("query:{}", claimed.refund_no),
                &claimed.order_no,
                AnomalyKind::StuckPayment,
                json!({
                    "refund_no": claimed.refund_no,
                    "queries": queries,
                    "note": "the platform has no result for this refund after every scheduled query; \
                             the queries go on, and a person should ask the platform",
                }),
            )
            .await?;
        }
    }
    faults::crash_point("query.in_tx");
    tx.commit().await?;
    Ok(true)
}

/// A platform's refund answer as the refund event the callback transaction
/// applies. The refunded payment is named as our refund row has it: the
/// answer's own words for it are not needed to book the refund, and a
/// platform may leave them out.
fn refund_statement(
    claimed: &crate::db::refunds::ClaimedRefund,
    state: &api_types::platform::RefundState,
) -> VerifiedCallback {
    let kind = if state.status == api_types::platform::RefundStatus::Succeeded {
        CallbackType::RefundSucceeded
    } else {
        CallbackType::RefundFailed
    };
    let callback_id = format!("query:{}:{}", claimed.refund_no, kind.as_str());
    let facts = format!(
        "{callback_id}|{}|{}|{}|{}|{}",
        claimed.order_no, state.amount_cents, state.currency, state.payment_id, state.refund_id
    );
    query_event(
        callback_id,
        kind,
        &facts,
        CallbackData {
            order_no: claimed.order_no.clone(),
            amount_cents: state.amount_cents,
            currency: state.currency,
            payment_id: claimed.platform_payment_id.clone(),
            merchant_reference: None,
            refund_no: Some(state.refund_no.clone()),
            refund_id: Some(state.refund_id.clone()),
        },
    )
}

/// Claims one due attempt, asks the platform, and settles or reschedules it.
/// Returns false when nothing was due.
pub async fn query_one(
    db: &PgPool,
    platform: &Platform,
    schedule: QuerySchedule,
) -> anyhow::Result<bool> {
    let mut tx = db.begin().await?;
    let Some(claimed) = attempts::claim_due_query(&mut tx, schedule.after.as_secs_f64()).await?
    else {
        return Ok(false);
    };
    let span = tracing::info_span!("settlement.query", order_no = %claimed.order_no, payment_id = %claimed.payment_id);
    let _enter = span.enter();
    match platform.query(PaymentRef::of(&claimed)).await {
        Ok(Some(state)) if is_decided(state.status) => {
            tracing::info!(status = ?state.status, platform_payment_id = named(&state), "query: the platform has a result");
            if !apply_state(&mut tx, &claimed, &state).await? {
                no_result(&mut tx, &claimed, schedule, None).await?;
            }
        }
        Ok(Some(state)) if state.status == PaymentStatus::Closed => {
            tracing::info!("query: the platform closed the payment; the order is CLOSED");
            close(&mut tx, &claimed).await?;
        }
        Ok(Some(state)) => {
            tracing::info!(
                platform_payment_id = named(&state),
                "query: still processing"
            );
            let learned = still_open_learns(platform, &claimed, &state);
            no_result(&mut tx, &claimed, schedule, learned).await?;
        }
        Ok(None) => {
            tracing::info!(attempt = %claimed.status, "query: the platform does not have the payment (yet)");
            no_result(&mut tx, &claimed, schedule, None).await?;
        }
        Err(err) => {
            tracing::warn!(error = %err, "query: no usable answer; asking again later");
            no_result(&mut tx, &claimed, schedule, None).await?;
        }
    }
    faults::crash_point("query.in_tx");
    tx.commit().await?;
    Ok(true)
}

pub(crate) const fn is_decided(status: PaymentStatus) -> bool {
    matches!(status, PaymentStatus::Succeeded | PaymentStatus::Failed)
}

/// The platform's payment id an answer names, for the log.
fn named(state: &PaymentState) -> &str {
    state
        .payment_id
        .as_ref()
        .map_or("(none yet)", PlatformPaymentId::as_str)
}

/// The platform payment id a still-open answer teaches the attempt, if any.
/// Recording one also marks an attempt whose hand-over answer was lost as
/// handed over (`SUBMITTED`, `attempts::record_query`), so the dispatcher no
/// longer sends it. That is right where the hand-over's answer carries
/// nothing more than the id; where it carries the code the shopper scans
/// (WeChat Pay's `code_url`, Alipay's `qr_code`), only the hand-over sent
/// again brings the code, so an attempt not yet accepted stays as it is
/// (`UNKNOWN`) and is sent again with the same `out_trade_no`. An answer
/// without an id (WeChat Pay's `NOTPAY`, which names no `transaction_id`)
/// teaches nothing.
fn still_open_learns<'a>(
    platform: &Platform,
    claimed: &attempts::Claimed,
    state: &'a PaymentState,
) -> Option<&'a PlatformPaymentId> {
    let accepted = claimed.status == AttemptStatus::Submitted;
    state
        .payment_id
        .as_ref()
        .filter(|_| accepted || !platform.kind().pays_by_qr_code())
}

/// Books a SUCCEEDED or FAILED answer through the callback's transaction body.
/// Returns whether the order is settled; false when the answer could not be
/// booked (it names another payment, differs in amount, or was recorded
/// before without settling): flagged for a person, the order left PENDING.
///
/// The event names the platform payment as the answer does, or as the
/// attempt recorded it. An answer that names none where we know none either
/// ([`unnamed`]) is never booked under a made-up id.
pub(crate) async fn apply_state(
    tx: &mut Transaction<'_, Postgres>,
    claimed: &attempts::Claimed,
    state: &PaymentState,
) -> anyhow::Result<bool> {
    let Some(platform_payment_id) = state
        .payment_id
        .as_ref()
        .or(claimed.platform_payment_id.as_ref())
    else {
        return unnamed(tx, claimed, state).await;
    };
    let event = statement(claimed, state, platform_payment_id);
    match charge::apply_in_tx(tx, &event)
        .await
        .map_err(anyhow::Error::from)?
    {
        Applied::Done(outcome) => {
            tracing::info!(
                outcome = outcome.as_str(),
                event_id = %event.callback_id,
                "platform's answer applied"
            );
            // Whether the answer settled the order (charged or failed it).
            Ok(matches!(
                outcome,
                CallbackOutcome::Charged
                    | CallbackOutcome::OrderFailed
                    | CallbackOutcome::OrderFailedInsufficientFunds
            ))
        }
        Applied::AlreadyClaimed => {
            tracing::warn!(event_id = %event.callback_id, "platform's answer was recorded before without settling the order");
            Ok(false)
        }
        Applied::OrderNotFound => anyhow::bail!("order {} vanished", claimed.order_no),
        Applied::AmountMismatch(message) => {
            tracing::warn!(%message, "platform's answer does not match the order; flagged");
            Ok(false)
        }
    }
}

/// A decided answer that names no platform payment, for an attempt that has
/// none recorded (WeChat Pay names a `transaction_id` only for a paid order,
/// so a failed one it reports, `PAYERROR`, has none). A failure needs no
/// platform id to be booked: the order is FAILED, its hold released and the
/// attempt FAILED with no platform id, under the claim's lock, as the
/// callback transaction fails a PENDING order. A success cannot be booked
/// without the payment it took: it is left to the notification (or a later
/// answer that names it), and the order stays PENDING.
async fn unnamed(
    tx: &mut Transaction<'_, Postgres>,
    claimed: &attempts::Claimed,
    state: &PaymentState,
) -> anyhow::Result<bool> {
    if state.status != PaymentStatus::Failed {
        tracing::warn!(status = ?state.status, "the platform's answer names no payment; not booked, asking again later");
        return Ok(false);
    }
    anyhow::ensure!(
        orders::mark_failed(&mut **tx, &claimed.order_no, "PAYMENT_FAILED").await?,
        "order {} left PENDING under our lock",
        claimed.order_no
    );
    anyhow::ensure!(
        crate::db::accounts::release(
            tx,
            claimed.account_id,
            claimed.payment_id,
            claimed.hold_cents
        )
        .await?,
        "the hold of order {} is missing",
        claimed.order_no
    );
    attempts::settle(&mut **tx, &claimed.order_no, AttemptStatus::Failed, None).await?;
    tracing::info!(
        "the platform reports the payment failed (naming no payment id); the order is FAILED, its hold released"
    );
    Ok(true)
}

/// The platform's answer as the event the callback transaction applies. Its
/// id is stable per payment and result, so the same answer applied twice is a
/// duplicate, and its body digest is computed from the facts (not a clock).
fn statement(
    claimed: &attempts::Claimed,
    state: &PaymentState,
    platform_payment_id: &PlatformPaymentId,
) -> VerifiedCallback {
    let kind = if state.status == PaymentStatus::Succeeded {
        CallbackType::PaymentSucceeded
    } else {
        CallbackType::PaymentFailed
    };
    let callback_id = format!("query:{}:{}", claimed.payment_id, kind.as_str());
    let facts = format!(
        "{callback_id}|{}|{}|{}|{platform_payment_id}",
        claimed.order_no, state.amount_cents, state.currency
    );
    query_event(
        callback_id,
        kind,
        &facts,
        CallbackData {
            order_no: claimed.order_no.clone(),
            amount_cents: state.amount_cents,
            currency: state.currency,
            payment_id: platform_payment_id.clone(),
            merchant_reference: state.merchant_reference.clone(),
            refund_no: None,
            refund_id: None,
        },
    )
}

/// A platform's answer to a query as a verified event: its digest comes from
/// `facts` (stable per answer, never a clock), so the same answer booked
/// twice is a duplicate of itself.
fn query_event(
    callback_id: String,
    kind: CallbackType,
    facts: &str,
    data: CallbackData,
) -> VerifiedCallback {
    VerifiedCallback {
        body_sha256: hex::encode(Sha256::digest(facts.as_bytes())),
        event: CallbackEvent {
            kind,
            timestamp: EventTimestamp::Unix(time::OffsetDateTime::now_utc().unix_timestamp()),
            data,
        },
        callback_id,
        origin: Origin::QueryAnswer,
    }
}

/// A query without a result: counted, the next one scheduled, and the
/// attempt flagged `STUCK_PAYMENT` once the retries are spent.
async fn no_result(
    tx: &mut Transaction<'_, Postgres>,
    claimed: &attempts::Claimed,
    schedule: QuerySchedule,
    platform_payment_id: Option<&PlatformPaymentId>,
) -> anyhow::Result<()> {
    let queries = attempts::record_query(
        &mut **tx,
        claimed.payment_id,
        schedule.every.as_secs_f64(),
        platform_payment_id,
    )
    .await?;
    if schedule.spent_at(queries) {
        anomalies::record(
            &mut **tx,
            &format!("query:{}", claimed.payment_id),
            &claimed.order_no,
            AnomalyKind::StuckPayment,
            json!({
                "payment_id": claimed.payment_id,
                "platform_payment_id": claimed.platform_payment_id.as_ref().or(platform_payment_id),
                "attempt_status": claimed.status,
                "queries": queries,
                "note": "the platform has no result for this payment after every scheduled query; \
                         the queries go on, and a person should ask the platform",
            }),
        )
        .await?;
    }
    Ok(())
}

/// The order becomes CLOSED, its hold (a wallet payment's) released, its attempt CLOSED.
pub(crate) async fn close(
    tx: &mut Transaction<'_, Postgres>,
    claimed: &attempts::Claimed,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        orders::close_with_attempt(
            tx,
            &claimed.order_no,
            claimed.account_id,
            claimed.payment_id,
            claimed.hold_cents
        )
        .await?,
        "order {} left PENDING under our lock",
        claimed.order_no
    );
    Ok(())
}
