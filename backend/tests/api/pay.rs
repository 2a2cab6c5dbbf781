use crate::helpers::{
    error_code, new_callback_id, spawn_app, spawn_app_with, spawn_app_without_callbacks,
    success_body,
};
use api_types::OrderStatus;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn pay_returns_202_and_the_sandbox_callback_charges_the_order_once() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.headers().get("idempotent-replayed").is_none());
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["order_no"], order.order_no.as_str());
    assert_eq!(body["status"], "PENDING");
    assert!(
        body["payment_id"]
            .as_str()
            .is_some_and(|id| id.parse::<Uuid>().is_ok())
    );

    let settled = app.wait_until_final(&order.order_no).await;
    assert_eq!(settled.status, OrderStatus::Paid);
    assert!(settled.paid_at.is_some());
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(app.count("payment_ledger").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn pay_replays_the_winners_answer_for_the_same_token_at_any_later_time() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let first = app.pay(&order.order_no, token).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first_body = first.text().await.expect("body");
    app.wait_until_final(&order.order_no).await;

    let again = app.pay(&order.order_no, token).await;

    assert_eq!(again.status(), StatusCode::ACCEPTED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again_body: Value = again.json().await.expect("json");
    assert_eq!(
        again_body,
        serde_json::from_str::<Value>(&first_body).expect("json")
    );
    assert_eq!(app.count("payment_attempts").await, 1);
    assert_eq!(app.balance(&account).await, 8_000);
}

#[tokio::test]
async fn fifty_concurrent_pays_with_one_token_make_exactly_one_attempt() {
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 300).await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;

    let responses = join_all((0..50).map(|_| app.pay(&order.order_no, token))).await;

    let mut fresh = 0;
    for response in responses {
        match response.status() {
            StatusCode::ACCEPTED if response.headers().get("idempotent-replayed").is_none() => {
                fresh += 1
            }
            StatusCode::ACCEPTED => {}
            StatusCode::CONFLICT => assert_eq!(error_code(response).await, "TOKEN_INVALID"),
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(fresh, 1, "exactly one submit wins");
    assert_eq!(app.count("payment_attempts").await, 1);
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_000);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_second_token_for_an_order_already_being_paid_joins_the_first_attempt() {
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 2_000).await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let first_token = app.request_token(&order.order_no).await;
    let second_token = app.request_token(&order.order_no).await;
    let first: Value = app
        .pay(&order.order_no, first_token)
        .await
        .json()
        .await
        .expect("json");

    let second = app.pay(&order.order_no, second_token).await;

    assert_eq!(second.status(), StatusCode::ACCEPTED);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    let second: Value = second.json().await.expect("json");
    assert_eq!(second["payment_id"], first["payment_id"]);
    assert_eq!(app.count("payment_attempts").await, 1);
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_000);
}

#[tokio::test]
async fn pay_with_an_unknown_token_is_409_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, Uuid::new_v4()).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_with_an_expired_token_is_409_and_changes_nothing() {
    let app = spawn_app_with(|c| c.token_ttl_secs = 1).await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_with_a_token_of_another_order_is_409_and_changes_nothing() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let other = app.create_order(&account, 3_000).await;
    let token = app.request_token(&other.order_no).await;
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_with_a_missing_or_malformed_token_or_body_is_400_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    app.request_token(&order.order_no).await;
    let before = app.snapshot().await;

    for body in [
        "{}".to_owned(),
        "{\"request_token\": \"not-a-uuid\"}".to_owned(),
        "{\"request_token\": 42}".to_owned(),
        "{\"request_token\":".to_owned(),
        "".to_owned(),
        json!({"request_token": null}).to_string(),
    ] {
        let response = app.pay_raw(&order.order_no, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body:?}");
        assert_eq!(error_code(response).await, "BAD_REQUEST", "{body:?}");
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_for_an_order_that_is_not_pending_is_409_order_not_payable() {
    let app = spawn_app_without_callbacks().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let payment = app.hand_over(&order).await;
    let paid = app
        .post_callback(&new_callback_id(), &success_body(&payment))
        .await;
    assert_eq!(paid.status(), StatusCode::OK);
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "ORDER_NOT_PAYABLE");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 8_000);
}

#[tokio::test]
async fn pay_with_a_balance_below_the_amount_is_422_and_changes_nothing() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(1_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(response).await, "INSUFFICIENT_FUNDS");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 1_000);
}

#[tokio::test]
async fn a_token_presented_on_another_order_is_refused_unused_and_still_pays_its_own_order() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let other = app.create_order(&account, 3_000).await;
    let token = app.request_token(&order.order_no).await;
    let ttl_before = app.token_ttl(token).await;
    let before = app.snapshot().await;

    let refused = app.pay(&other.order_no, token).await;

    assert_eq!(refused.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(refused).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("payment_attempts").await, 0);
    assert_eq!(
        app.order(&other.order_no).await.status,
        OrderStatus::Pending
    );
    let ttl_after = app.token_ttl(token).await;
    assert!(
        (ttl_before - 2..=ttl_before).contains(&ttl_after),
        "the token is still there with its own expiry: {ttl_before} s then {ttl_after} s"
    );

    let own = app.pay(&order.order_no, token).await;

    assert_eq!(own.status(), StatusCode::ACCEPTED);
    assert!(own.headers().get("idempotent-replayed").is_none());
    assert_eq!(
        app.wait_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(app.count("payment_attempts").await, 1);
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(
        app.order(&other.order_no).await.status,
        OrderStatus::Pending
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn submits_of_a_token_on_another_order_racing_the_shoppers_own_never_make_it_fail() {
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 300).await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let other = app.create_order(&account, 3_000).await;
    let token = app.request_token(&order.order_no).await;

    let (wrong, own) = tokio::join!(
        join_all((0..25).map(|_| app.pay(&other.order_no, token))),
        app.pay(&order.order_no, token),
    );

    for response in wrong {
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(error_code(response).await, "TOKEN_INVALID");
    }
    assert_eq!(own.status(), StatusCode::ACCEPTED);
    assert!(own.headers().get("idempotent-replayed").is_none());
    assert_eq!(app.count("payment_attempts").await, 1);
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(
        app.order(&other.order_no).await.status,
        OrderStatus::Pending
    );
    app.assert_invariants().await;
}
