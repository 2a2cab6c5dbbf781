//! Request tokens: taken through the API, and looked at where the app keeps
//! them in Redis.

use super::{Account, TestApp};
use api_types::api::{Order, RequestToken};
use reqwest::{Response, StatusCode};
use uuid::Uuid;

impl TestApp {
    /// `POST /api/orders/{order_no}/request-token`.
    pub async fn post_request_token(&self, order_no: &str) -> Response {
        self.http
            .post(self.url(&format!("/api/orders/{order_no}/request-token")))
            .send()
            .await
            .expect("request sent")
    }

    /// A fresh request token for the order.
    pub async fn request_token(&self, order_no: &str) -> Uuid {
        let response = self.post_request_token(order_no).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: RequestToken = response.json().await.expect("token body");
        body.request_token
    }

    /// `count` orders of `amount_cents` on the account, each with a fresh request token.
    pub async fn orders_with_tokens(
        &self,
        account: &Account,
        count: usize,
        amount_cents: i64,
    ) -> Vec<(Order, Uuid)> {
        let mut orders = Vec::with_capacity(count);
        for _ in 0..count {
            let order = self.create_order(account, amount_cents).await;
            let token = self.request_token(&order.order_no).await;
            orders.push((order, token));
        }
        orders
    }

    /// Seconds the request token has left in Redis as a token a pay can still
    /// take; -2 when it is not there, or only its in-flight marker is (taken).
    pub async fn token_ttl(&self, token: Uuid) -> i64 {
        let mut conn = self.redis().await;
        let key = self.token_key(token);
        let value: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("get");
        if takeable(value).is_none() {
            return -2;
        }
        redis::cmd("TTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("ttl")
    }

    /// The Redis key the app keeps `token` under.
    pub fn token_key(&self, token: Uuid) -> String {
        format!(
            "{}token:{}",
            self.config.redis_key_prefix,
            token.as_hyphenated()
        )
    }
}

/// A token key's value if a pay could still take it: `None` when the key is
/// gone or holds only the in-flight marker a pay leaves when it takes the token.
pub fn takeable(value: Option<String>) -> Option<String> {
    value.filter(|value| !value.starts_with("inflight:"))
}
