//! Applying a payment result callback, exactly once.
//!
//! Every callback starts with one statement (`sql/callback/charge_in_one.sql`,
//! [`callbacks::first_statement`]): data-modifying CTEs that
//! - find the callback id; a duplicate is logged and answered by this statement
//!   alone, a reused id with another body goes on to the conflict path;
//! - otherwise, for the common case only (a new `payment.succeeded` naming the
//!   attempt of a PENDING order, same amount and currency, the hold in place),
//!   lock order and account, claim the id, write the CHARGE ledger row, mark the
//!   order PAID, for a wallet payment charge the balance and capture the hold,
//!   settle the attempt and log the delivery, all or nothing (`checkout_assert` fails the statement if
//!   a write that must follow the ledger row did not happen).
//!
//! Anything else writes nothing there and goes to the general transaction,
//! where the pure [`decide`] rules on the locked order:
//!
//! ```text
//! BEGIN
//!   SELECT order JOIN account ... FOR UPDATE        -- one delivery per order at a time
//!   (amount/currency check)                         -- mismatch: anomaly, 422
//!   INSERT payment_callbacks ON CONFLICT DO NOTHING -- claim the callback id
//!   INSERT payment_ledger (CHARGE) ON CONFLICT DO NOTHING
//!   UPDATE orders SET status='PAID' WHERE order_no=$1 AND status='PENDING'
//!   UPDATE accounts SET balance=balance-$2, held=held-$3 WHERE ...  -- wallet only: charge, capture the hold
//!   UPDATE payment_attempts SET status='SUCCEEDED' WHERE order_no=$1 AND status is open
//!   INSERT callback_deliveries
//! COMMIT                                             -- only then answer 200
//! ```
//! The one statement charges only where [`decide`] says `Charge`
//! (`tests/api/one_statement.rs` feeds both paths the same cases and compares
//! every row they write). Either way a crash leaves all of ledger row, status
//! change and deduction, or none of them; the platform's retry then finds
//! either "duplicate" or a clean slate.

use crate::callback::{Applied, VerifiedCallback, delivery, log_delivery};
use crate::db::accounts;
use crate::db::anomalies;
use crate::db::attempts;
use crate::db::books;
use crate::db::callbacks::{self, FirstLook, NewCallback};
use crate::db::ledger::{self, NewCharge};
use crate::db::orders::{self, LockedOrder};
use crate::db::warm::WarmConnections;
use crate::duplicates::SeenCallbacks;
use crate::error::ApiError;
use crate::infra::faults;
use api_types::api::{CallbackAck, CallbackType};
use api_types::{AnomalyKind, AttemptStatus, CallbackOutcome};
use checkout_rules::charge::{Decision, decide};
use serde_json::json;
use sqlx::{PgPool, Postgres, Transaction};

/// `refund.succeeded` / `refund.failed`: applied by [`crate::refund`].
const fn is_refund_event(kind: CallbackType) -> bool {
    matches!(
        kind,
        CallbackType::RefundSucceeded | CallbackType::RefundFailed
    )
}

/// Applies one verified callback in one transaction and says how to answer.
#[tracing::instrument(
    name = "charge.apply_callback",
    skip(db, warm, seen, callback),
    fields(callback_id = %callback.callback_id, order_no = %callback.event.data.order_no,
           event = callback.event.kind.as_str(),
           platform_payment_id = %callback.event.data.payment_id,
           payment_id = tracing::field::Empty, outcome = tracing::field::Empty)
)]
pub async fn apply_callback(
    db: &PgPool,
    warm: &WarmConnections,
    seen: &SeenCallbacks,
    callback: &VerifiedCallback,
) -> Result<CallbackAck, ApiError> {
    // The checkout's payment id, when the platform echoes it back; `outcome` is
    // recorded on the span once known, so the lines that report it carry it.
    if let Some(payment_id) = callback.event.data.merchant_reference.as_deref() {
        tracing::Span::current().record("payment_id", payment_id);
    }
    faults::crash_point("callback.before_tx");
    if let Some(known) = seen.get(&callback.callback_id)
        && known.body_sha256 == callback.body_sha256
    {
        // Processed before, by this instance's knowledge (committed): log the
        // delivery with whatever other duplicates are waiting, then answer.
        seen.log(delivery(callback, CallbackOutcome::Duplicate, 200))
            .await?;
        return Ok(duplicate_answer(known.outcome));
    }
    let started = std::time::Instant::now();
    match first_statement(warm, callback).await? {
        FirstLook::Charged => Ok(applied(
            Some(seen),
            callback,
            CallbackOutcome::Charged,
            started,
        )),
        FirstLook::Seen(processed) => answer_seen(db, Some(seen), callback, processed).await,
        FirstLook::Undecided => apply_in_new_tx(db, Some(seen), callback).await,
    }
}

/// The 200 for a callback applied and committed with `outcome` (the
/// transaction having started at `started`); `seen`, when given, remembers it.
fn applied(
    seen: Option<&SeenCallbacks>,
    callback: &VerifiedCallback,
    outcome: CallbackOutcome,
    started: std::time::Instant,
) -> CallbackAck {
    if let Some(seen) = seen {
        seen.remember(&callback.callback_id, &callback.body_sha256, outcome);
    }
    crate::infra::metrics::charge_transaction(started);
    faults::crash_point("callback.after_commit");
    record_outcome(outcome);
    tracing::info!(outcome = outcome.as_str(), "callback applied");
    CallbackAck {
        code: "SUCCESS".into(),
        duplicate: false,
    }
}

/// The 200 for a duplicate (`first`: what the id's first delivery did).
fn duplicate_answer(first: CallbackOutcome) -> CallbackAck {
    record_outcome(CallbackOutcome::Duplicate);
    tracing::info!(first_outcome = %first, "duplicate callback acknowledged, nothing changed");
    CallbackAck {
        code: "SUCCESS".into(),
        duplicate: true,
    }
}

/// The general path alone, as the handler ran it before the one statement: a
/// seen id is answered, anything else goes through `apply_in_tx` and
/// [`decide`]. The handler takes it for every case the first statement leaves
/// alone; `tests/api/one_statement.rs` compares the two.
pub async fn apply_callback_general(
    db: &PgPool,
    callback: &VerifiedCallback,
) -> Result<CallbackAck, ApiError> {
    if let Some(ack) = answer_if_seen(db, None, callback).await? {
        return Ok(ack);
    }
    apply_in_new_tx(db, None, callback).await
}

/// Runs [`callbacks::first_statement`] on a connection from `warm`, which
/// keeps it for the next callback, in autocommit: the statement is its own
/// transaction. Builds with crash points run this same path; at
/// `callback.in_statement` they kill the process while the statement is in
/// flight, so PostgreSQL commits it or not, and the platform's retry must find
/// a duplicate or a clean slate.
async fn first_statement(
    warm: &WarmConnections,
    callback: &VerifiedCallback,
) -> Result<FirstLook, ApiError> {
    if faults::fires("callback.in_statement") {
        let (warm, callback) = (warm.clone(), callback.clone());
        tokio::spawn(async move { in_autocommit(&warm, &callback).await });
        // Long enough for the statement to be sent, too short for its answer, mostly.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        eprintln!("crash point callback.in_statement hit: aborting the process");
        std::process::abort();
    }
    Ok(in_autocommit(warm, callback).await?)
}

/// The first statement on a kept connection, as its own transaction.
async fn in_autocommit(
    warm: &WarmConnections,
    callback: &VerifiedCallback,
) -> sqlx::Result<FirstLook> {
    let incoming = callback.incoming();
    warm.run(async |conn| callbacks::first_statement(conn, &incoming).await)
        .await
}

/// The general transaction for a callback id not seen before; `seen`, when
/// given, remembers the id once it is known processed.
async fn apply_in_new_tx(
    db: &PgPool,
    seen: Option<&SeenCallbacks>,
    callback: &VerifiedCallback,
) -> Result<CallbackAck, ApiError> {
    let started = std::time::Instant::now();
    let mut tx = db.begin().await?;
    match apply_in_tx(&mut tx, callback).await? {
        Applied::Done(outcome) => {
            faults::crash_point("callback.in_tx");
            tx.commit().await?;
            Ok(applied(seen, callback, outcome, started))
        }
        Applied::AlreadyClaimed => {
            // A concurrent delivery of the same id committed between our first look and now.
            tx.rollback().await?;
            answer_if_seen(db, seen, callback)
                .await?
                .ok_or_else(|| ApiError::internal(anyhow::anyhow!("claimed callback vanished")))
        }
        Applied::OrderNotFound => {
            tx.commit().await?;
            record_outcome(CallbackOutcome::OrderNotFound);
            tracing::warn!("callback for an unknown order refused");
            Err(ApiError::OrderNotFound)
        }
        Applied::AmountMismatch(message) => {
            tx.commit().await?;
            record_outcome(CallbackOutcome::AmountMismatch);
            Err(ApiError::AmountMismatch(message))
        }
    }
}

/// The body of the callback transaction, in a transaction the caller opened
/// (a callback's own, or a query worker's that already holds the order's row
/// lock): lock the order and account, check the amount, decide, claim the event
/// id, carry the decision out and log it. Nothing is committed here.
pub(crate) async fn apply_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    callback: &VerifiedCallback,
) -> Result<Applied, ApiError> {
    if is_refund_event(callback.event.kind) {
        return crate::refund::apply_in_tx(tx, callback).await;
    }
    let data = &callback.event.data;
    let Some(order) = orders::lock_with_account(&mut **tx, &data.order_no).await? else {
        log_delivery(tx, callback, CallbackOutcome::OrderNotFound, 404).await?;
        return Ok(Applied::OrderNotFound);
    };

    if order.amount_cents != data.amount_cents || order.currency != data.currency {
        return refuse_amount_mismatch(tx, callback, &order).await;
    }

    let reference = order.reference(&data.payment_id, data.merchant_reference.as_deref());
    let decision = decide(
        callback.event.kind,
        order.status,
        reference,
        order.funds(),
        order.amount_cents,
    );

    let claimed = callbacks::insert(
        &mut **tx,
        NewCallback {
            callback_id: &callback.callback_id,
            body_sha256: &callback.body_sha256,
            event_type: callback.event.kind,
            order_no: &order.order_no,
            payment_id: data.payment_id.as_str(),
            outcome: decision.outcome(),
        },
    )
    .await?;
    if !claimed {
        return Ok(Applied::AlreadyClaimed);
    }

    execute(tx, callback, &order, decision).await?;
    log_delivery(tx, callback, decision.outcome(), 200).await?;
    Ok(Applied::Done(decision.outcome()))
}

async fn execute(
    tx: &mut Transaction<'_, Postgres>,
    callback: &VerifiedCallback,
    order: &LockedOrder,
    decision: Decision,
) -> Result<(), ApiError> {
    let broken =
        |what: &str| ApiError::internal(anyhow::anyhow!("invariant broken under lock: {what}"));
    // What the decision puts in front of a person, with the facts behind it.
    let flagged = match decision {
        Decision::Charge => {
            let inserted = ledger::insert_charge(
                &mut **tx,
                NewCharge {
                    callback_id: &callback.callback_id,
                    order_no: &order.order_no,
                    account_id: order.account_id,
                    amount_cents: order.amount_cents,
                    currency: order.currency,
                    payment_id: callback.event.data.payment_id.as_str(),
                },
            )
            .await?;
            if !inserted {
                return Err(broken("order already has a CHARGE"));
            }
            // The same movement in the double-entry books: from the wallet
            // (posting its hold) or from the platform's clearing account, to the merchant.
            let payer = if order.paid_by_wallet() {
                books::Payer::Wallet {
                    account_id: order.account_id,
                    hold_of: order.attempt_payment_id.filter(|_| order.hold_cents > 0),
                }
            } else {
                books::Payer::Platform
            };
            books::charge(
                tx,
                &callback.callback_id,
                &order.order_no,
                order.amount_cents,
                order.currency,
                payer,
            )
            .await?;
            if !orders::mark_paid(&mut **tx, &order.order_no).await? {
                return Err(broken("order left PENDING"));
            }
            // The wallet pays what it held; a platform payment took the
            // shopper's own money, and no wallet changes.
            if order.paid_by_wallet()
                && !accounts::deduct(
                    &mut **tx,
                    order.account_id,
                    order.amount_cents,
                    order.hold_cents,
                )
                .await?
            {
                return Err(broken("balance dropped"));
            }
            attempts::settle(
                &mut **tx,
                &order.order_no,
                AttemptStatus::Succeeded,
                Some(&callback.event.data.payment_id),
            )
            .await?;
            None
        }
        Decision::FailOrder { reason, anomaly } => {
            if !orders::mark_failed(&mut **tx, &order.order_no, reason).await? {
                return Err(broken("order left PENDING"));
            }
            // The wallet's hold, if the order has one (a platform payment holds nothing).
            if let Some(payment_id) = order.attempt_payment_id.filter(|_| order.hold_cents > 0)
                && !accounts::release(tx, order.account_id, payment_id, order.hold_cents).await?
            {
                return Err(broken("hold missing"));
            }
            attempts::settle(
                &mut **tx,
                &order.order_no,
                AttemptStatus::Failed,
                Some(&callback.event.data.payment_id),
            )
            .await?;
            anomaly.map(|kind| {
                let details = json!({
                    "balance_cents": order.balance_cents,
                    "held_cents": order.held_cents,
                    "amount_cents": order.amount_cents,
                    "payment_id": callback.event.data.payment_id,
                    "note": "the platform reports the payment as taken, but the balance is too low to book it",
                });
                (kind, details)
            })
        }
        Decision::Ignore { anomaly } => anomaly.map(|kind| {
            let details = json!({
                "order_status": order.status,
                "event": callback.event.kind.as_str(),
                "payment_id": callback.event.data.payment_id,
                "merchant_reference": callback.event.data.merchant_reference,
                "attempt_payment_id": order.attempt_payment_id,
                "attempt_platform_payment_id": order.attempt_platform_payment_id,
                "note": kind_note(kind),
            });
            (kind, details)
        }),
    };
    if let Some((kind, details)) = flagged {
        anomalies::record(
            &mut **tx,
            &callback.callback_id,
            &order.order_no,
            kind,
            details,
        )
        .await?;
    }
    if let Some(cause) = decision.unbooked_success(callback.event.kind) {
        crate::refund::start_automatic(tx, callback, order, cause).await?;
    }
    Ok(())
}

/// A callback id we processed before: the same body is a duplicate (200,
/// nothing changes; the one statement that found it also logged the delivery);
/// another body is a conflict (409, flagged for review). `None`: never seen.
async fn answer_if_seen(
    db: &PgPool,
    remember: Option<&SeenCallbacks>,
    callback: &VerifiedCallback,
) -> Result<Option<CallbackAck>, ApiError> {
    let Some(seen) = callbacks::find_and_log_duplicate(
        db,
        &callback.callback_id,
        &callback.event.data.order_no,
        callback.event.kind,
        &callback.body_sha256,
    )
    .await?
    else {
        return Ok(None);
    };
    answer_seen(db, remember, callback, seen).await.map(Some)
}

/// The answer to a callback id processed before (`seen`): a duplicate (its
/// delivery already logged by the statement that found it) or a conflict.
async fn answer_seen(
    db: &PgPool,
    remember: Option<&SeenCallbacks>,
    callback: &VerifiedCallback,
    seen: callbacks::ProcessedCallback,
) -> Result<CallbackAck, ApiError> {
    if let Some(cache) = remember {
        cache.remember(&callback.callback_id, &seen.body_sha256, seen.outcome);
    }
    if seen.body_sha256 == callback.body_sha256 {
        return Ok(duplicate_answer(seen.outcome));
    }
    let details = json!({
        "first_body_sha256": seen.body_sha256,
        "this_body_sha256": callback.body_sha256,
        "first_outcome": seen.outcome,
    });
    let mut tx = db.begin().await?;
    anomalies::record(
        &mut *tx,
        &callback.callback_id,
        &callback.event.data.order_no,
        AnomalyKind::CallbackConflict,
        details,
    )
    .await?;
    log_delivery(&mut tx, callback, CallbackOutcome::CallbackConflict, 409).await?;
    tx.commit().await?;
    record_outcome(CallbackOutcome::CallbackConflict);
    tracing::warn!("callback id used again with another body: refused, anomaly raised");
    Err(ApiError::CallbackConflict)
}

/// Records a callback's outcome on the current ([`apply_callback`]) span, so
/// every line logged after it (and the one reporting it) names it.
fn record_outcome(outcome: CallbackOutcome) {
    tracing::Span::current().record("outcome", outcome.as_str());
    crate::infra::metrics::callback_result(outcome.as_str());
}

async fn refuse_amount_mismatch(
    tx: &mut Transaction<'_, Postgres>,
    callback: &VerifiedCallback,
    order: &LockedOrder,
) -> Result<Applied, ApiError> {
    let data = &callback.event.data;
    let details = json!({
        "order_amount_cents": order.amount_cents,
        "order_currency": order.currency,
        "callback_amount_cents": data.amount_cents,
        "callback_currency": data.currency.as_str(),
    });
    anomalies::record(
        &mut **tx,
        &callback.callback_id,
        &order.order_no,
        AnomalyKind::AmountMismatch,
        details,
    )
    .await?;
    log_delivery(tx, callback, CallbackOutcome::AmountMismatch, 422).await?;
    Ok(Applied::AmountMismatch(format!(
        "callback reports {} {}, the order is {} {}; nothing was charged",
        data.amount_cents, data.currency, order.amount_cents, order.currency
    )))
}

/// What a person reading an anomaly raised by an ignored result should know.
fn kind_note(kind: AnomalyKind) -> &'static str {
    match kind {
        AnomalyKind::UnsolicitedPayment => {
            "a success for an order we never handed to the platform: nothing was charged"
        }
        AnomalyKind::PaymentReferenceMismatch => {
            "a success naming another payment than the order's attempt: nothing was charged"
        }
        AnomalyKind::SecondSuccessForPaidOrder => {
            "a second payment succeeded for an order already paid: the platform may hold money twice"
        }
        AnomalyKind::SuccessAfterFailed => {
            "a success for an order that had failed: the platform may hold money we did not book"
        }
        AnomalyKind::LateSuccess => {
            "a success for an order closed unpaid: the platform may hold money we did not book"
        }
        AnomalyKind::FailureAfterPaid => "a failure for an order already charged",
        _ => "",
    }
}
