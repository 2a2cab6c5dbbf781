//! Funds held at pay: the pay that wins holds the amount, so money a payment
//! is taking cannot be promised twice; a success captures the hold, a failure
//! releases it.

use crate::helpers::{error_code, spawn_app, spawn_app_with};
use reqwest::StatusCode;

async fn held(app: &crate::helpers::TestApp, account: &crate::helpers::Account) -> (i64, i64) {
    sqlx::query_as("SELECT balance_cents, held_cents FROM accounts WHERE account_id = $1")
        .bind(account.account_id)
        .fetch_one(&app.db)
        .await
        .expect("account")
}

#[tokio::test]
async fn four_orders_of_the_whole_balance_paid_at_once_get_one_202_and_three_422_and_no_anomaly() {
    // The sandbox's success comes 3 s after the pay, so the hold is still
    // there to be seen however slowly a loaded machine answers the four pays.
    let app = spawn_app_with(|config| config.sandbox_callback_delay_ms = 3_000).await;
    let account = app.create_account(1_000, "EUR").await;
    let orders = app.orders_with_tokens(&account, 4, 1_000).await;

    let answers = app.pay_at_once(&orders).await;

    let mut statuses: Vec<u16> = Vec::new();
    let mut paid = None;
    for (response, (order, _)) in answers.into_iter().zip(&orders) {
        statuses.push(response.status().as_u16());
        if response.status() == StatusCode::ACCEPTED {
            paid = Some(order.order_no.clone());
        } else {
            assert_eq!(error_code(response).await, "INSUFFICIENT_FUNDS");
        }
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [202, 422, 422, 422]);
    let paid = paid.expect("one pay won");
    assert_eq!(
        held(&app, &account).await,
        (1_000, 1_000),
        "the winner holds the money"
    );
    app.assert_invariants().await;

    let order = app.wait_until_final(&paid).await;

    assert_eq!(order.status, api_types::OrderStatus::Paid);
    assert_eq!(
        held(&app, &account).await,
        (0, 0),
        "the success captured the hold"
    );
    assert_eq!(app.count("anomalies").await, 0);
    assert_eq!(app.count("payment_attempts").await, 1);
    for (other, _) in orders.iter().filter(|(o, _)| o.order_no != paid) {
        assert_eq!(
            app.order(&other.order_no).await.status,
            api_types::OrderStatus::Pending
        );
    }
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_failed_payment_releases_its_hold() {
    let app = spawn_app().await;
    // The sandbox declines amounts ending in 13 minor units.
    let (account, order) = app.account_with_order(5_000, 1_013).await;
    let token = app.request_token(&order.order_no).await;

    assert_eq!(
        app.pay(&order.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );
    let held_while_paying = held(&app, &account).await;
    let order = app.wait_until_final(&order.order_no).await;

    assert_eq!(held_while_paying.1, 1_013);
    assert_eq!(order.status, api_types::OrderStatus::Failed);
    assert_eq!(held(&app, &account).await, (5_000, 0));
    app.assert_invariants().await;
}

#[tokio::test]
async fn money_held_for_one_order_cannot_pay_another_until_it_is_released() {
    // The decline comes 3 s after the pay: the second pay must see the hold
    // however slowly a loaded machine runs the test.
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 3_000).await;
    let account = app.create_account(1_500, "EUR").await;
    let declined = app.create_order(&account, 1_013).await;
    let other = app.create_order(&account, 1_000).await;
    let token = app.request_token(&declined.order_no).await;
    assert_eq!(
        app.pay(&declined.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );

    let refused = app
        .pay(&other.order_no, app.request_token(&other.order_no).await)
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "INSUFFICIENT_FUNDS");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("487"),
        "{body}"
    );

    app.wait_until_final(&declined.order_no).await;
    let paid = app
        .pay(&other.order_no, app.request_token(&other.order_no).await)
        .await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED, "released money pays");
    app.wait_until_final(&other.order_no).await;
    assert_eq!(held(&app, &account).await, (500, 0));
    app.assert_invariants().await;
}
