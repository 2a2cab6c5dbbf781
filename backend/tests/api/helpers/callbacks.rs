//! Platform callbacks: bodies about a [`Payment`], signed with the app's
//! secret (or with any headers) and posted to `/api/payments/callback`.

use super::{Payment, TestApp};
use reqwest::{Response, StatusCode};
use serde_json::json;
use uuid::Uuid;

impl TestApp {
    /// Posts the platform's `payment.succeeded` about `payment`, for its own
    /// amount, under a fresh callback id.
    pub async fn post_success(&self, payment: &Payment) -> Response {
        self.post_callback(&new_callback_id(), &success_body(payment))
            .await
    }

    /// Posts a callback signed now with the app's secret.
    pub async fn post_callback(&self, callback_id: &str, body: &str) -> Response {
        let signed = self
            .webhook
            .sign_now(callback_id, body.as_bytes())
            .expect("signs");
        self.post_callback_with_headers(
            body,
            callback_id,
            &signed.timestamp.to_string(),
            &signed.signature,
        )
        .await
    }

    /// [`TestApp::post_callback`] with owned arguments, for deliveries built in
    /// an iterator and sent all at once; the status.
    pub async fn post_callback_owned(&self, id: String, body: String) -> StatusCode {
        self.post_callback(&id, &body).await.status()
    }

    /// Posts a callback with exactly these signature headers.
    pub async fn post_callback_with_headers(
        &self,
        body: &str,
        callback_id: &str,
        timestamp: &str,
        signature: &str,
    ) -> Response {
        self.http
            .post(self.url("/api/payments/callback"))
            .header("content-type", "application/json")
            .header("webhook-id", callback_id)
            .header("webhook-timestamp", timestamp)
            .header("webhook-signature", signature)
            .body(body.to_owned())
            .send()
            .await
            .expect("request sent")
    }
}

/// A payment result callback body about `payment`, with any amount and currency.
pub fn callback_body(kind: &str, payment: &Payment, amount_cents: i64, currency: &str) -> String {
    json!({
        "type": kind,
        "timestamp": "2026-12-02T10:00:00Z",
        "data": {
            "order_no": payment.order.order_no,
            "amount_cents": amount_cents,
            "currency": currency,
            "payment_id": payment.platform_payment_id,
            "merchant_reference": payment.payment_id,
        }
    })
    .to_string()
}

/// A `payment.succeeded` body for the payment's own amount.
pub fn success_body(payment: &Payment) -> String {
    callback_body(
        "payment.succeeded",
        payment,
        payment.order.amount_cents,
        payment.order.currency.as_str(),
    )
}

/// A fresh callback id.
pub fn new_callback_id() -> String {
    format!("evt_{}", Uuid::new_v4().simple())
}
