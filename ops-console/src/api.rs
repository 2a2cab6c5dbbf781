//! The console's calls of the backend's `/api/ops/*` API, on the client code it
//! shares with the payment page ([`web_client`]): every non-2xx answer becomes
//! an [`ApiError`] carrying the API's error body.
//!
//! The operator's credential is the session cookie the sign-in sets (the same
//! `checkout_session` cookie as shoppers'); the admin token is sent once, in the
//! sign-in body, and kept nowhere.

use api_types::AnomalyKind;
use api_types::api::Reconciliation;
use api_types::merchant::Merchant;
use api_types::ops::{
    Activity, AnomalyState, Books, OperatorInfo, OperatorSignIn, OrderTimeline, ResolveAnomaly,
    ReviewAnomaly, SearchHit,
};
use uuid::Uuid;
use web_client::{Request, call, encode, encode_component, send};

pub use web_client::ApiError;

/// How long a call may take before it counts as a network failure.
const TIMEOUT_MS: u32 = 10_000;

/// One line for the operator: the server's code and message, or what failed.
pub fn explain(err: &ApiError) -> String {
    match err {
        ApiError::Server { body, .. } => format!("{}: {}", body.error.code, body.error.message),
        ApiError::Http { status } => format!("The server answered HTTP {status}."),
        ApiError::Network(_) => "No answer from the server: check the connection.".to_owned(),
        ApiError::Decode(why) => format!("The server's answer could not be read: {why}"),
    }
}

/// `POST /api/ops/session`: exchanges the admin token for an operator session.
pub async fn sign_in(body: &OperatorSignIn) -> Result<OperatorInfo, ApiError> {
    call(
        Request::post("/api/ops/session"),
        Some(encode(body)?),
        TIMEOUT_MS,
    )
    .await
}

/// `DELETE /api/ops/session`: ends the operator session (204).
pub async fn sign_out() -> Result<(), ApiError> {
    send(
        Request::delete("/api/ops/session"),
        Some(String::new()),
        TIMEOUT_MS,
    )
    .await
}

/// `GET /api/ops/me`: who is signed in (401 `UNAUTHENTICATED` without an operator session).
pub async fn me() -> Result<OperatorInfo, ApiError> {
    call(Request::get("/api/ops/me"), None, TIMEOUT_MS).await
}

/// `GET /api/ops/anomalies`: the queue, newest first.
pub async fn anomalies(
    state: AnomalyState,
    kind: Option<AnomalyKind>,
    merchant: Option<Uuid>,
) -> Result<Vec<ReviewAnomaly>, ApiError> {
    call(
        Request::get(&anomalies_url(state, kind, merchant)),
        None,
        TIMEOUT_MS,
    )
    .await
}

/// The queue's URL for these filters.
pub fn anomalies_url(
    state: AnomalyState,
    kind: Option<AnomalyKind>,
    merchant: Option<Uuid>,
) -> String {
    let mut url = format!("/api/ops/anomalies?state={}&limit=200", state_name(state));
    if let Some(kind) = kind {
        url.push_str("&kind=");
        url.push_str(kind.as_str());
    }
    if let Some(merchant) = merchant {
        url.push_str(&format!("&merchant_id={merchant}"));
    }
    url
}

/// The wire spelling of a queue filter.
pub fn state_name(state: AnomalyState) -> &'static str {
    match state {
        AnomalyState::Open => "open",
        AnomalyState::Resolved => "resolved",
        AnomalyState::All => "all",
    }
}

/// `GET /api/ops/anomalies/{anomaly_id}`.
pub async fn anomaly(anomaly_id: i64) -> Result<ReviewAnomaly, ApiError> {
    call(
        Request::get(&format!("/api/ops/anomalies/{anomaly_id}")),
        None,
        TIMEOUT_MS,
    )
    .await
}

/// `POST /api/ops/anomalies/{anomaly_id}/resolve`: the resolved anomaly.
pub async fn resolve(anomaly_id: i64, note: &str) -> Result<ReviewAnomaly, ApiError> {
    let body = encode(&ResolveAnomaly {
        note: note.to_owned(),
    })?;
    let url = format!("/api/ops/anomalies/{anomaly_id}/resolve");
    call(Request::post(&url), Some(body), TIMEOUT_MS).await
}

/// `GET /api/ops/orders/{order_no}/timeline`.
pub async fn timeline(order_no: &str) -> Result<OrderTimeline, ApiError> {
    let url = format!("/api/ops/orders/{}/timeline", encode_component(order_no));
    call(Request::get(&url), None, TIMEOUT_MS).await
}

/// `GET /api/ops/search?q=...&merchant_id=...` (either may be left out, not both).
pub async fn search(query: &str, merchant: Option<Uuid>) -> Result<Vec<SearchHit>, ApiError> {
    call(Request::get(&search_url(query, merchant)), None, TIMEOUT_MS).await
}

/// The search's URL: the text (when any) and the merchant (when chosen).
pub fn search_url(query: &str, merchant: Option<Uuid>) -> String {
    let mut params = Vec::new();
    if !query.is_empty() {
        params.push(format!("q={}", encode_component(query)));
    }
    if let Some(merchant) = merchant {
        params.push(format!("merchant_id={merchant}"));
    }
    format!("/api/ops/search?{}", params.join("&"))
}

/// `GET /api/ops/activity`: the last hour, minute by minute.
pub async fn activity() -> Result<Activity, ApiError> {
    call(Request::get("/api/ops/activity"), None, TIMEOUT_MS).await
}

/// `GET /api/ops/books`: every ledger account's balance.
pub async fn books() -> Result<Books, ApiError> {
    call(Request::get("/api/ops/books"), None, TIMEOUT_MS).await
}

/// `GET /api/ops/merchants`: every merchant with its keys' prefixes.
pub async fn merchants() -> Result<Vec<Merchant>, ApiError> {
    call(Request::get("/api/ops/merchants"), None, TIMEOUT_MS).await
}

/// `GET /api/ops/reconciliations/{date}`.
pub async fn reconciliation(date: &str) -> Result<Reconciliation, ApiError> {
    let url = format!("/api/ops/reconciliations/{}", encode_component(date));
    call(Request::get(&url), None, TIMEOUT_MS).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merchant_narrows_the_queue_and_the_search() {
        let merchant = Uuid::from_u128(2);
        assert_eq!(
            anomalies_url(AnomalyState::Open, None, Some(merchant)),
            "/api/ops/anomalies?state=open&limit=200&merchant_id=00000000-0000-0000-0000-000000000002"
        );
        assert_eq!(
            search_url("", Some(merchant)),
            "/api/ops/search?merchant_id=00000000-0000-0000-0000-000000000002"
        );
        assert_eq!(search_url("a b&c", None), "/api/ops/search?q=a%20b%26c");
    }

    #[test]
    fn the_queue_url_carries_its_filters() {
        assert_eq!(
            anomalies_url(AnomalyState::Open, None, None),
            "/api/ops/anomalies?state=open&limit=200"
        );
        assert_eq!(
            anomalies_url(AnomalyState::All, Some(AnomalyKind::CallbackConflict), None),
            "/api/ops/anomalies?state=all&limit=200&kind=CALLBACK_CONFLICT"
        );
    }
}
