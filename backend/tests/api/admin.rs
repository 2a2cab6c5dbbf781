use crate::helpers::{
    ADMIN_TOKEN, PASSWORD, Payment, TestApp, error_code, new_callback_id, spawn_app,
    spawn_app_with, spawn_app_without_callbacks, success_body,
};
use api_types::api::AccountDetails;
use api_types::{AnomalyKind, CallbackOutcome, LedgerKind};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn create_shopper_returns_201_with_the_shopper_and_their_account() {
    let app = spawn_app().await;

    let account = app.create_shopper(5_000, "EUR").await;

    assert_eq!(app.balance(&account).await, 5_000);
    let (owner, currency): (uuid::Uuid, String) =
        sqlx::query_as("SELECT shopper_id, currency FROM accounts WHERE account_id = $1")
            .bind(account.account_id)
            .fetch_one(&app.db)
            .await
            .expect("account row");
    assert_eq!(owner, account.shopper_id);
    assert_eq!(currency, "EUR");
    let hash: String =
        sqlx::query_scalar("SELECT password_hash FROM shoppers WHERE shopper_id = $1")
            .bind(account.shopper_id)
            .fetch_one(&app.db)
            .await
            .expect("shopper row");
    assert!(
        hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
        "{hash}"
    );
    assert!(!hash.contains(PASSWORD));
}

fn shopper_body() -> serde_json::Value {
    json!({"email": "kim@shop.test", "password": PASSWORD, "balance_cents": 100, "currency": "EUR"})
}

#[tokio::test]
async fn admin_api_answers_401_without_the_right_bearer_token_and_creates_nothing() {
    let app = spawn_app().await;

    let missing = app
        .http
        .post(app.url("/api/admin/shoppers"))
        .json(&shopper_body())
        .send()
        .await
        .expect("sent");
    let wrong = app
        .http
        .post(app.url("/api/admin/shoppers"))
        .bearer_auth("not-the-token")
        .json(&shopper_body())
        .send()
        .await
        .expect("sent");

    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(missing).await, "UNAUTHORIZED");
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.count("accounts").await, 0);
    assert_eq!(app.count("shoppers").await, 0);
}

#[tokio::test]
async fn admin_api_is_404_when_no_admin_token_is_configured() {
    let app = spawn_app_with(|c| c.admin_token = None).await;

    let response = app
        .http
        .post(app.url("/api/admin/shoppers"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&shopper_body())
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.count("shoppers").await, 0);
}

#[tokio::test]
async fn create_shopper_rejects_bad_input_with_400_and_creates_nothing() {
    let app = spawn_app().await;
    let good = shopper_body();
    let with = |field: &str, value: serde_json::Value| {
        let mut body = good.clone();
        body[field] = value;
        body
    };
    let mut without_email = good.clone();
    without_email
        .as_object_mut()
        .expect("object")
        .remove("email");
    for body in [
        with("balance_cents", json!(-1)),
        with("balance_cents", json!(1.5)),
        with("currency", json!("euro")),
        with("email", json!("no-at-sign")),
        with("email", json!("two@@shop.test")),
        with("email", json!("spa ce@shop.test")),
        with("email", json!("@shop.test")),
        with("email", json!("nul\u{0}@shop.test")),
        with("password", json!("short")),
        with("password", json!("x".repeat(300))),
        without_email,
    ] {
        let response = app.post_shopper(&body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(error_code(response).await, "BAD_REQUEST");
    }
    assert_eq!(app.count("accounts").await, 0);
    assert_eq!(app.count("shoppers").await, 0);
}

#[tokio::test]
async fn guessable_passwords_are_refused_with_400_saying_why_and_create_nothing() {
    let app = spawn_app().await;
    let email = "kim.lindqvist@shop.test";
    let body = |password: &str| json!({"email": email, "password": password, "balance_cents": 100, "currency": "EUR"});
    // The attack run's (12 characters, now too short as well), then long
    // enough ones: breached and common, repeats and sequences, and the email's
    // or the product's name with a little added.
    let too_short = [" ".repeat(12), "a".repeat(12), "password1234".to_owned()];
    let guessable = [
        " ".repeat(16),
        "a".repeat(16),
        "password12345678".to_owned(),
        "passwordpassword".to_owned(),
        "123456789012345".to_owned(),
        "qwertyuiopasdfgh".to_owned(),
        "P@ssw0rd2024!!!!".to_owned(),
        email.to_owned(),
        email.to_uppercase(),
        "kimlindqvist1234".to_owned(),
        "exactly-once checkout".to_owned(),
        "Checkout-Checkout-1".to_owned(),
    ];
    let before = app.snapshot().await;

    for (passwords, why) in [
        (&too_short[..], "at least 15 characters"),
        (&guessable[..], "too easy to guess"),
    ] {
        for password in passwords {
            let response = app.post_shopper(&body(password)).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{password:?}");
            let answer: serde_json::Value = response.json().await.expect("JSON");
            assert_eq!(answer["error"]["code"], "BAD_REQUEST", "{password:?}");
            let message = answer["error"]["message"].as_str().expect("a message");
            assert!(message.contains(why), "{password:?}: {message}");
            assert!(
                !message.contains(password.as_str()),
                "the message never repeats the password: {message}"
            );
        }
    }

    assert_eq!(app.count("shoppers").await, 0);
    assert_eq!(app.count("accounts").await, 0);
    assert_eq!(app.snapshot().await, before);
    // Any characters, no composition rules: words nobody guesses from those are taken.
    let taken = app
        .post_shopper(&body("tundra velvet ossify lantern"))
        .await;
    assert_eq!(taken.status(), StatusCode::CREATED);
    assert_eq!(app.count("shoppers").await, 1);
}

#[tokio::test]
async fn an_email_is_taken_whatever_its_case() {
    let app = spawn_app().await;
    assert_eq!(
        app.post_shopper(&shopper_body()).await.status(),
        StatusCode::CREATED
    );
    let mut again = shopper_body();
    again["email"] = json!("KIM@Shop.Test");

    let response = app.post_shopper(&again).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "EMAIL_TAKEN");
    assert_eq!(app.count("shoppers").await, 1);
    assert_eq!(app.count("accounts").await, 1);
}

#[tokio::test]
async fn get_account_returns_the_balance_and_its_ledger_rows() {
    let app = spawn_app_without_callbacks().await;
    let (account, _, payment) = app.handed_over_order(10_000, 2_500).await;
    let callback_id = new_callback_id();
    let applied = app
        .post_callback(&callback_id, &success_body(&payment))
        .await;
    assert_eq!(applied.status(), StatusCode::OK);

    let response = app
        .http
        .get(app.url(&format!("/api/admin/accounts/{}", account.account_id)))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::OK);
    let details: AccountDetails = response.json().await.expect("json");
    assert_eq!(details.balance_cents, 7_500);
    assert_eq!(details.opening_balance_cents, 10_000);
    assert_eq!(details.ledger.len(), 1);
    assert_eq!(details.ledger[0].callback_id, callback_id);
    assert_eq!(details.ledger[0].amount_cents, 2_500);
    assert_eq!(details.ledger[0].kind, LedgerKind::Charge);
}

#[tokio::test]
async fn get_unknown_account_is_404() {
    let app = spawn_app().await;

    let response = app
        .http
        .get(app.url(&format!("/api/admin/accounts/{}", uuid::Uuid::new_v4())))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(response).await, "ACCOUNT_NOT_FOUND");
}

#[tokio::test]
async fn callback_history_shows_how_it_was_applied_every_delivery_and_its_anomalies() {
    let app = spawn_app_without_callbacks().await;
    let (_, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let (id, body) = (new_callback_id(), success_body(&payment));
    let other = Payment {
        platform_payment_id: "pay_another".into(),
        ..payment.clone()
    };
    app.post_callback(&id, &body).await;
    app.post_callback(&id, &body).await;
    app.post_callback(&id, &success_body(&other)).await; // same id, other body: conflict

    let response = app
        .http
        .get(app.url(&format!("/api/admin/callbacks/{id}")))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::OK);
    let history: api_types::api::CallbackHistory = response.json().await.expect("json");
    let processed = history.processed.expect("applied once");
    assert_eq!(processed.outcome, CallbackOutcome::Charged);
    assert_eq!(processed.order_no, order.order_no);
    let outcomes: Vec<(&str, u16)> = history
        .deliveries
        .iter()
        .map(|d| (d.outcome.as_str(), d.http_status))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("CHARGED", 200),
            ("DUPLICATE", 200),
            ("CALLBACK_CONFLICT", 409)
        ]
    );
    assert_eq!(history.anomalies.len(), 1);
    assert_eq!(history.anomalies[0].kind, AnomalyKind::CallbackConflict);

    let listed = app
        .http
        .get(app.url("/api/admin/anomalies"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("sent");
    let listed: Vec<api_types::api::Anomaly> = listed.json().await.expect("json");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].callback_id, id);
}

#[tokio::test]
async fn callback_history_of_an_unknown_id_is_404_and_needs_the_token() {
    let app = spawn_app().await;

    let unknown = app
        .http
        .get(app.url("/api/admin/callbacks/evt_never_seen"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("sent");
    let anonymous = app
        .http
        .get(app.url("/api/admin/anomalies"))
        .send()
        .await
        .expect("sent");

    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_admin_path_segment_that_is_not_utf8_gets_our_json_error_body() {
    let app = spawn_app().await;

    for path in ["/api/admin/accounts/%FF", "/api/admin/callbacks/%C3%28"] {
        let response = app
            .http
            .get(app.url(path))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .expect("sent");

        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(error_code(response).await, "BAD_REQUEST", "{path}");
    }
}

/// Admin requests whose body or path would fail validation, if it were read.
fn malformed_admin_requests(app: &TestApp) -> Vec<reqwest::RequestBuilder> {
    let accounts = app.url("/api/admin/shoppers");
    vec![
        app.http
            .post(&accounts)
            .header("content-type", "application/json")
            .body("{\"balance_cents\":"),
        app.http
            .post(&accounts)
            .json(&json!({"balance_cents": -1, "currency": "EUR"})),
        app.http
            .post(&accounts)
            .json(&json!({"balance_cents": 100, "currency": "euro"})),
        app.http.post(&accounts).body("balance_cents=100"),
        app.http
            .put(app.url("/api/admin/products/%FF"))
            .json(&json!({"name": "", "price_cents": -1, "currency": "EUR"})),
        app.http.get(app.url("/api/admin/accounts/%FF")),
        app.http.get(app.url("/api/admin/accounts/not-a-uuid")),
        app.http.get(app.url("/api/admin/callbacks/%FF")),
    ]
}

#[tokio::test]
async fn admin_api_answers_401_before_reading_the_body_or_path_of_an_unauthenticated_request() {
    // Without the failure limit, so every one of these wrong tokens is judged (tests/limits.rs has the limit).
    let app = spawn_app_with(|c| c.limits.auth_failures_per_ip = 0).await;
    let before = app.snapshot().await;

    for bearer in [None, Some("not-the-token"), Some("")] {
        for request in malformed_admin_requests(&app) {
            let request = match bearer {
                Some(token) => request.bearer_auth(token),
                None => request,
            };
            let response = request.send().await.expect("sent");
            let what = format!("{} {} ({bearer:?})", response.url(), response.status());

            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
            assert_eq!(error_code(response).await, "UNAUTHORIZED", "{what}");
        }
    }

    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("accounts").await, 0);
}

#[tokio::test]
async fn admin_api_is_404_for_malformed_requests_when_no_admin_token_is_configured() {
    let app = spawn_app_with(|c| c.admin_token = None).await;
    let before = app.snapshot().await;

    for request in malformed_admin_requests(&app) {
        let response = request.bearer_auth(ADMIN_TOKEN).send().await.expect("sent");
        let what = format!("{} {}", response.url(), response.status());

        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{what}");
        assert_eq!(error_code(response).await, "NOT_FOUND", "{what}");
    }

    assert_eq!(app.snapshot().await, before);
}
