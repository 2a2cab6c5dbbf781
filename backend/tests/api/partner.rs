//! The demo's partner shop: a second merchant that places its orders through
//! the merchant API with its own key and a return URL back to itself, and
//! reads the order before believing the shopper's return. Only in demo mode.

use crate::helpers::{Account, spawn_app, spawn_app_with};
use api_types::OrderStatus;
use reqwest::StatusCode;
use reqwest::redirect::Policy;

/// The text of the partner's page at `url`.
async fn page(client: &reqwest::Client, url: &str) -> String {
    client
        .get(url)
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text")
}

#[tokio::test]
async fn the_partner_shop_sells_through_the_merchant_api_and_reads_the_order_back() {
    let app = spawn_app_with(|c| c.demo = true).await;
    let client = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .expect("client");
    let window = client.get(app.url("/partner")).send().await.expect("sent");
    assert_eq!(window.status(), StatusCode::OK);
    let html = window.text().await.expect("text");
    assert!(
        html.contains("Partner Shop (demo)") && html.contains("ada@shop.test"),
        "{html}"
    );

    let bought = client
        .post(app.url("/partner/buy"))
        .form(&[("email", "ada@shop.test")])
        .send()
        .await
        .expect("sent");
    assert_eq!(bought.status(), StatusCode::SEE_OTHER);
    let location = bought.headers()["location"]
        .to_str()
        .expect("text")
        .to_owned();
    let order_no = location
        .strip_prefix("/pay/")
        .expect("to the payment page")
        .to_owned();

    // The order is the partner's, placed by its key, with a way back to it.
    let (merchant, return_url, cancel_url): (String, String, String) = sqlx::query_as(
        "SELECT merchant_id::text, return_url, cancel_url FROM orders WHERE order_no = $1",
    )
    .bind(&order_no)
    .fetch_one(&app.db)
    .await
    .expect("the order");
    assert_eq!(merchant, "00000000-0000-0000-0000-000000000002");
    assert!(return_url.ends_with("/partner/thanks"), "{return_url}");
    assert!(cancel_url.ends_with("/partner"), "{cancel_url}");
    let used: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM merchant_keys WHERE merchant_id = '00000000-0000-0000-0000-000000000002'
         AND last_used_at IS NOT NULL",
    )
    .fetch_one(&app.db)
    .await
    .expect("keys");
    assert_eq!(used, 1, "the partner's own key placed it");

    // A return that claims PAID is not believed: the page reads the order.
    let claimed = page(
        &client,
        &app.url(&format!("/partner/thanks?order_no={order_no}&status=PAID")),
    )
    .await;
    assert!(claimed.contains("data-status=\"PENDING\""), "{claimed}");

    // Paid, the page says so.
    let signed_in = app
        .post_session(
            &app.http,
            &serde_json::json!({"email": "ada@shop.test", "password": "ada-demo-password"}),
        )
        .await;
    assert_eq!(signed_in.status(), StatusCode::OK);
    let (shopper_id, account_id): (uuid::Uuid, uuid::Uuid) = sqlx::query_as(
        "SELECT s.shopper_id, a.account_id FROM shoppers s JOIN accounts a USING (shopper_id)
         WHERE s.email = 'ada@shop.test'",
    )
    .fetch_one(&app.db)
    .await
    .expect("Ada");
    let ada = Account {
        account_id,
        currency: "EUR".parse().expect("currency"),
        shopper_id,
        email: "ada@shop.test".into(),
    };
    assert_eq!(
        app.pay_by_until_final(&order_no, "wallet").await.status,
        OrderStatus::Paid
    );
    let paid = page(
        &client,
        &app.url(&format!("/partner/thanks?order_no={order_no}&status=PAID")),
    )
    .await;
    assert!(paid.contains("data-status=\"PAID\""), "{paid}");
    // Another merchant's order is not the partner's to show.
    let shop_order = app.create_order(&ada, 700).await;
    let other = page(
        &client,
        &app.url(&format!("/partner/thanks?order_no={}", shop_order.order_no)),
    )
    .await;
    assert!(other.contains("not one of our orders"), "{other}");
    app.assert_invariants().await;
}

#[tokio::test]
async fn without_demo_mode_there_is_no_partner_shop() {
    let app = spawn_app().await;
    for (method, path) in [
        ("GET", "/partner"),
        ("POST", "/partner/buy"),
        ("GET", "/partner/thanks"),
    ] {
        let response = reqwest::Client::new()
            .request(method.parse().expect("method"), app.url(path))
            .form(&[("email", "ada@shop.test")])
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{method} {path}");
    }
}
