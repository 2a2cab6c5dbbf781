use crate::helpers::{
    TestApp, callback_body, error_code, new_callback_id, spawn_app, success_body,
};
use api_types::OrderStatus;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;

async fn ack(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, response.json().await.expect("json"))
}

#[tokio::test]
async fn a_success_callback_charges_once_marks_paid_and_answers_success() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;

    let (status, body) = ack(app
        .post_callback(&new_callback_id(), &success_body(&order))
        .await)
    .await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        serde_json::json!({"code": "SUCCESS", "duplicate": false})
    );
    let order = app.order(&order.order_no).await;
    assert_eq!(order.status, OrderStatus::Paid);
    assert!(order.paid_at.is_some());
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(app.count("callback_deliveries").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_same_callback_again_is_a_duplicate_that_changes_nothing() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let (id, body) = (new_callback_id(), success_body(&order));
    app.post_callback(&id, &body).await;
    let before = app.snapshot().await;

    let (status, answer) = ack(app.post_callback(&id, &body).await).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        answer,
        serde_json::json!({"code": "SUCCESS", "duplicate": true})
    );
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(
        app.count("callback_deliveries").await,
        2,
        "both deliveries are logged"
    );
}

async fn assert_refused_unsigned(
    app: &TestApp,
    body: &str,
    id: &str,
    timestamp: &str,
    signature: &str,
) {
    let response = app
        .post_callback_with_headers(body, id, timestamp, signature)
        .await;
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "signature {signature:?} ts {timestamp}"
    );
    assert_eq!(error_code(response).await, "SIGNATURE_INVALID");
}

#[tokio::test]
async fn callbacks_with_a_bad_or_missing_signature_or_stale_timestamp_are_401_and_write_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    let before = app.snapshot().await;
    let (id, body) = (new_callback_id(), success_body(&order));
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let good = app
        .webhook
        .sign(&id, now, body.as_bytes())
        .expect("signs")
        .signature;
    let other_key = callback_signing::CallbackSecret::generate();

    // Wrong secret, tampered body, empty v1 signature, garbage, wrong version.
    let foreign = other_key
        .sign(&id, now, body.as_bytes())
        .expect("signs")
        .signature;
    assert_refused_unsigned(&app, &body, &id, &now.to_string(), &foreign).await;
    assert_refused_unsigned(
        &app,
        &body.replace("2500", "1"),
        &id,
        &now.to_string(),
        &good,
    )
    .await;
    assert_refused_unsigned(&app, &body, &id, &now.to_string(), "v1,").await;
    assert_refused_unsigned(&app, &body, &id, &now.to_string(), "garbage").await;
    assert_refused_unsigned(
        &app,
        &body,
        &id,
        &now.to_string(),
        &good.replace("v1,", "v2,"),
    )
    .await;
    // Signed with another id than the header says.
    assert_refused_unsigned(&app, &body, "evt_other", &now.to_string(), &good).await;
    // Timestamps more than 5 minutes old or ahead, correctly signed for them.
    // Ten seconds past the tolerance, from a fresh clock reading, so a slow
    // machine cannot carry a "future" timestamp back inside the window.
    for skew in [-310, 310, -3_600] {
        let ts = time::OffsetDateTime::now_utc().unix_timestamp() + skew;
        let signature = app
            .webhook
            .sign(&id, ts, body.as_bytes())
            .expect("signs")
            .signature;
        assert_refused_unsigned(&app, &body, &id, &ts.to_string(), &signature).await;
    }
    assert_refused_unsigned(&app, &body, &id, "yesterday", &good).await;
    // No signature headers at all.
    let bare = app
        .http
        .post(app.url("/api/payments/callback"))
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .expect("sent");
    assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);

    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("callback_deliveries").await, 0);
    assert_eq!(app.count("anomalies").await, 0);
}

#[tokio::test]
async fn a_callback_signed_within_the_tolerance_is_accepted() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    let (id, body) = (new_callback_id(), success_body(&order));
    let ts = time::OffsetDateTime::now_utc().unix_timestamp() - 240;
    let signature = app
        .webhook
        .sign(&id, ts, body.as_bytes())
        .expect("signs")
        .signature;

    let response = app
        .post_callback_with_headers(&body, &id, &ts.to_string(), &signature)
        .await;

    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_signed_callback_with_a_malformed_body_is_400_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    let before = app.snapshot().await;

    for body in [
        "{not json".to_owned(),
        success_body(&order).replace("payment.succeeded", "payment.refunded"),
        success_body(&order).replace("\"amount_cents\":2500", "\"amount_cents\":\"2500\""),
        "{}".to_owned(),
    ] {
        let response = app.post_callback(&new_callback_id(), &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(error_code(response).await, "BAD_REQUEST");
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_callback_for_an_unknown_order_is_404_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    let before = app.snapshot().await;
    let body = success_body(&order).replace(&order.order_no, "ord_unknown");

    let response = app.post_callback(&new_callback_id(), &body).await;

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(response).await, "ORDER_NOT_FOUND");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_callback_with_the_wrong_amount_or_currency_is_422_charges_nothing_and_is_flagged() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let before = app.snapshot().await;

    let wrong_amount = app
        .post_callback(
            &new_callback_id(),
            &callback_body("payment.succeeded", &order, 2_499, "EUR"),
        )
        .await;
    let wrong_currency = app
        .post_callback(
            &new_callback_id(),
            &callback_body("payment.succeeded", &order, 2_500, "USD"),
        )
        .await;

    assert_eq!(wrong_amount.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(wrong_amount).await, "AMOUNT_MISMATCH");
    assert_eq!(wrong_currency.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(
        app.anomalies(&order.order_no).await,
        ["AMOUNT_MISMATCH", "AMOUNT_MISMATCH"]
    );
}

#[tokio::test]
async fn a_callback_body_over_64_kib_is_413_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    let before = app.snapshot().await;
    let body = success_body(&order).replace(
        "\"data\"",
        &format!("\"pad\":\"{}\",\"data\"", "x".repeat(65 * 1024)),
    );

    let response = app.post_callback(&new_callback_id(), &body).await;

    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(response).await, "PAYLOAD_TOO_LARGE");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_failure_callback_moves_pending_to_failed_and_a_later_success_charges_nothing() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;

    let failed = app
        .post_callback(
            &new_callback_id(),
            &callback_body("payment.failed", &order, 2_500, "EUR"),
        )
        .await;
    assert_eq!(failed.status(), StatusCode::OK);
    let after_failure = app.order(&order.order_no).await;
    assert_eq!(after_failure.status, OrderStatus::Failed);
    assert_eq!(
        after_failure.failure_reason.as_deref(),
        Some("PAYMENT_FAILED")
    );

    let late_success = app
        .post_callback(&new_callback_id(), &success_body(&order))
        .await;

    assert_eq!(
        late_success.status(),
        StatusCode::OK,
        "200 so the platform stops retrying"
    );
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Failed);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.count("payment_ledger").await, 0);
    assert_eq!(
        app.anomalies(&order.order_no).await,
        ["SUCCESS_AFTER_FAILED"]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_second_success_with_a_new_callback_id_for_a_paid_order_charges_nothing_and_is_flagged() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    app.post_callback(&new_callback_id(), &success_body(&order))
        .await;

    let second = app
        .post_callback(&new_callback_id(), &success_body(&order))
        .await;

    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(
        app.anomalies(&order.order_no).await,
        ["SECOND_SUCCESS_FOR_PAID_ORDER"]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_same_callback_id_with_a_different_body_is_409_and_only_flagged() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let id = new_callback_id();
    app.post_callback(&id, &success_body(&order)).await;
    let before = app.snapshot().await;

    let reused = app.post_callback(&id, &success_body(&order)).await; // new payment_id inside

    assert_eq!(reused.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(reused).await, "CALLBACK_CONFLICT");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.anomalies(&order.order_no).await, ["CALLBACK_CONFLICT"]);
}

#[tokio::test]
async fn a_success_when_the_balance_is_too_low_fails_the_order_and_is_flagged() {
    let app = spawn_app().await;
    let (account, first) = app.account_with_order(3_000, 2_000).await;
    let second = app.create_order(&account, 2_000).await;
    app.post_callback(&new_callback_id(), &success_body(&first))
        .await;

    let response = app
        .post_callback(&new_callback_id(), &success_body(&second))
        .await;

    assert_eq!(response.status(), StatusCode::OK);
    let second = app.order(&second.order_no).await;
    assert_eq!(second.status, OrderStatus::Failed);
    assert_eq!(second.failure_reason.as_deref(), Some("INSUFFICIENT_FUNDS"));
    assert_eq!(app.balance(&account).await, 1_000);
    assert_eq!(
        app.anomalies(&second.order_no).await,
        ["INSUFFICIENT_FUNDS"]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn concurrent_callbacks_for_many_orders_of_one_account_never_overdraw_it() {
    let app = spawn_app().await;
    let account = app.create_account(10_000, "EUR").await;
    let mut orders = Vec::new();
    for _ in 0..30 {
        orders.push(app.create_order(&account, 1_000).await);
    }

    let responses = join_all(
        orders
            .iter()
            .map(|order| app.post_callback_owned(new_callback_id(), success_body(order))),
    )
    .await;

    assert!(responses.iter().all(|status| *status == StatusCode::OK));
    let report = app.assert_invariants().await;
    assert_eq!(report.paid, 10, "exactly as many as the balance covers");
    assert_eq!(report.failed, 20);
    assert_eq!(app.balance(&account).await, 0);
}

impl TestApp {
    async fn post_callback_owned(&self, id: String, body: String) -> StatusCode {
        self.post_callback(&id, &body).await.status()
    }
}
