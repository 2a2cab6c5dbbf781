//! The payment page's calls of the checkout API, on the client code it shares
//! with the operator console ([`web_client`]): every call answers
//! `Result<T, ApiError>`, a 2xx body decoded into the `api_types` DTO or an
//! [`ApiError`] for everything else.
//!
//! `trunk serve` proxies the page's `/api/...` requests to the backend in
//! development; the backend serves the page itself in production and in the
//! browser tests.

use api_types::api::{
    CreateOrder, Me, Order, PayAccepted, PayRequest, PlatformInfo, Product, RequestToken, SignIn,
};
use api_types::{Currency, RefundRequester, RefundStatus};
use serde::Deserialize;
use web_client::{Request, call, encode, encode_component, send};

pub use web_client::ApiError;

/// How long a read (`GET`) may take before it counts as a network failure.
const READ_TIMEOUT_MS: u32 = 10_000;
/// How long a write may take. A pay request that times out is retried with the
/// same token, which the backend answers by replaying its first answer.
const WRITE_TIMEOUT_MS: u32 = 10_000;

/// `GET /api/platform`: which payment platform takes the payments (the page
/// marks itself "sandbox" when no money moves).
pub async fn platform() -> Result<PlatformInfo, ApiError> {
    call(Request::get("/api/platform"), None, READ_TIMEOUT_MS).await
}

/// `POST /api/session`: signs in; the answer sets the session cookie. Its body
/// (a [`api_types::api::SessionInfo`]) is not read: the page moves on at once.
pub async fn sign_in(body: &SignIn) -> Result<(), ApiError> {
    let body = encode(body)?;
    send(Request::post("/api/session"), Some(body), WRITE_TIMEOUT_MS).await
}

/// `DELETE /api/session`: signs out (204); the session is deleted on the server.
pub async fn sign_out() -> Result<(), ApiError> {
    send(
        Request::delete("/api/session"),
        Some(String::new()),
        WRITE_TIMEOUT_MS,
    )
    .await
}

/// `GET /api/me`: the signed-in shopper and their accounts (401 when signed out).
pub async fn me() -> Result<Me, ApiError> {
    call(Request::get("/api/me"), None, READ_TIMEOUT_MS).await
}

/// `GET /api/products`: the catalogue.
pub async fn products() -> Result<Vec<Product>, ApiError> {
    call(Request::get("/api/products"), None, READ_TIMEOUT_MS).await
}

/// `GET /api/orders`: the signed-in shopper's newest orders.
pub async fn orders() -> Result<Vec<Order>, ApiError> {
    call(Request::get("/api/orders"), None, READ_TIMEOUT_MS).await
}

/// `POST /api/orders` with `Idempotency-Key: key`: places an order.
///
/// Safe to repeat with the same key and body: the backend answers with the
/// order it placed the first time instead of placing another.
pub async fn create_order(body: &CreateOrder, key: uuid::Uuid) -> Result<Order, ApiError> {
    let body = encode(body)?;
    let request = Request::post("/api/orders").header("idempotency-key", &key.to_string());
    call(request, Some(body), WRITE_TIMEOUT_MS).await
}

/// `GET /api/orders/{order_no}`: the order as it stands now.
pub async fn order(order_no: &str) -> Result<Order, ApiError> {
    let url = format!("/api/orders/{}", encode_component(order_no));
    call(Request::get(&url), None, READ_TIMEOUT_MS).await
}

/// A refund as the receipt reads it: the fields of [`api_types::api::Refund`]
/// the page shows, under the same names. The answer's other fields (refund
/// number, reason, timestamps) are skipped unread, which keeps their decoding
/// out of the page (see the size budget in `scripts/build-frontend.sh`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RefundSummary {
    /// Amount given back, in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// Where it stands.
    #[serde(deserialize_with = "by_name")]
    pub status: RefundStatus,
    /// Who asked; `automatic` for a payment the checkout could not book.
    #[serde(deserialize_with = "by_name")]
    pub requested_by: RefundRequester,
}

/// Reads one of the API's named values (`PENDING`, `automatic`, ...) through
/// its `FromStr`: the same names as its derived `Deserialize`, in a fraction
/// of the code.
fn by_name<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr,
{
    let name = String::deserialize(deserializer)?;
    name.parse()
        .map_err(|_| serde::de::Error::custom("an unknown name"))
}

/// `GET /api/orders/{order_no}/refunds`: the order's refunds, oldest first.
pub async fn refunds(order_no: &str) -> Result<Vec<RefundSummary>, ApiError> {
    let url = format!("/api/orders/{}/refunds", encode_component(order_no));
    call(Request::get(&url), None, READ_TIMEOUT_MS).await
}

/// `POST /api/orders/{order_no}/request-token`: a fresh one-time pay token.
pub async fn request_token(order_no: &str) -> Result<RequestToken, ApiError> {
    let url = format!("/api/orders/{}/request-token", encode_component(order_no));
    call(Request::post(&url), Some(String::new()), WRITE_TIMEOUT_MS).await
}

/// `POST /api/orders/{order_no}/pay`: starts the payment with the request's token.
///
/// Safe to repeat with the same token: the backend replays its first answer.
pub async fn pay(order_no: &str, body: &PayRequest) -> Result<PayAccepted, ApiError> {
    let url = format!("/api/orders/{}/pay", encode_component(order_no));
    let body = encode(body)?;
    call(Request::post(&url), Some(body), WRITE_TIMEOUT_MS).await
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn every_refund_the_api_answers_reads_as_the_receipts_summary() {
        for &status in RefundStatus::ALL {
            for &requested_by in RefundRequester::ALL {
                let refund = api_types::api::Refund {
                    refund_no: "rfd_0123456789abcdef0123456789abcdef".into(),
                    order_no: "ORD1".into(),
                    amount_cents: 750,
                    currency: Currency::EUR,
                    status,
                    reason: "One cup arrived broken".into(),
                    requested_by,
                    failure_reason: None,
                    created_at: time::macros::datetime!(2025-01-31 15:00:00 UTC),
                    settled_at: None,
                };
                let json = serde_json::to_string(&[refund]).expect("a refund serialises");
                let read: Vec<RefundSummary> = serde_json::from_str(&json).expect("and reads back");
                assert_eq!(
                    read,
                    vec![RefundSummary {
                        amount_cents: 750,
                        currency: Currency::EUR,
                        status,
                        requested_by,
                    }]
                );
            }
        }
        let unknown =
            r#"{"amount_cents":1,"currency":"EUR","status":"LOST","requested_by":"merchant"}"#;
        assert!(serde_json::from_str::<RefundSummary>(unknown).is_err());
    }
}
