//! Products and orders: placed through the shopper's and the merchant's API,
//! and read back as the shopper's page reads them.

use super::{ADMIN_TOKEN, Account, MERCHANT_KEY, TestApp};
use api_types::api::Order;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

impl TestApp {
    /// Adds or reprices a product through the admin API.
    pub async fn put_product(&self, sku: &str, name: &str, price_cents: i64, currency: &str) {
        let response = self
            .http
            .put(self.url(&format!("/api/admin/products/{sku}")))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"name": name, "price_cents": price_cents, "currency": currency}))
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status(), StatusCode::OK);
    }

    /// `POST /api/orders` with any JSON and a fresh `Idempotency-Key`, as the signed-in shopper.
    pub async fn post_order(&self, body: &Value) -> Response {
        self.http
            .post(self.url("/api/orders"))
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// `POST /api/merchant/orders` with any JSON and this `Idempotency-Key`.
    pub async fn post_merchant_order(&self, key: &str, body: &Value) -> Response {
        self.http
            .post(self.url("/api/merchant/orders"))
            .bearer_auth(MERCHANT_KEY)
            .header("idempotency-key", key)
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// An order of `amount_cents` on the account, placed through the merchant API.
    pub async fn create_order(&self, account: &Account, amount_cents: i64) -> Order {
        let response = self
            .post_merchant_order(
                &Uuid::new_v4().to_string(),
                &json!({
                    "shopper_id": account.shopper_id,
                    "amount_cents": amount_cents,
                    "currency": account.currency,
                    "description": "test order",
                }),
            )
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        response.json().await.expect("order body")
    }

    /// A shopper with `balance` EUR cents and one PENDING order of `amount`,
    /// [`TestApp::http`] signed in as them.
    pub async fn account_with_order(&self, balance: i64, amount: i64) -> (Account, Order) {
        let account = self.create_account(balance, "EUR").await;
        let order = self.create_order(&account, amount).await;
        (account, order)
    }

    /// A CNY shopper (WeChat Pay and Alipay take yuan only) with one PENDING
    /// order of `amount` fen, [`TestApp::http`] signed in as them.
    pub async fn cny_order(&self, balance: i64, amount: i64) -> (Account, Order) {
        let account = self.create_account(balance, "CNY").await;
        let order = self.create_order(&account, amount).await;
        (account, order)
    }

    /// `GET /api/orders/{order_no}`.
    pub async fn get_order(&self, order_no: &str) -> Response {
        self.http
            .get(self.url(&format!("/api/orders/{order_no}")))
            .send()
            .await
            .expect("request sent")
    }

    /// The order as the API reports it now.
    pub async fn order(&self, order_no: &str) -> Order {
        let response = self.get_order(order_no).await;
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.expect("order body")
    }

    /// Waits until the order leaves PENDING (the sandbox's callback arrived).
    pub async fn wait_until_final(&self, order_no: &str) -> Order {
        for _ in 0..200 {
            let order = self.order(order_no).await;
            if order.status.is_final() {
                return order;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("order {order_no} stayed PENDING for 10 s");
    }

    /// The payment link the platform gave for the attempt, once the shopper's
    /// page can draw it: `payment-code.svg` answers an SVG.
    pub async fn qr_code_shown(&self, order: &Order, payment_id: Uuid) -> String {
        let code: Option<String> =
            sqlx::query_scalar("SELECT qr_code FROM payment_attempts WHERE payment_id = $1")
                .bind(payment_id)
                .fetch_one(&self.db)
                .await
                .expect("attempt");
        let code = code.expect("the hand-over gave a payment link");
        let svg = self
            .get(&format!("/api/orders/{}/payment-code.svg", order.order_no))
            .await;
        assert_eq!(svg.status(), StatusCode::OK);
        assert_eq!(svg.headers()["content-type"], "image/svg+xml");
        assert!(svg.text().await.expect("body").contains("<svg"));
        code
    }
}
