//! Refunds: the merchant's refund API (asked for, listed, waited on until
//! settled) and the automatic ones, the money the checkout could not book
//! given back, as the database records them.

use super::{MERCHANT_KEY, TestApp};
use api_types::api::{Order, Refund};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// `POST /api/merchant/orders/{order_no}/refunds` with this key (none when `None`).
pub async fn post_refund(
    app: &TestApp,
    order_no: &str,
    key: Option<&str>,
    body: &Value,
) -> Response {
    let mut request = app
        .http
        .post(app.url(&format!("/api/merchant/orders/{order_no}/refunds")))
        .bearer_auth(MERCHANT_KEY)
        .json(body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.expect("request sent")
}

/// The order's refunds as the merchant lists them, oldest first.
pub async fn refunds_of(app: &TestApp, order_no: &str) -> Vec<Refund> {
    let response = app
        .http
        .get(app.url(&format!("/api/merchant/orders/{order_no}/refunds")))
        .bearer_auth(MERCHANT_KEY)
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("refunds")
}

/// Waits (up to 20 s) until no refund of the order is PENDING.
pub async fn wait_until_refunds_settle(app: &TestApp, order_no: &str) -> Vec<Refund> {
    let started = Instant::now();
    loop {
        let refunds = refunds_of(app, order_no).await;
        if refunds
            .iter()
            .all(|r| r.status != api_types::RefundStatus::Pending)
        {
            return refunds;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "refunds still pending: {refunds:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl TestApp {
    /// Asks the merchant API for a refund of `amount_cents` of the order, for
    /// `reason`, under a fresh `Idempotency-Key`.
    pub async fn refund(&self, order_no: &str, amount_cents: i64, reason: &str) -> Response {
        let key = Uuid::new_v4().to_string();
        let body = json!({"amount_cents": amount_cents, "reason": reason});
        post_refund(self, order_no, Some(&key), &body).await
    }

    /// A refund asked for as [`TestApp::refund`] asks, accepted (202), then
    /// waited on until no refund of the order is PENDING: the order's refunds.
    pub async fn refund_settled(
        &self,
        order_no: &str,
        amount_cents: i64,
        reason: &str,
    ) -> Vec<Refund> {
        let response = self.refund(order_no, amount_cents, reason).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        wait_until_refunds_settle(self, order_no).await
    }

    /// The automatic refunds of an order, waiting (up to 20 s) until none is
    /// PENDING: the platform accepted and settled each, or refused it.
    pub async fn settled_automatic_refunds(&self, order_no: &str) -> Vec<AutomaticRefund> {
        self.automatic_refunds_once(order_no, "status <> 'PENDING'")
            .await
    }

    /// The automatic refunds of an order, waiting (up to 20 s) until the
    /// platform accepted (or refused) each: for apps whose platform posts no
    /// callbacks, where a refund stays PENDING until the query asks.
    pub async fn handed_over_automatic_refunds(&self, order_no: &str) -> Vec<AutomaticRefund> {
        self.automatic_refunds_once(order_no, "status <> 'PENDING' OR submitted_at IS NOT NULL")
            .await
    }

    async fn automatic_refunds_once(&self, order_no: &str, done: &str) -> Vec<AutomaticRefund> {
        let started = std::time::Instant::now();
        loop {
            let refunds: Vec<AutomaticRefund> = sqlx::query_as(&format!(
                "SELECT platform_payment_id, amount_cents, status, failure_reason, ({done}) AS done
                 FROM refunds WHERE order_no = $1 AND requested_by = 'automatic' ORDER BY created_at"
            ))
            .bind(order_no)
            .fetch_all(&self.db)
            .await
            .expect("automatic refunds");
            if refunds.iter().all(|refund| refund.done) {
                return refunds;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "automatic refunds still pending: {refunds:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Checks that the unbookable success of `platform_payment_id` started
    /// exactly one automatic refund of the order's amount, and that once the
    /// platform accepted or refused it the order's anomalies are `cause` (as often as it was delivered
    /// under its own callback ids) followed by `REFUND_FAILED` exactly when the
    /// platform refused or failed the refund. Returns the refund.
    pub async fn assert_given_back_once(
        &self,
        order: &Order,
        platform_payment_id: &str,
        cause: &[&str],
    ) -> AutomaticRefund {
        let refunds = self.handed_over_automatic_refunds(&order.order_no).await;
        let [refund] = refunds.as_slice() else {
            panic!("expected one automatic refund, found {refunds:?}");
        };
        assert_eq!(refund.platform_payment_id, platform_payment_id);
        assert_eq!(refund.amount_cents, order.amount_cents);
        let mut expected: Vec<String> = cause.iter().map(|&kind| kind.to_owned()).collect();
        if refund.status == "FAILED" {
            expected.push("REFUND_FAILED".into());
        }
        let mut anomalies = self.anomalies(&order.order_no).await;
        anomalies.sort();
        expected.sort();
        assert_eq!(anomalies, expected, "{refund:?}");
        refund.clone()
    }
}

/// An automatic refund as the database has it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AutomaticRefund {
    /// The platform payment it gives back.
    pub platform_payment_id: String,
    /// How much.
    pub amount_cents: i64,
    /// PENDING, SUCCEEDED or FAILED.
    pub status: String,
    /// The platform's refusal, when it refused it outright.
    pub failure_reason: Option<String>,
    /// Whether it got as far as the caller waits for.
    #[sqlx(default)]
    pub done: bool,
}
