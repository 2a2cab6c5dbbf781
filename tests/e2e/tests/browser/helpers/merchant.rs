//! Setting the scene through the API, as the merchant and the platform would:
//! orders of exact amounts, refunds, and callbacks signed with the test
//! backend's secret.

use super::{MERCHANT_API_KEY, TestApp, WEBHOOK_SECRET};
use api_types::RefundStatus;
use api_types::api::{CreateMerchantOrder, CreateRefund, Order, Refund};
use serde_json::Value;
use uuid::Uuid;

impl TestApp {
    /// Places a PENDING order of exactly `amount_cents` (in the demo's
    /// currency) for Ada, as a merchant would (`POST /api/merchant/orders`).
    pub async fn create_order(&self, amount_cents: i64) -> Order {
        let body = CreateMerchantOrder {
            shopper_id: self.shopper_id,
            amount_cents,
            currency: self.currency,
            description: format!("E2E order of {amount_cents} cents"),
            merchant_reference: None,
            return_url: None,
            cancel_url: None,
        };
        let answer = self
            .http
            .post(format!("{}/api/merchant/orders", self.address))
            .bearer_auth(MERCHANT_API_KEY)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .await
            .expect("POST /api/merchant/orders answers");
        assert_eq!(
            answer.status(),
            reqwest::StatusCode::CREATED,
            "merchant order: {}",
            answer.text().await.unwrap_or_default()
        );
        answer.json().await.expect("an Order")
    }

    /// Gives `amount_cents` of a paid order back, as the merchant would
    /// (`POST /api/merchant/orders/{order_no}/refunds`): the refund, PENDING
    /// until the sandbox platform's refund callback settles it.
    pub async fn refund(&self, order_no: &str, amount_cents: i64, reason: &str) -> Refund {
        let body = CreateRefund {
            amount_cents,
            reason: reason.to_owned(),
        };
        let answer = self
            .http
            .post(format!(
                "{}/api/merchant/orders/{order_no}/refunds",
                self.address
            ))
            .bearer_auth(MERCHANT_API_KEY)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .await
            .expect("POST /api/merchant/orders/{order_no}/refunds answers");
        assert_eq!(
            answer.status(),
            reqwest::StatusCode::ACCEPTED,
            "merchant refund: {}",
            answer.text().await.unwrap_or_default()
        );
        answer.json().await.expect("a Refund")
    }

    /// Delivers a callback signed with [`WEBHOOK_SECRET`] under `callback_id`,
    /// as the platform would (`POST /api/payments/callback`): the status and
    /// the JSON answer.
    pub async fn post_callback(&self, callback_id: &str, body: &Value) -> (u16, Value) {
        let secret =
            callback_signing::CallbackSecret::parse(WEBHOOK_SECRET).expect("a valid secret");
        let body = body.to_string();
        let signed = secret
            .sign_now(callback_id, body.as_bytes())
            .expect("a UTF-8 body");
        let mut request = self
            .http
            .post(format!("{}/api/payments/callback", self.address))
            .header("content-type", "application/json");
        for (name, value) in signed.pairs() {
            request = request.header(name, value);
        }
        let answer = request
            .body(body)
            .send()
            .await
            .expect("POST /api/payments/callback answers");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    /// The order's refunds as the merchant reads them
    /// (`GET /api/merchant/orders/{order_no}/refunds`), oldest first.
    pub async fn merchant_refunds(&self, order_no: &str) -> Vec<Refund> {
        let answer = self
            .http
            .get(format!(
                "{}/api/merchant/orders/{order_no}/refunds",
                self.address
            ))
            .bearer_auth(MERCHANT_API_KEY)
            .send()
            .await
            .expect("GET /api/merchant/orders/{order_no}/refunds answers");
        assert_eq!(answer.status(), reqwest::StatusCode::OK, "merchant refunds");
        answer.json().await.expect("a list of refunds")
    }

    /// Waits until the merchant API shows the refund `refund_no` as `status`
    /// (the sandbox settles a refund after its callback delay).
    pub async fn wait_for_refund(&self, order_no: &str, refund_no: &str, status: RefundStatus) {
        self.eventually(&format!("refund {refund_no} to be {status}"), || async {
            self.merchant_refunds(order_no)
                .await
                .iter()
                .any(|r| r.refund_no == refund_no && r.status == status)
                .then_some(())
        })
        .await;
    }
}
