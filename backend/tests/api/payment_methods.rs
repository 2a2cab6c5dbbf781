//! Two payment methods: the wallet (held at pay, deducted once on success) and
//! the platform (WeChat Pay, Alipay, the remote platform, the sandbox's
//! simulated one), which takes the shopper's own money: nothing held, no
//! balance needed, no wallet changed, not by the charge and not by a refund.

use crate::helpers::{error_code, spawn_app, spawn_app_paying_through};
use api_types::api::{Order, PlatformInfo};
use api_types::{OrderStatus, PaymentMethod};
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

/// `POST /api/admin/shoppers` with no `balance_cents` at all; the new shopper
/// (its wallet of 0), nobody signed in as them.
async fn shopper_without_a_balance(app: &crate::helpers::TestApp) -> crate::helpers::Account {
    let email = format!("no-wallet-{}@shop.test", Uuid::new_v4().simple());
    let created = app
        .post_shopper(
            &json!({"email": email, "password": crate::helpers::PASSWORD, "currency": "EUR"}),
        )
        .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: api_types::api::ShopperCreated = created.json().await.expect("body");
    crate::helpers::Account {
        account_id: created.account_id,
        currency: api_types::Currency::EUR,
        shopper_id: created.shopper_id,
        email,
    }
}

#[tokio::test]
async fn the_sandbox_offers_the_wallet_first_and_its_simulated_platform() {
    let app = spawn_app().await;

    let info: PlatformInfo = app.get_json("/api/platform").await;

    assert_eq!(
        info.methods,
        vec![PaymentMethod::Wallet, PaymentMethod::Platform]
    );
}

#[tokio::test]
async fn a_shopper_created_without_a_balance_pays_by_platform_and_no_wallet_changes() {
    let app = spawn_app().await;
    let account = shopper_without_a_balance(&app).await;
    app.sign_in_as(&app.http, &account).await;
    assert_eq!(app.balance(&account).await, 0);
    let order = app.create_order(&account, 2_000).await;
    let token = app.request_token(&order.order_no).await;

    let response = app.pay_by(&order.order_no, token, "platform").await;

    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["method"], "platform");
    let paid = app.wait_until_final(&order.order_no).await;
    assert_eq!(paid.status, OrderStatus::Paid);
    assert_eq!(paid.payment_method, Some(PaymentMethod::Platform));
    assert_eq!(app.ledger_rows(Some(&order.order_no), "CHARGE").await, 1);
    app.assert_wallet_untouched(&account).await;
    // The same token again replays the platform payment; still no wallet.
    let again = app.pay_by(&order.order_no, token, "platform").await;
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_pay_naming_no_method_pays_by_wallet_in_the_sandbox() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["method"], "wallet");
    let paid = app.wait_until_final(&order.order_no).await;
    assert_eq!(paid.payment_method, Some(PaymentMethod::Wallet));
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(app.held(&account).await, 0);
    app.assert_invariants().await;
}

#[tokio::test]
async fn orders_beyond_the_wallet_all_pay_by_platform_while_the_wallet_pays_one() {
    // The overcommit case, both ways: four orders of 1,000 on a wallet of 1,000.
    let app = spawn_app().await;
    let (account, first) = app.account_with_order(1_000, 1_000).await;
    let mut orders = vec![first];
    for _ in 0..3 {
        orders.push(app.create_order(&account, 1_000).await);
    }
    let mut tokens = Vec::new();
    for order in &orders {
        tokens.push(app.request_token(&order.order_no).await);
    }

    // By wallet, all at once: one is held, three are refused.
    let by_wallet = join_all(
        orders
            .iter()
            .zip(&tokens)
            .map(|(order, token)| app.pay_by(&order.order_no, *token, "wallet")),
    )
    .await;
    let statuses: Vec<StatusCode> = by_wallet.iter().map(reqwest::Response::status).collect();
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::ACCEPTED)
            .count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::UNPROCESSABLE_ENTITY)
            .count(),
        3,
        "{statuses:?}"
    );

    // The three refused, paid by platform with new tokens, all at once: all accepted.
    let refused: Vec<&Order> = orders
        .iter()
        .zip(&statuses)
        .filter(|(_, status)| **status != StatusCode::ACCEPTED)
        .map(|(order, _)| order)
        .collect();
    let mut retries = Vec::new();
    for order in &refused {
        retries.push((order, app.request_token(&order.order_no).await));
    }
    let by_platform = join_all(
        retries
            .iter()
            .map(|(order, token)| app.pay_by(&order.order_no, *token, "platform")),
    )
    .await;
    for response in by_platform {
        assert_eq!(response.status(), StatusCode::ACCEPTED);
    }
    for order in &orders {
        assert_eq!(
            app.wait_until_final(&order.order_no).await.status,
            OrderStatus::Paid
        );
    }
    // The wallet paid its one order, once; the platform paid three.
    assert_eq!(app.balance(&account).await, 0);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.ledger_rows(None, "CHARGE").await, 4);
    let methods: Vec<String> =
        sqlx::query_scalar("SELECT method FROM payment_attempts ORDER BY method")
            .fetch_all(&app.db)
            .await
            .expect("methods");
    assert_eq!(methods, ["platform", "platform", "platform", "wallet"]);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_of_a_platform_payment_credits_no_wallet() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(5_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    assert_eq!(
        app.pay_by(&order.order_no, token, "platform")
            .await
            .status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        app.wait_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );

    let refunds = app
        .refund_settled(&order.order_no, 500, "an item returned")
        .await;

    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].status, api_types::RefundStatus::Succeeded);
    assert_eq!(app.order(&order.order_no).await.refunded_cents, 500);
    assert_eq!(app.ledger_rows(Some(&order.order_no), "REFUND").await, 1);
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_method_the_platform_does_not_offer_is_422_changes_nothing_and_leaves_the_token_usable() {
    // Under a real platform only `platform` is offered.
    let (app, _simulator) =
        spawn_app_paying_through(Default::default(), Duration::from_millis(50), |_| {}).await;
    let info: PlatformInfo = app.get_json("/api/platform").await;
    assert_eq!(info.methods, vec![PaymentMethod::Platform]);
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;

    let refused = app.pay_by(&order.order_no, token, "wallet").await;

    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(refused).await, "PAYMENT_METHOD_UNAVAILABLE");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("payment_attempts").await, 0);

    // A method that does not exist is a bad request, and changes nothing either.
    for method in ["card", "WALLET", ""] {
        let response = app.pay_by(&order.order_no, token, method).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{method:?}");
        assert_eq!(error_code(response).await, "BAD_REQUEST");
    }
    assert_eq!(app.snapshot().await, before);

    // The token was not used up: naming no method pays by platform with it.
    let paid = app.pay(&order.order_no, token).await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED);
    assert!(paid.headers().get("idempotent-replayed").is_none());
    let settled = app.wait_until_final(&order.order_no).await;
    assert_eq!(settled.status, OrderStatus::Paid);
    assert_eq!(settled.payment_method, Some(PaymentMethod::Platform));
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_admin_refuses_a_negative_balance_and_opens_a_wallet_of_0_without_one() {
    let app = spawn_app().await;
    let before = app.snapshot().await;

    let negative = app
        .post_shopper(
            &json!({"email": "negative@shop.test", "password": crate::helpers::PASSWORD,
                              "balance_cents": -1, "currency": "EUR"}),
        )
        .await;

    assert_eq!(negative.status(), StatusCode::BAD_REQUEST);
    assert_eq!(app.snapshot().await, before);
    let account = shopper_without_a_balance(&app).await;
    let (opening, balance, held): (i64, i64, i64) = sqlx::query_as(
        "SELECT opening_balance_cents, balance_cents, held_cents FROM accounts WHERE account_id = $1",
    )
    .bind(account.account_id)
    .fetch_one(&app.db)
    .await
    .expect("the wallet");
    assert_eq!((opening, balance, held), (0, 0, 0));
}
