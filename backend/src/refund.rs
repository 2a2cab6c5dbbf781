//! Refunds, exactly once.
//!
//! ```text
//! POST .../orders/{order_no}/refunds  (merchant or operator, Idempotency-Key)
//!   BEGIN; advisory lock on the key; replay?                 -- idempotency.rs
//!   SELECT order FOR UPDATE: PAID?                          -- else 409 ORDER_NOT_REFUNDABLE
//!   reserved + amount <= charge?                            -- else 422 REFUND_EXCEEDS_CHARGE
//!   INSERT refunds (PENDING); reserved += amount; store the answer; COMMIT
//! hand over (after commit; again by the dispatcher until accepted), the refund
//!   number as the platform's Idempotency-Key
//! refund.succeeded / refund.failed callback (charge::apply_callback routes it here)
//!   one transaction: lock order + account, lock the refund, claim the callback id,
//!   SUCCEEDED: REFUND ledger row (one per refund number), refunded += amount
//!              (REFUNDED at the full charge), balance += amount
//!   FAILED:    reserved -= amount (free for another refund)
//! ```
//! The order's row lock serialises every refund decision of one order, and the
//! database's CHECKs keep `refunded <= reserved <= charge` besides.

use crate::callback::{Applied, VerifiedCallback, log_delivery};
use crate::db::callbacks::{self, NewCallback};
use crate::db::orders::LockedOrder;
use crate::db::refunds::{self, NewRefund, RefundRow};
use crate::db::{anomalies, orders};
use crate::error::ApiError;
use crate::infra::faults;
use crate::platform::{Platform, RefundHandOverError};
use api_types::api::CreateRefund;
use api_types::{AnomalyKind, CallbackOutcome, OrderStatus, RefundRequester, RefundStatus};
use checkout_rules::refund::{RefundDecision, decide_refund};
use serde_json::json;
use sqlx::{PgPool, Postgres, Transaction};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Longest reason.
pub const MAX_REASON_CHARS: usize = 500;

/// Checks a refund request's body before anything is looked up.
pub fn validate(body: &CreateRefund) -> Result<(), ApiError> {
    if body.amount_cents <= 0 {
        return Err(ApiError::BadRequest(
            "amount_cents must be a positive integer".into(),
        ));
    }
    let reason = body.reason.trim();
    let chars = reason.chars().count();
    if chars == 0 || chars > MAX_REASON_CHARS || reason.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(format!(
            "reason must be 1 to {MAX_REASON_CHARS} characters, none of them control characters"
        )));
    }
    Ok(())
}

/// In the caller's transaction (an idempotency key's): reserves the amount on
/// the order and inserts the PENDING refund asked for by the merchant or an operator.
pub async fn create_in_tx(
    tx: &mut Transaction<'static, Postgres>,
    order_no: &str,
    body: &CreateRefund,
    requested_by: RefundRequester,
) -> Result<RefundRow, ApiError> {
    let order = orders::lock_with_account(&mut **tx, order_no)
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    if order.status != OrderStatus::Paid {
        return Err(ApiError::OrderNotRefundable(format!(
            "order {order_no} is {}: only a PAID order can be refunded",
            order.status
        )));
    }
    let charged = crate::db::ledger::charge_of(&mut **tx, order_no)
        .await?
        .ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("PAID order {order_no} has no CHARGE"))
        })?;
    // What is left to refund, never a sum: reserved <= amount by constraint,
    // so this cannot overflow, whatever amount was asked for.
    let free = order.amount_cents - order.refund_reserved_cents;
    let exceeds = || {
        ApiError::RefundExceedsCharge(format!(
            "order {order_no} was charged {}; refunds pending or done take {}, so at most {free} can still be refunded",
            order.amount_cents, order.refund_reserved_cents
        ))
    };
    if body.amount_cents > free {
        return Err(exceeds());
    }
    if !refunds::reserve(&mut **tx, order_no, body.amount_cents).await? {
        return Err(exceeds());
    }
    let refund_no = refunds::new_refund_no();
    let refund = refunds::insert(
        &mut **tx,
        NewRefund {
            refund_no: &refund_no,
            order_no,
            amount_cents: body.amount_cents,
            currency: order.currency,
            reason: body.reason.trim(),
            platform_payment_id: &charged,
            requested_by,
            cause_callback_id: None,
        },
    )
    .await?;
    tracing::info!(%refund_no, order_no, amount_cents = body.amount_cents, requested_by = requested_by.as_str(), "refund requested");
    Ok(refund)
}

/// In the callback's transaction, which holds the order's row lock: a success
/// that could not be booked (`cause` says why) starts a full refund of that
/// platform payment, once per platform payment however often the success is
/// delivered or queried. Never of a payment that may still be charged: one a
/// CHARGE names, or the attempt's own platform payment of a PENDING order.
/// Nothing is reserved on the order or credited to a wallet: the money never
/// became the merchant's. The books hold it in suspense (money we hold that is
/// not ours) until the refund gives it back. The dispatcher hands it over after the commit.
pub(crate) async fn start_automatic(
    tx: &mut Transaction<'_, Postgres>,
    callback: &VerifiedCallback,
    order: &LockedOrder,
    cause: AnomalyKind,
) -> Result<(), ApiError> {
    let data = &callback.event.data;
    if order.status == OrderStatus::Pending
        && order.attempt_platform_payment_id.as_ref() == Some(&data.payment_id)
    {
        // The order's own payment under a wrong reference: it may still be
        // charged, so it is not given back; the anomaly asks a person to look.
        tracing::warn!(platform_payment_id = %data.payment_id, "a success naming the order's own payment under another reference: not refunded automatically");
        return Ok(());
    }
    let reason = format!(
        "automatic: the platform took {} {} for this order that could not be booked ({cause}); \
         it is given back in full",
        data.amount_cents, data.currency
    );
    let started = refunds::insert_automatic(
        &mut **tx,
        NewRefund {
            refund_no: &refunds::new_refund_no(),
            order_no: &order.order_no,
            amount_cents: data.amount_cents,
            currency: data.currency,
            reason: &reason,
            platform_payment_id: data.payment_id.as_str(),
            requested_by: RefundRequester::Automatic,
            cause_callback_id: Some(&callback.callback_id),
        },
    )
    .await?;
    match started {
        Some(refund) => {
            crate::db::books::suspense(
                tx,
                crate::db::books::Suspense::Unbooked,
                &refund.refund_no,
                &order.order_no,
                refund.amount_cents,
                refund.currency,
            )
            .await?;
            tracing::warn!(
                refund_no = %refund.refund_no, platform_payment_id = %data.payment_id, cause = cause.as_str(),
                "automatic refund started for a payment that could not be booked; the money is in suspense"
            );
        }
        None => tracing::info!(
            platform_payment_id = %data.payment_id,
            "this unbooked payment already has its automatic refund"
        ),
    }
    Ok(())
}

/// Hands a committed refund to the platform; records its id for it once
/// accepted. A refusal (the platform will never make it) fails the refund
/// for good and puts it in front of a person; anything else is left to the
/// dispatcher's next round.
pub async fn dispatch(db: &PgPool, platform: &Platform, refund: &RefundRow) -> anyhow::Result<()> {
    match platform.refund(refund).await {
        Ok(accepted) => {
            refunds::mark_submitted(db, &refund.refund_no, &accepted.refund_id).await?;
            tracing::info!(refund_no = %refund.refund_no, platform_refund_id = %accepted.refund_id, "refund handed to the platform");
            Ok(())
        }
        Err(RefundHandOverError::Refused(why)) => refuse(db, refund, &why).await,
        Err(RefundHandOverError::Unknown(err)) => Err(err),
    }
}

/// Hands `refund` over in a task of its own when one of the
/// [`crate::platform::HAND_OVERS_IN_FLIGHT_MAX`] hand-over slots (shared with
/// the payments') is free. Returns false, having started nothing, when every
/// slot is taken: the refund is committed and [`run_dispatcher`] hands it over.
pub fn spawn_dispatch(db: &PgPool, platform: &Platform, refund: RefundRow) -> bool {
    let Some(slot) = platform.hand_over_slot() else {
        return false;
    };
    let (db, platform) = (db.clone(), platform.clone());
    tokio::spawn(async move {
        let _slot = slot;
        if let Err(err) = dispatch(&db, &platform, &refund).await {
            tracing::warn!(refund_no = %refund.refund_no, error = %format!("{err:#}"), "refund hand-over failed; the dispatcher retries");
        }
    });
    true
}

/// The platform refused `refund` outright: FAILED with its reason, the amount
/// free again, and a REFUND_FAILED anomaly (an automatic refund leaves money
/// with the platform that a person must give back).
async fn refuse(db: &PgPool, refund: &RefundRow, why: &str) -> anyhow::Result<()> {
    let mut tx = db.begin().await?;
    // The order's row first: the lock every refund decision takes.
    orders::lock_with_account(&mut *tx, &refund.order_no).await?;
    let Some(locked) = refunds::lock(&mut *tx, &refund.refund_no, &refund.order_no).await? else {
        anyhow::bail!("refund {} vanished", refund.refund_no);
    };
    if locked.status != RefundStatus::Pending {
        // A result was booked meanwhile (a callback or a query): it stands.
        return Ok(());
    }
    refunds::book_failure(&mut tx, &locked, None, Some(why)).await?;
    anomalies::record(
        &mut *tx,
        &format!("refund:{}:refused", locked.refund_no),
        &locked.order_no,
        AnomalyKind::RefundFailed,
        json!({"refund_no": locked.refund_no, "requested_by": locked.requested_by,
               "platform_payment_id": locked.platform_payment_id, "amount_cents": locked.amount_cents,
               "platform_answer": why,
               "note": "the platform refused the refund: the money was not given back"}),
    )
    .await?;
    tx.commit().await?;
    tracing::warn!(refund_no = %locked.refund_no, platform_answer = why, "the platform refused the refund; it failed");
    Ok(())
}

/// How often the dispatcher looks for refunds to hand over: automatic refunds
/// wait for it, so it looks often; a refund whose hand-over failed backs off.
const DISPATCH_TICK: Duration = Duration::from_millis(500);
/// The first wait after a failed hand-over; it doubles up to [`DISPATCH_MAX_BACKOFF`].
const DISPATCH_FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two hand-overs of one refund.
const DISPATCH_MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Until `stop` drains: hands over the automatic refunds, and again the refunds a crash
/// or an outage left unsubmitted. A refund whose hand-over failed waits 1 s,
/// then twice as long each time, up to a minute (kept in memory: a restart
/// tries every one at once, which the refund number makes harmless). Each
/// hand-over holds one of the hand-over slots; with none free (a stalled
/// platform), the rest wait for the next tick.
pub async fn run_dispatcher(
    db: PgPool,
    platform: Platform,
    stop: crate::infra::shutdown::Shutdown,
) {
    let mut tick = tokio::time::interval(DISPATCH_TICK);
    let mut backoff: HashMap<String, (Instant, Duration)> = HashMap::new();
    while stop.tick(&mut tick).await {
        let stuck = match refunds::list_unsubmitted(&db, 5.0, 100).await {
            Ok(rows) => rows,
            Err(err) => {
                tracing::warn!(error = %err, "refund dispatcher could not list unsubmitted refunds");
                continue;
            }
        };
        backoff.retain(|refund_no, _| stuck.iter().any(|r| &r.refund_no == refund_no));
        for refund in stuck {
            if backoff
                .get(&refund.refund_no)
                .is_some_and(|(due, _)| Instant::now() < *due)
            {
                continue;
            }
            let Some(_slot) = platform.hand_over_slot() else {
                tracing::info!(
                    in_flight = crate::platform::HAND_OVERS_IN_FLIGHT_MAX,
                    "hand-overs in flight at the limit; the refunds wait for the next round"
                );
                break;
            };
            match dispatch(&db, &platform, &refund).await {
                Ok(()) => {
                    backoff.remove(&refund.refund_no);
                }
                Err(err) => {
                    let wait = backoff
                        .get(&refund.refund_no)
                        .map_or(DISPATCH_FIRST_BACKOFF, |(_, last)| {
                            (*last * 2).min(DISPATCH_MAX_BACKOFF)
                        });
                    backoff.insert(refund.refund_no.clone(), (Instant::now() + wait, wait));
                    tracing::warn!(refund_no = %refund.refund_no, error = %format!("{err:#}"), retry_in = ?wait, "refund hand-over failed; will retry");
                }
            }
        }
    }
}

/// The refund branch of the callback transaction, in the caller's
/// transaction: lock order and account, lock the refund, check it, claim the
/// callback id, carry the decision out and log the delivery. Not committed here.
pub(crate) async fn apply_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    callback: &VerifiedCallback,
) -> Result<Applied, ApiError> {
    let data = &callback.event.data;
    let Some(order) = orders::lock_with_account(&mut **tx, &data.order_no).await? else {
        log_delivery(tx, callback, CallbackOutcome::OrderNotFound, 404).await?;
        return Ok(Applied::OrderNotFound);
    };
    let refund_no = data.refund_no.as_deref().unwrap_or_default();
    let Some(refund) = refunds::lock(&mut **tx, refund_no, &order.order_no).await? else {
        // Signed by the platform, about no refund of this order: nothing to book.
        let outcome = CallbackOutcome::IgnoredRefundSettled;
        if !claim(tx, callback, outcome).await? {
            return Ok(Applied::AlreadyClaimed);
        }
        anomalies::record(
            &mut **tx,
            &callback.callback_id,
            &order.order_no,
            AnomalyKind::RefundResultConflict,
            json!({"refund_no": data.refund_no, "event": callback.event.kind.as_str(),
                   "note": "a refund result naming no refund of this order: nothing was booked"}),
        )
        .await?;
        log_delivery(tx, callback, outcome, 200).await?;
        return Ok(Applied::Done(outcome));
    };
    if refund.amount_cents != data.amount_cents || refund.currency != data.currency {
        anomalies::record(
            &mut **tx,
            &callback.callback_id,
            &order.order_no,
            AnomalyKind::AmountMismatch,
            json!({"refund_no": refund.refund_no, "refund_amount_cents": refund.amount_cents,
                   "refund_currency": refund.currency, "callback_amount_cents": data.amount_cents,
                   "callback_currency": data.currency}),
        )
        .await?;
        log_delivery(tx, callback, CallbackOutcome::AmountMismatch, 422).await?;
        return Ok(Applied::AmountMismatch(format!(
            "refund result reports {} {}, refund {} is {} {}; nothing was booked",
            data.amount_cents,
            data.currency,
            refund.refund_no,
            refund.amount_cents,
            refund.currency
        )));
    }
    let decision = decide_refund(callback.event.kind, refund.status, callback.origin);
    if !claim(tx, callback, decision.outcome()).await? {
        return Ok(Applied::AlreadyClaimed);
    }
    let platform_refund_id = data.refund_id.as_deref();
    match decision {
        RefundDecision::Book => {
            if !refunds::book_success(
                tx,
                &refund,
                order.account_id,
                order.paid_by_wallet(),
                &callback.callback_id,
                platform_refund_id,
            )
            .await?
            {
                return Err(ApiError::internal(anyhow::anyhow!(
                    "invariant broken under lock: refund {} already has a REFUND row",
                    refund.refund_no
                )));
            }
        }
        RefundDecision::Release => {
            refunds::book_failure(tx, &refund, platform_refund_id, None).await?;
            if refund.requested_by == RefundRequester::Automatic {
                anomalies::record(
                    &mut **tx,
                    &callback.callback_id,
                    &order.order_no,
                    AnomalyKind::RefundFailed,
                    json!({"refund_no": refund.refund_no, "requested_by": refund.requested_by,
                           "platform_payment_id": refund.platform_payment_id,
                           "amount_cents": refund.amount_cents,
                           "note": "the automatic refund of a payment we could not book failed: \
                                    the platform still holds that money"}),
                )
                .await?;
            }
        }
        RefundDecision::ConfirmFailure => {
            refunds::query_now(&mut **tx, &refund.refund_no).await?;
            tracing::info!(refund_no = %refund.refund_no, "refund failure notified; asking the platform before freeing its amount");
        }
        RefundDecision::Ignore { anomaly } => {
            if let Some(kind) = anomaly {
                anomalies::record(
                    &mut **tx,
                    &callback.callback_id,
                    &order.order_no,
                    kind,
                    json!({"refund_no": refund.refund_no, "refund_status": refund.status,
                           "event": callback.event.kind.as_str(),
                           "note": "the platform contradicts the refund result it gave before"}),
                )
                .await?;
            }
        }
    }
    log_delivery(tx, callback, decision.outcome(), 200).await?;
    faults::crash_point("refund.in_tx");
    tracing::info!(refund_no = %refund.refund_no, outcome = decision.outcome().as_str(), "refund result applied");
    Ok(Applied::Done(decision.outcome()))
}

async fn claim(
    tx: &mut Transaction<'_, Postgres>,
    callback: &VerifiedCallback,
    outcome: CallbackOutcome,
) -> Result<bool, ApiError> {
    let data = &callback.event.data;
    Ok(callbacks::insert(
        &mut **tx,
        NewCallback {
            callback_id: &callback.callback_id,
            body_sha256: &callback.body_sha256,
            event_type: callback.event.kind,
            order_no: &data.order_no,
            payment_id: data.payment_id.as_str(),
            outcome,
        },
    )
    .await?)
}
