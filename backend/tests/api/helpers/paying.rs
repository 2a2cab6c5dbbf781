//! Paying: `POST .../pay` as the shopper presses "Pay now", and waiting until
//! the platform has the payment or its result arrived.

use super::TestApp;
use api_types::api::Order;
use reqwest::{Response, StatusCode};
use serde_json::json;
use std::time::Duration;
use uuid::Uuid;

impl TestApp {
    /// `POST /api/orders/{order_no}/pay` with the token.
    pub async fn pay(&self, order_no: &str, token: Uuid) -> Response {
        self.pay_raw(order_no, &json!({"request_token": token}).to_string())
            .await
    }

    /// `POST /api/orders/{order_no}/pay` with the token, naming the payment
    /// `method` (`wallet`, `platform`, or any text a test sends).
    pub async fn pay_by(&self, order_no: &str, token: Uuid, method: &str) -> Response {
        self.pay_raw(
            order_no,
            &json!({"request_token": token, "method": method}).to_string(),
        )
        .await
    }

    /// `POST /api/orders/{order_no}/pay` with any body.
    pub async fn pay_raw(&self, order_no: &str, body: &str) -> Response {
        self.http
            .post(self.url(&format!("/api/orders/{order_no}/pay")))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("request sent")
    }

    /// Pays every order with its token, all at once; the answers in the same order.
    pub async fn pay_at_once(&self, orders: &[(Order, Uuid)]) -> Vec<Response> {
        futures::future::join_all(
            orders
                .iter()
                .map(|(order, token)| self.pay(&order.order_no, *token)),
        )
        .await
    }

    /// Takes a token, pays the order (which must answer 202) and waits until
    /// its result arrives: what a shopper's one press of "Pay now" does.
    pub async fn pay_until_final(&self, order_no: &str) -> Order {
        let token = self.request_token(order_no).await;
        let response = self.pay(order_no, token).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "pay {order_no}");
        self.wait_until_final(order_no).await
    }

    /// [`TestApp::pay_until_final`], naming the payment `method`.
    pub async fn pay_by_until_final(&self, order_no: &str, method: &str) -> Order {
        let token = self.request_token(order_no).await;
        let response = self.pay_by(order_no, token, method).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "pay {order_no}");
        self.wait_until_final(order_no).await
    }

    /// Pays the order as its shopper and waits until the platform has it (the
    /// attempt SUBMITTED, with or without the platform's id); our payment id.
    pub async fn submitted_payment(&self, order: &Order) -> Uuid {
        let token = self.request_token(&order.order_no).await;
        assert_eq!(
            self.pay(&order.order_no, token).await.status(),
            StatusCode::ACCEPTED
        );
        for _ in 0..200 {
            let row: Option<(Uuid,)> = sqlx::query_as(
                "SELECT payment_id FROM payment_attempts WHERE order_no = $1 AND status = 'SUBMITTED'",
            )
            .bind(&order.order_no)
            .fetch_optional(&self.db)
            .await
            .expect("attempt");
            if let Some((payment_id,)) = row {
                return payment_id;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the payment of {} was not handed over", order.order_no);
    }

    /// Pays the order as its shopper (the signed-in [`TestApp::http`]) and
    /// waits until the platform accepted the payment: the attempt is
    /// `SUBMITTED` with the platform's payment id recorded. Callbacks naming
    /// the returned [`Payment`] are about this order's attempt. Needs an app
    /// whose platform posts no callbacks of its own ([`spawn_app_without_callbacks`]).
    pub async fn hand_over(&self, order: &Order) -> Payment {
        assert!(
            self.config.sandbox_drop_callbacks,
            "hand_over needs an app from spawn_app_without_callbacks: the sandbox would post its own callback"
        );
        let token = self.request_token(&order.order_no).await;
        let response = self.pay(&order.order_no, token).await;
        assert_eq!(
            response.status(),
            StatusCode::ACCEPTED,
            "pay {}",
            order.order_no
        );
        for _ in 0..200 {
            let row: Option<(Uuid, Option<String>)> = sqlx::query_as(
                "SELECT payment_id, platform_payment_id FROM payment_attempts
                 WHERE order_no = $1 AND status = 'SUBMITTED'",
            )
            .bind(&order.order_no)
            .fetch_optional(&self.db)
            .await
            .expect("attempt");
            if let Some((payment_id, Some(platform_payment_id))) = row {
                return Payment {
                    order: order.clone(),
                    payment_id,
                    platform_payment_id,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the payment of {} was not handed over within 10 s",
            order.order_no
        );
    }
}

/// A payment as the platform knows it: the order, our payment id (the
/// merchant reference) and the platform's payment id.
#[derive(Debug, Clone)]
pub struct Payment {
    /// The order it pays.
    pub order: Order,
    /// Our payment id (the attempt).
    pub payment_id: Uuid,
    /// The platform's id for it.
    pub platform_payment_id: String,
}

impl Payment {
    /// A payment we never handed over: made-up ids, for an order with no attempt
    /// (or to name another payment than the order's).
    pub fn unsolicited(order: &Order) -> Self {
        Self {
            order: order.clone(),
            payment_id: Uuid::new_v4(),
            platform_payment_id: format!("pay_{}", Uuid::new_v4().simple()),
        }
    }

    /// Three payments that name this one's order but are not this payment:
    /// one the platform never had ([`Payment::unsolicited`]), this one under
    /// that one's merchant reference, and this one under that one's platform
    /// payment id (so a refund of the first also covers the third).
    pub fn impostors(&self) -> [Payment; 3] {
        let unsolicited = Payment::unsolicited(&self.order);
        let other_reference = Payment {
            payment_id: unsolicited.payment_id,
            ..self.clone()
        };
        let other_platform_id = Payment {
            platform_payment_id: unsolicited.platform_payment_id.clone(),
            ..self.clone()
        };
        [unsolicited, other_reference, other_platform_id]
    }
}
