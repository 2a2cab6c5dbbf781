//! `Idempotency-Key` on placing orders, for shoppers and for the merchant API.

use crate::helpers::{error_code, spawn_app, spawn_app_with};
use api_types::api::Order;
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

async fn place(
    app: &crate::helpers::TestApp,
    client: &reqwest::Client,
    key: &str,
    body: serde_json::Value,
) -> reqwest::Response {
    client
        .post(app.url("/api/orders"))
        .header("idempotency-key", key)
        .json(&body)
        .send()
        .await
        .expect("sent")
}

#[tokio::test]
async fn the_same_key_and_body_replays_the_order_and_another_body_is_422() {
    let app = spawn_app().await;
    app.create_account(100_000, "EUR").await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;
    let key = Uuid::new_v4().to_string();
    let body = json!({"sku": "mug", "quantity": 2});

    let first = place(&app, &app.http, &key, body.clone()).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first: Order = first.json().await.expect("order");
    let again = place(&app, &app.http, &key, body.clone()).await;
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .map(|v| v.to_str().unwrap_or_default()),
        Some("true")
    );
    let again: Order = again.json().await.expect("order");
    assert_eq!(again, first);
    let before = app.snapshot().await;

    let other = place(&app, &app.http, &key, json!({"sku": "mug", "quantity": 3})).await;

    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(other).await, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("orders").await, 1);
}

#[tokio::test]
async fn a_missing_or_malformed_key_is_400_and_changes_nothing() {
    let app = spawn_app().await;
    app.create_account(100_000, "EUR").await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;
    let before = app.snapshot().await;

    let missing = app
        .http
        .post(app.url("/api/orders"))
        .json(&json!({"sku": "mug", "quantity": 1}))
        .send()
        .await
        .expect("sent");
    let spaced = place(
        &app,
        &app.http,
        "has space",
        json!({"sku": "mug", "quantity": 1}),
    )
    .await;
    let long = place(
        &app,
        &app.http,
        &"k".repeat(256),
        json!({"sku": "mug", "quantity": 1}),
    )
    .await;

    for response in [missing, spaced, long] {
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(error_code(response).await, "BAD_REQUEST");
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn concurrent_requests_with_one_key_make_one_order() {
    let app = spawn_app().await;
    app.create_account(1_000_000, "EUR").await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;
    let key = Uuid::new_v4().to_string();

    let answers = futures::future::join_all(
        (0..20).map(|_| place(&app, &app.http, &key, json!({"sku": "mug", "quantity": 1}))),
    )
    .await;

    let mut orders = std::collections::HashSet::new();
    for response in answers {
        match response.status() {
            StatusCode::CREATED => {
                let order: Order = response.json().await.expect("order");
                orders.insert(order.order_no);
            }
            StatusCode::CONFLICT => {
                assert!(response.headers().get("retry-after").is_some());
                assert_eq!(error_code(response).await, "IDEMPOTENCY_KEY_IN_USE");
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(orders.len(), 1, "one order for one key");
    assert_eq!(app.count("orders").await, 1);
    assert_eq!(app.count("idempotency_keys").await, 1);
}

#[tokio::test]
async fn keys_belong_to_one_shopper() {
    let app = spawn_app().await;
    let ada = app.create_account(100_000, "EUR").await;
    let ben = app.create_shopper(100_000, "EUR").await;
    let ben_client = app.client_of(&ben).await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;
    let key = "shared-key";
    let body = json!({"sku": "mug", "quantity": 1});

    let ada_order: Order = place(&app, &app.http, key, body.clone())
        .await
        .json()
        .await
        .expect("order");
    let ben_answer = place(&app, &ben_client, key, body).await;

    assert_eq!(ben_answer.status(), StatusCode::CREATED);
    assert!(ben_answer.headers().get("idempotent-replayed").is_none());
    let ben_order: Order = ben_answer.json().await.expect("order");
    assert_ne!(ben_order.order_no, ada_order.order_no);
    assert_eq!(ada_order.account_id, ada.account_id);
    assert_eq!(ben_order.account_id, ben.account_id);
}

#[tokio::test]
async fn the_merchant_api_places_orders_for_a_shopper_with_a_pay_url_and_the_same_key_rules() {
    let app = spawn_app().await;
    let account = app.create_shopper(100_000, "EUR").await;
    let body = json!({"shopper_id": account.shopper_id, "amount_cents": 4_200, "currency": "EUR", "description": "Order 1234 at the shop"});

    let first = app.post_merchant_order("m-1", &body).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Order = first.json().await.expect("order");
    let again = app.post_merchant_order("m-1", &body).await;
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .map(|v| v.to_str().unwrap_or_default()),
        Some("true")
    );
    let other = app
        .post_merchant_order("m-1", &json!({"shopper_id": account.shopper_id, "amount_cents": 1, "currency": "EUR", "description": "x"}))
        .await;

    assert_eq!(first.amount_cents, 4_200);
    assert_eq!(first.account_id, account.account_id);
    assert_eq!(first.description.as_deref(), Some("Order 1234 at the shop"));
    assert_eq!(
        first.pay_url,
        format!("http://127.0.0.1:3000/pay/{}", first.order_no)
    );
    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(other).await, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(app.count("orders").await, 1);
}

#[tokio::test]
async fn the_merchant_api_refuses_bad_keys_bodies_and_shoppers_and_changes_nothing() {
    let app = spawn_app().await;
    let account = app.create_shopper(100_000, "EUR").await;
    let before = app.snapshot().await;
    let good = json!({"shopper_id": account.shopper_id, "amount_cents": 100, "currency": "EUR", "description": "d"});

    let wrong_key = app
        .http
        .post(app.url("/api/merchant/orders"))
        .bearer_auth("not-the-merchant-key-at-all-no")
        .header("idempotency-key", "k")
        .json(&good)
        .send()
        .await
        .expect("sent");
    assert_eq!(wrong_key.status(), StatusCode::UNAUTHORIZED);
    let cases = [
        (
            json!({"shopper_id": Uuid::new_v4(), "amount_cents": 100, "currency": "EUR", "description": "d"}),
            StatusCode::NOT_FOUND,
            "SHOPPER_NOT_FOUND",
        ),
        (
            json!({"shopper_id": account.shopper_id, "amount_cents": 100, "currency": "USD", "description": "d"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "CURRENCY_MISMATCH",
        ),
        (
            json!({"shopper_id": account.shopper_id, "amount_cents": 0, "currency": "EUR", "description": "d"}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"shopper_id": account.shopper_id, "amount_cents": 100, "currency": "EUR", "description": ""}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"shopper_id": account.shopper_id, "amount_cents": 100, "currency": "EUR", "description": "a\u{0}b"}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"shopper_id": account.shopper_id, "amount_cents": 100, "currency": "EUR"}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
    ];
    for (body, status, code) in cases {
        let response = app
            .post_merchant_order(&Uuid::new_v4().to_string(), &body)
            .await;
        assert_eq!(response.status(), status, "{body}");
        assert_eq!(error_code(response).await, code, "{body}");
    }
    assert_eq!(app.snapshot().await, before);

    // Without MERCHANT_API_KEY that key is no merchant's: refused, like any unknown key.
    let off = spawn_app_with(|c| c.merchant_api_key = None).await;
    let response = off.post_merchant_order("k", &good).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}
