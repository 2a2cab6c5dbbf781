//! What the backend writes to its logs, run as a deploy runs it: the real binary
//! as a process, its stdout and stderr captured.

use backend::env;
use backend::tokens::TokenFingerprint;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use testkit::{BackendProcess, TestDatabase};
use uuid::Uuid;

const ADMIN: &str = "logs-test-admin-token-of-32-characters";
const MERCHANT: &str = "logs-test-merchant-key-of-32-characters";

#[tokio::test]
async fn the_logs_of_a_paid_order_name_its_request_token_only_by_its_fingerprint() {
    let database = TestDatabase::new("checkout_logs");
    let log = testkit::target_dir().join(format!("test-logs/{}.log", database.name()));
    let mut backend = BackendProcess::start(
        Path::new(env!("CARGO_BIN_EXE_backend")),
        vec![
            (env::PLATFORM.into(), "sandbox".into()),
            (env::DATABASE_URL.into(), database.url()),
            (env::REDIS_URL.into(), testkit::redis_url()),
            (
                env::REDIS_KEY_PREFIX.into(),
                format!("test:{}:", Uuid::new_v4().simple()),
            ),
            (env::ADMIN_TOKEN.into(), ADMIN.into()),
            (env::MERCHANT_API_KEY.into(), MERCHANT.into()),
            (env::SANDBOX_CALLBACK_DELAY_MS.into(), "50".into()),
            // Debug, not just info: an operator turning logging up must not leak tokens either.
            (env::RUST_LOG.into(), "debug".into()),
        ],
        log.clone(),
    )
    .await
    .expect("the backend starts");
    let http = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .expect("client");
    let url = |path: &str| format!("{}{path}", backend.url());
    let post = |path: &str, body: Value| http.post(url(path)).json(&body).send();
    let password = "logs-test-password-never-logged";
    let shopper: Value = http
        .post(url("/api/admin/shoppers"))
        .bearer_auth(ADMIN)
        .json(&json!({"email": "logs@shop.test", "password": password, "balance_cents": 10_000, "currency": "EUR"}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("shopper");
    let signed_in = post(
        "/api/session",
        json!({"email": "logs@shop.test", "password": password}),
    )
    .await
    .expect("sent");
    assert_eq!(signed_in.status(), StatusCode::OK);
    let session_id = signed_in
        .cookies()
        .find(|cookie| cookie.name() == "checkout_session")
        .map(|cookie| cookie.value().to_owned())
        .expect("a session cookie");
    let order_body = |amount: i64| json!({"shopper_id": shopper["shopper_id"], "amount_cents": amount, "currency": "EUR", "description": "logs"});
    let merchant_order = |amount: i64| {
        http.post(url("/api/merchant/orders"))
            .bearer_auth(MERCHANT)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&order_body(amount))
            .send()
    };
    let order: Value = merchant_order(2_000)
        .await
        .expect("sent")
        .json()
        .await
        .expect("order");
    let other: Value = merchant_order(3_000)
        .await
        .expect("sent")
        .json()
        .await
        .expect("order");
    let (order_no, other_no) = (
        order["order_no"].as_str().expect("order_no"),
        other["order_no"].as_str().expect("order_no"),
    );
    let issued: Value = post(&format!("/api/orders/{order_no}/request-token"), json!({}))
        .await
        .expect("sent")
        .json()
        .await
        .expect("token");
    let token: Uuid = issued["request_token"]
        .as_str()
        .and_then(|text| text.parse().ok())
        .expect("a request token");
    let pay = |order_no: &str| {
        post(
            &format!("/api/orders/{order_no}/pay"),
            json!({"request_token": token}),
        )
    };

    // Every path a token takes: refused on another order, paid, replayed.
    let refused = pay(other_no).await.expect("sent");
    let paid = pay(order_no).await.expect("sent");
    let replayed = pay(order_no).await.expect("sent");
    assert_eq!(refused.status(), StatusCode::CONFLICT);
    assert_eq!(paid.status(), StatusCode::ACCEPTED);
    assert_eq!(replayed.status(), StatusCode::ACCEPTED);
    let mut status = String::new();
    for _ in 0..200 {
        let order: Value = http
            .get(url(&format!("/api/orders/{order_no}")))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("order");
        status = order["status"].as_str().unwrap_or_default().to_owned();
        if status != "PENDING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "PAID");
    backend.terminate();

    let output = std::fs::read_to_string(&log).expect("the backend's output");
    let lowercase = output.to_lowercase();
    let where_ = log.display();
    assert!(
        output.contains("payment attempt created")
            && output.contains("token presented for another order")
            && output.contains("shopper signed in"),
        "the output holds the pay's log lines: {where_}"
    );
    for form in [
        token.as_hyphenated().to_string(),
        token.simple().to_string(),
    ] {
        assert!(
            !lowercase.contains(&form),
            "the token {form} is in {where_}"
        );
    }
    // The session id in the cookie's spelling and in `Id`'s Debug spelling (an i128).
    let session_number = session_id
        .parse::<tower_sessions::session::Id>()
        .expect("a session id")
        .0
        .to_string();
    for secret in [password, &session_id, &session_number, ADMIN, MERCHANT] {
        assert!(!output.contains(secret), "a secret is in {where_}");
    }
    let fingerprint = TokenFingerprint::of(token).to_string();
    assert!(
        output.contains(&fingerprint),
        "the fingerprint {fingerprint} is not in {where_}"
    );
    let _ = std::fs::remove_file(&log);
}
