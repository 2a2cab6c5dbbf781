use crate::helpers::{error_code, spawn_app};
use api_types::OrderStatus;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn create_order_returns_201_with_a_pending_unguessable_order() {
    let app = spawn_app().await;
    let account = app.create_account(10_000, "EUR").await;

    let first = app.create_order(&account, 1_999).await;
    let second = app.create_order(&account, 1_999).await;

    assert_eq!(first.status, OrderStatus::Pending);
    assert_eq!(first.amount_cents, 1_999);
    assert_eq!(first.account_id, account.account_id);
    assert!(first.paid_at.is_none() && first.failure_reason.is_none());
    assert_ne!(first.order_no, second.order_no);
    // 28 random hex digits after the prefix (112 bits): not guessable from another order's number.
    assert_eq!(first.order_no.len(), "ord_".len() + 28);
}

#[tokio::test]
async fn get_order_returns_the_contract_fields() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 1_000).await;

    let response = app.get_order(&order.order_no).await;

    assert_eq!(response.status(), StatusCode::OK);
    let body: serde_json::Value = response.json().await.expect("json");
    for field in [
        "order_no",
        "account_id",
        "amount_cents",
        "currency",
        "status",
        "created_at",
        "paid_at",
        "failure_reason",
        "description",
        "pay_url",
    ] {
        assert!(body.get(field).is_some(), "missing {field} in {body}");
    }
    assert_eq!(body["status"], "PENDING");
}

#[tokio::test]
async fn get_unknown_order_is_404_order_not_found() {
    let app = spawn_app().await;
    app.create_account(1_000, "EUR").await;

    let response = app.get_order("ord_doesnotexist").await;

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(response).await, "ORDER_NOT_FOUND");
}

#[tokio::test]
async fn create_order_rejects_bad_input_and_changes_nothing() {
    let app = spawn_app().await;
    app.create_account(10_000, "EUR").await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;
    app.put_product("dollar-mug", "Mug", 1_250, "USD").await;
    let before = app.snapshot().await;
    let cases = [
        (
            json!({"sku": "mug", "quantity": 0}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"sku": "mug", "quantity": 101}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"sku": "mug", "quantity": -1}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"sku": "mug", "quantity": 1.5}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"sku": "mug"}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"quantity": 1}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            json!({"sku": "nope", "quantity": 1}),
            StatusCode::NOT_FOUND,
            "PRODUCT_NOT_FOUND",
        ),
        // PostgreSQL text cannot hold U+0000: refused before any query, not a 500 (found by schemathesis).
        (
            json!({"sku": "mu\u{0}g", "quantity": 1}),
            StatusCode::NOT_FOUND,
            "PRODUCT_NOT_FOUND",
        ),
        (
            json!({"sku": "dollar-mug", "quantity": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "CURRENCY_MISMATCH",
        ),
    ];
    for (body, status, code) in cases {
        let response = app.post_order(&body).await;
        assert_eq!(response.status(), status, "{body}");
        assert_eq!(error_code(response).await, code, "{body}");
    }

    let malformed = app
        .http
        .post(app.url("/api/orders"))
        .header("idempotency-key", "k-1")
        .header("content-type", "application/json")
        .body("{\"sku\":")
        .send()
        .await
        .expect("sent");
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert_eq!(error_code(malformed).await, "BAD_REQUEST");

    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("idempotency_keys").await, 0);
}

#[tokio::test]
async fn oversized_request_bodies_are_refused_with_413() {
    let app = spawn_app().await;
    app.create_account(1_000, "EUR").await;
    let before = app.snapshot().await;
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(70 * 1024));

    let response = app
        .http
        .post(app.url("/api/orders"))
        .header("idempotency-key", "k-1")
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(response).await, "PAYLOAD_TOO_LARGE");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn the_platform_endpoint_says_the_sandbox_is_a_sandbox() {
    let app = spawn_app().await;

    let response = app
        .http
        .get(app.url("/api/platform"))
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::OK);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(
        body,
        json!({"platform": "sandbox", "sandbox": true, "pays_by_qr_code": false,
               "methods": ["wallet", "platform"], "demo_shoppers": []})
    );
}

#[tokio::test]
async fn malformed_order_numbers_are_404_order_not_found_on_every_order_route_and_change_nothing() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;
    let hex = order.order_no.trim_start_matches("ord_");
    let malformed = [
        "ord_%00".to_owned(),
        format!("{}%00", order.order_no),
        "%FF".to_owned(),
        format!("ord_{}%FF", &hex[..hex.len() - 1]),
        format!("{}0", order.order_no),
        format!("ord_{}", "a".repeat(10_000)),
        format!("xrd_{hex}"),
        format!("ord_{}", hex.to_uppercase()),
        format!("%20{}", order.order_no),
    ];

    for order_no in &malformed {
        let read = app.get_order(order_no).await;
        let issue = app.post_request_token(order_no).await;
        let pay = app.pay(order_no, token).await;

        for (route, response) in [("GET", read), ("request-token", issue), ("pay", pay)] {
            assert_eq!(
                response.status(),
                StatusCode::NOT_FOUND,
                "{route} {order_no:.60}"
            );
            assert_eq!(
                error_code(response).await,
                "ORDER_NOT_FOUND",
                "{route} {order_no:.60}"
            );
        }
    }

    assert_eq!(app.snapshot().await, before);
    let paid = app.pay(&order.order_no, token).await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED, "the token still pays");
    assert!(paid.headers().get("idempotent-replayed").is_none());
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_000);
}
