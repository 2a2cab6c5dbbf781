//! Money the checkout could not book goes back, exactly once: a second
//! payment for a PAID order, a payment for a CLOSED order, a success after the
//! order failed, a payment we never asked for. Each starts one full refund of
//! that platform payment, however often its success is delivered; the ledger
//! and the shopper's balance never see it. And the refund side of
//! out-of-order results: a notified refund failure frees nothing until the
//! platform confirms it, and a refund's success that arrives before the
//! hand-over's answer is booked once.

use crate::helpers::{
    AutomaticRefund, Payment, TestApp, count, new_callback_id, spawn_app_paying_through,
    spawn_app_without_callbacks, success_body,
};
use api_types::api::Order;
use api_types::platform::CreatePayment;
use api_types::{OrderStatus, RefundStatus};
use futures::future::join_all;
use platform_sim::{Chaos, Redeliver, Simulator};
use reqwest::StatusCode;
use std::time::Duration;
use uuid::Uuid;

/// A platform that repeats itself: five copies of each callback at once, a
/// second success under a new callback id, three redeliveries after the 2xx.
fn stormy() -> Chaos {
    Chaos {
        concurrent_copies: 5,
        second_success: true,
        redeliver_after_success: Some(Redeliver {
            count: 3,
            interval: Duration::from_millis(50),
        }),
        ..Chaos::default()
    }
}

/// A payment for `order` made at the platform behind the checkout's back
/// (another reference than the order's attempt), under the platform's
/// current chaos; returns the platform's payment id.
pub(crate) async fn pay_again_at_the_platform(
    app: &TestApp,
    simulator: &Simulator,
    order: &Order,
) -> String {
    let (payment, _) = simulator
        .create_payment(
            &Uuid::new_v4().to_string(),
            CreatePayment {
                order_no: order.order_no.clone(),
                amount_cents: order.amount_cents,
                currency: order.currency,
                notify_url: app.url("/api/payments/callback"),
                merchant_reference: Some(Uuid::new_v4().to_string()),
            },
        )
        .await
        .expect("the platform takes the payment");
    payment.payment_id
}

/// Waits until the platform's payment has given back `amount` in refunds.
pub(crate) async fn wait_until_given_back(simulator: &Simulator, payment_id: &str, amount: i64) {
    for _ in 0..200 {
        let payment = simulator.payment(payment_id).expect("the platform has it");
        if payment.refunded_cents == amount {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("platform payment {payment_id} was not given back within 20 s");
}

/// Waits until the order has an automatic refund and it settled.
async fn first_automatic_refund(app: &TestApp, order_no: &str) -> AutomaticRefund {
    for _ in 0..200 {
        if let Some(refund) = app.settled_automatic_refunds(order_no).await.first() {
            return refund.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("order {order_no} has no automatic refund after 20 s");
}

/// Automatic refunds of the whole database: one per platform payment.
async fn automatic_refund_count(app: &TestApp) -> i64 {
    count(
        app,
        "SELECT count(*) FROM refunds WHERE requested_by = 'automatic'",
    )
    .await
}

#[tokio::test]
async fn a_second_payment_for_a_paid_order_is_given_back_once_however_often_its_success_arrives() {
    let (app, simulator) =
        spawn_app_paying_through(Chaos::default(), Duration::from_millis(50), |_| {}).await;
    let (account, order) = app.paid_order(10_000, 2_500).await;

    simulator.set_chaos(stormy());
    let second = pay_again_at_the_platform(&app, &simulator, &order).await;
    wait_until_given_back(&simulator, &second, 2_500).await;
    // Let the copies, redeliveries and the second success land.
    tokio::time::sleep(Duration::from_millis(1_000)).await;

    let refunds = app.settled_automatic_refunds(&order.order_no).await;
    assert_eq!(
        refunds,
        [AutomaticRefund {
            platform_payment_id: second.clone(),
            amount_cents: 2_500,
            status: "SUCCEEDED".into(),
            failure_reason: None,
            done: true,
        }]
    );
    assert!(
        count(
            &app,
            "SELECT count(*) FROM callback_deliveries WHERE event_type = 'payment.succeeded'"
        )
        .await
            > 6,
        "the second payment's success arrived many times"
    );
    // The first payment, charged, is not touched; the second never entered the books.
    let paid = app.order(&order.order_no).await;
    assert_eq!(paid.status, OrderStatus::Paid);
    assert_eq!(paid.refunded_cents, 0);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(
        simulator
            .payment(&second)
            .expect("second payment")
            .refunded_cents,
        2_500
    );
    let anomalies = app.anomalies(&order.order_no).await;
    assert!(
        anomalies
            .iter()
            .all(|k| k == "SECOND_SUCCESS_FOR_PAID_ORDER"),
        "{anomalies:?}"
    );
    assert_eq!(automatic_refund_count(&app).await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_payment_taken_for_a_closed_order_is_given_back_once() {
    // The order's own payment stays PROCESSING until the expiry closes it there and here.
    let (app, simulator) = spawn_app_paying_through(
        Chaos {
            hold_processing: Some(Duration::from_secs(3_600)),
            ..Chaos::default()
        },
        Duration::from_millis(50),
        |c| c.order_ttl_secs = 1,
    )
    .await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    assert_eq!(
        app.pay(&order.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );
    let closed = app.wait_until_final(&order.order_no).await;
    assert_eq!(closed.status, OrderStatus::Closed);

    simulator.set_chaos(stormy());
    let late = pay_again_at_the_platform(&app, &simulator, &order).await;
    wait_until_given_back(&simulator, &late, 2_000).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;

    let refunds = app.settled_automatic_refunds(&order.order_no).await;
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(refunds[0].platform_payment_id, late);
    assert_eq!(refunds[0].status, "SUCCEEDED");
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Closed);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 0);
    let anomalies = app.anomalies(&order.order_no).await;
    assert!(
        anomalies.contains(&"LATE_SUCCESS".to_owned()),
        "{anomalies:?}"
    );
    assert_eq!(automatic_refund_count(&app).await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_success_after_a_false_failure_is_given_back_and_the_order_stays_failed() {
    // The platform reports a failure first, then the real success.
    let (app, simulator) = spawn_app_paying_through(
        Chaos {
            reorder: true,
            ..Chaos::default()
        },
        Duration::from_millis(50),
        |_| {},
    )
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;

    let failed = app.pay_until_final(&order.order_no).await;
    assert_eq!(failed.status, OrderStatus::Failed);
    // The success follows the failure's first delivery; its refund follows the success.
    let given_back = first_automatic_refund(&app, &order.order_no).await;
    wait_until_given_back(&simulator, &given_back.platform_payment_id, 2_500).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let refunds = app.settled_automatic_refunds(&order.order_no).await;
    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].status, "SUCCEEDED");
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Failed);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 0);
    assert_eq!(
        app.anomalies(&order.order_no).await,
        ["SUCCESS_AFTER_FAILED"]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_unsolicited_success_delivered_fifty_times_at_once_starts_one_refund_the_platform_refuses()
 {
    // The sandbox never had this payment: it refuses to refund it.
    let app = spawn_app_without_callbacks().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let payment = Payment::unsolicited(&order);
    let body = success_body(&payment);

    let deliveries = (0..50).map(|_| app.post_callback_owned(new_callback_id(), body.clone()));
    let answers = join_all(deliveries).await;

    assert!(answers.iter().all(|status| *status == StatusCode::OK));
    let refunds = app.settled_automatic_refunds(&order.order_no).await;
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(refunds[0].platform_payment_id, payment.platform_payment_id);
    assert_eq!(refunds[0].status, "FAILED");
    let reason = refunds[0].failure_reason.as_deref().unwrap_or_default();
    assert!(reason.contains("PAYMENT_NOT_FOUND"), "{reason}");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM anomalies WHERE kind = 'REFUND_FAILED'"
        )
        .await,
        1,
        "the money the platform may hold is in front of a person once"
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM anomalies WHERE kind = 'UNSOLICITED_PAYMENT'"
        )
        .await,
        50
    );
    let order = app.order(&order.order_no).await;
    assert_eq!(order.status, OrderStatus::Pending);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.count("payment_ledger").await, 0);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_failure_reported_before_its_success_frees_nothing_and_the_success_is_booked_once()
{
    let (app, simulator) =
        spawn_app_paying_through(Chaos::default(), Duration::from_millis(50), |_| {}).await;
    let (account, order) = app.paid_order(10_000, 2_500).await;
    // From now on the platform reports each refund as failed before its real result.
    simulator.set_chaos(Chaos {
        reorder: true,
        ..Chaos::default()
    });

    let refunds = app
        .refund_settled(&order.order_no, 2_500, "all of it")
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    assert_eq!(refunds[0].status, RefundStatus::Succeeded);
    assert_eq!(app.balance(&account).await, 10_000, "credited once");
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Refunded
    );
    assert_eq!(app.ledger_rows(None, "REFUND").await, 1);
    let outcomes = app.delivery_outcomes(&order.order_no).await;
    assert!(
        outcomes.contains(&"REFUND_FAILURE_TO_CONFIRM".to_owned()),
        "{outcomes:?}"
    );
    assert!(
        !outcomes.contains(&"REFUND_FAILED".to_owned()),
        "{outcomes:?}"
    );
    assert!(app.anomalies(&order.order_no).await.is_empty());
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_s_success_arriving_before_the_hand_over_s_answer_is_booked_once() {
    let (app, simulator) =
        spawn_app_paying_through(Chaos::default(), Duration::from_millis(50), |_| {}).await;
    let (account, order) = app.paid_order(10_000, 2_500).await;
    // The platform takes the refund but its answer is lost: only its callback tells us.
    simulator.set_chaos(Chaos {
        lose_create_answer: true,
        ..Chaos::default()
    });

    let refunds = app
        .refund_settled(&order.order_no, 1_000, "part of it")
        .await;

    assert_eq!(refunds[0].status, RefundStatus::Succeeded);
    let never_answered = count(
        &app,
        "SELECT count(*) FROM refunds WHERE submitted_at IS NULL AND platform_refund_id IS NOT NULL",
    )
    .await;
    assert_eq!(
        never_answered, 1,
        "booked from the callback, before any hand-over answer"
    );
    // Past the dispatcher's wait for unanswered hand-overs: nothing is handed over or credited again.
    tokio::time::sleep(Duration::from_secs(6)).await;
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.ledger_rows(None, "REFUND").await, 1);
    let at_platform = simulator
        .refund_by_reference(&refunds[0].refund_no)
        .await
        .expect("the platform has it");
    assert_eq!(
        at_platform.state.status,
        api_types::platform::RefundStatus::Succeeded
    );
    assert_eq!(
        simulator
            .payment(&at_platform.state.payment_id)
            .expect("payment")
            .refunded_cents,
        1_000,
        "the platform gave it back once"
    );
    app.assert_invariants().await;
}
