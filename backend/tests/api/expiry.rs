//! Orders expire: an order nobody started paying is CLOSED after
//! `ORDER_TTL_SECS` and can never be paid; an order whose payment is under way
//! is settled with the platform first: a payment it already took is booked, one
//! it is still deciding is closed there, and then here.

use crate::helpers::{TestApp, error_code, spawn_app_with};
use api_types::{AttemptStatus, OrderStatus};
use reqwest::StatusCode;
use std::time::Duration;

async fn status(app: &TestApp, order_no: &str) -> String {
    sqlx::query_scalar("SELECT status FROM orders WHERE order_no = $1")
        .bind(order_no)
        .fetch_one(&app.db)
        .await
        .expect("status")
}

async fn wait_for_status(app: &TestApp, order_no: &str, wanted: &str) {
    for _ in 0..100 {
        if status(app, order_no).await == wanted {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("order {order_no} never became {wanted}");
}

#[tokio::test]
async fn an_order_nobody_pays_is_closed_after_its_ttl_and_can_never_be_paid() {
    let app = spawn_app_with(|c| c.order_ttl_secs = 1).await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    assert!(order.expires_at > order.created_at);

    wait_for_status(&app, &order.order_no, "CLOSED").await;

    let shown = app.order(&order.order_no).await;
    assert_eq!(shown.status, OrderStatus::Closed);
    let before = app.snapshot().await;
    let issue = app.post_request_token(&order.order_no).await;
    assert_eq!(issue.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(issue).await, "ORDER_NOT_PAYABLE");
    let pay = app.pay(&order.order_no, token).await;
    assert_eq!(pay.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(pay).await, "ORDER_NOT_PAYABLE");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("payment_attempts").await, 0);
    assert_eq!(app.balance(&account).await, 10_000);
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_expired_order_whose_payment_is_still_being_decided_is_closed_there_and_never_charged() {
    // The sandbox decides after 6 s; the order expires after 1 s and the
    // sweep (every 2 s) closes the payment at the platform before that.
    let app = spawn_app_with(|c| {
        c.order_ttl_secs = 1;
        c.sandbox_callback_delay_ms = 6_000;
    })
    .await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    assert_eq!(
        app.pay(&order.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );

    wait_for_status(&app, &order.order_no, "CLOSED").await;
    assert_eq!(app.held(&account).await, 0, "the close released the hold");
    app.assert_invariants().await;
    // Past the moment the platform would have decided: a closed payment is never taken.
    tokio::time::sleep(Duration::from_millis(6_500)).await;

    let closed = app.order(&order.order_no).await;
    assert_eq!(closed.status, OrderStatus::Closed);
    assert_eq!(closed.payment_status, Some(AttemptStatus::Closed));
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 0);
    assert!(app.anomalies(&order.order_no).await.is_empty());
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_expired_order_whose_payment_succeeded_unannounced_is_booked_paid_never_closed() {
    // The platform takes the money at once but its callback is lost; the
    // order expires after 1 s and the sweep asks the platform before closing.
    let app = spawn_app_with(|c| {
        c.order_ttl_secs = 1;
        c.sandbox_drop_callbacks = true;
    })
    .await;
    let (account, order, _) = app.handed_over_order(10_000, 2_000).await;

    let paid = app.wait_until_final(&order.order_no).await;

    assert_eq!(paid.status, OrderStatus::Paid);
    assert_eq!(paid.payment_status, Some(AttemptStatus::Succeeded));
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 1);
    assert!(app.anomalies(&order.order_no).await.is_empty());
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_success_for_a_closed_order_charges_nothing_is_flagged_late_and_is_acknowledged() {
    // The platform is still deciding when the order expires, so the payment
    // is closed there and here; its success arrives afterwards.
    let app = spawn_app_with(|c| {
        c.order_ttl_secs = 1;
        c.sandbox_callback_delay_ms = 60_000;
        c.sandbox_drop_callbacks = true;
    })
    .await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_000).await;
    wait_for_status(&app, &order.order_no, "CLOSED").await;
    assert_eq!(app.held(&account).await, 0, "the close released the hold");

    let response = app.post_success(&payment).await;

    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the platform may stop retrying"
    );
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.count("payment_ledger").await, 0);
    assert_eq!(status(&app, &order.order_no).await, "CLOSED");
    // The sandbox closed that payment: it refuses to refund it, and a person looks.
    let refund = app
        .assert_given_back_once(&order, &payment.platform_payment_id, &["LATE_SUCCESS"])
        .await;
    assert_eq!(refund.status, "FAILED");
    app.assert_invariants().await;
}

#[tokio::test]
async fn pays_racing_the_expiry_either_pay_or_find_the_order_closed_never_both() {
    let app = spawn_app_with(|c| c.order_ttl_secs = 1).await;
    let account = app.create_account(1_000_000, "EUR").await;
    let orders = app.orders_with_tokens(&account, 20, 1_000).await;
    // Pay at about the moment the orders expire, while the sweep runs.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let app = &app;
    let answers = futures::future::join_all(orders.iter().map(|(order, token)| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        app.pay(&order.order_no, *token).await.status()
    }))
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    for ((order, _), answer) in orders.iter().zip(answers) {
        let final_status = status(app, &order.order_no).await;
        match answer {
            // Accepted, then paid; or, if the sweep found the platform still
            // deciding, closed there and here with nothing charged.
            StatusCode::ACCEPTED => assert!(
                ["PAID", "CLOSED"].contains(&final_status.as_str()),
                "{} {final_status}",
                order.order_no
            ),
            StatusCode::CONFLICT => assert_eq!(final_status, "CLOSED", "{}", order.order_no),
            other => panic!("unexpected {other} for {}", order.order_no),
        }
    }
    app.assert_invariants().await;
}
