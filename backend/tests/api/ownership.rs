//! The attacks of issue "shoppers and ownership": nobody but an order's shopper
//! can read it, tokenise it or pay it, and every refusal changes nothing.

use crate::helpers::{error_code, spawn_app};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn anonymous_callers_cannot_create_read_tokenise_or_pay_and_change_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(50_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;
    let before = app.snapshot().await;
    let anonymous = reqwest::Client::new();
    let no = &order.order_no;

    let responses = [
        anonymous
            .post(app.url("/api/orders"))
            .header("idempotency-key", "anon-1")
            .json(&json!({"sku": "mug", "quantity": 1}))
            .send()
            .await,
        // The old, client-priced body of the attack.
        anonymous
            .post(app.url("/api/orders"))
            .json(&json!({"account_id": uuid::Uuid::new_v4(), "amount_cents": 50_000, "currency": "EUR"}))
            .send()
            .await,
        anonymous.get(app.url(&format!("/api/orders/{no}"))).send().await,
        anonymous.get(app.url("/api/orders")).send().await,
        anonymous
            .post(app.url(&format!("/api/orders/{no}/request-token")))
            .send()
            .await,
        anonymous
            .post(app.url(&format!("/api/orders/{no}/pay")))
            .json(&json!({"request_token": token}))
            .send()
            .await,
    ];
    for response in responses {
        let response = response.expect("sent");
        let what = format!("{} {}", response.url(), response.status());
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
        assert_eq!(error_code(response).await, "UNAUTHENTICATED", "{what}");
    }

    assert_eq!(app.snapshot().await, before);
    assert!(app.token_ttl(token).await > 0, "the token was not used up");
    assert!(app.get("/api/demo").await.status() == StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn another_shopper_gets_404_for_reading_tokenising_and_paying_an_order_and_nothing_changes() {
    let app = spawn_app().await;
    let (victim, order) = app.account_with_order(50_000, 50_000).await;
    let victims_token = app.request_token(&order.order_no).await;
    let attacker = app.create_shopper(100, "EUR").await;
    let mallory = app.client_of(&attacker).await;
    let before = app.snapshot().await;
    let no = &order.order_no;

    let responses = [
        mallory
            .get(app.url(&format!("/api/orders/{no}")))
            .send()
            .await,
        mallory
            .post(app.url(&format!("/api/orders/{no}/request-token")))
            .send()
            .await,
        mallory
            .post(app.url(&format!("/api/orders/{no}/pay")))
            .json(&json!({"request_token": victims_token}))
            .send()
            .await,
    ];
    for response in responses {
        let response = response.expect("sent");
        let what = format!("{} {}", response.url(), response.status());
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{what}");
        assert_eq!(error_code(response).await, "ORDER_NOT_FOUND", "{what}");
    }
    let listed: Vec<serde_json::Value> = mallory
        .get(app.url("/api/orders"))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert!(
        listed.is_empty(),
        "the attacker lists none of the victim's orders"
    );

    assert_eq!(app.snapshot().await, before);
    assert!(
        app.token_ttl(victims_token).await > 0,
        "the victim's token survives"
    );
    let paid = app.pay(no, victims_token).await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED, "the victim still pays");
    app.wait_until_final(no).await;
    assert_eq!(app.balance(&victim).await, 0);
    assert_eq!(app.balance(&attacker).await, 100);
}

#[tokio::test]
async fn a_token_presented_by_another_shopper_on_their_own_order_is_409_and_stays_usable() {
    let app = spawn_app().await;
    let (victim, order) = app.account_with_order(10_000, 3_000).await;
    let victims_token = app.request_token(&order.order_no).await;
    let attacker = app.create_shopper(10_000, "EUR").await;
    let own_order = app.create_order(&attacker, 3_000).await;
    let mallory = app.client_of(&attacker).await;
    let before = app.snapshot().await;

    let response = mallory
        .post(app.url(&format!("/api/orders/{}/pay", own_order.order_no)))
        .json(&json!({"request_token": victims_token}))
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
    assert!(
        app.token_ttl(victims_token).await > 0,
        "not consumed by that attempt"
    );
    let paid = app.pay(&order.order_no, victims_token).await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED);
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&victim).await, 7_000);
    assert_eq!(app.balance(&attacker).await, 10_000);
}

#[tokio::test]
async fn insufficient_funds_tells_only_the_owner_the_numbers() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(1_000, 5_000).await;
    let token = app.request_token(&order.order_no).await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "INSUFFICIENT_FUNDS");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("1000")
    );
}

#[tokio::test]
async fn the_price_is_the_catalogues_whatever_the_client_sends() {
    let app = spawn_app().await;
    let account = app.create_account(100_000, "EUR").await;
    app.put_product("teapot", "Teapot", 4_990, "EUR").await;

    let response = app
        .post_order(&json!({
            "sku": "teapot",
            "quantity": 2,
            "amount_cents": 1,
            "price_cents": 1,
            "currency": "USD",
            "account_id": uuid::Uuid::new_v4(),
        }))
        .await;

    assert_eq!(response.status(), StatusCode::CREATED);
    let order: api_types::api::Order = response.json().await.expect("order");
    assert_eq!(order.amount_cents, 9_980);
    assert_eq!(order.currency.as_str(), "EUR");
    assert_eq!(order.account_id, account.account_id);
    assert_eq!(order.description.as_deref(), Some("2 × Teapot"));
    assert!(order.pay_url.ends_with(&format!("/pay/{}", order.order_no)));
}
