//! Taking payments: idempotency, validation, outcomes, and the payment view.

use crate::helpers::{
    Behaviour, Receiver, new_reference, payment_body, referenced_body, spawn_app, status_and_body,
};
use api_types::api::CallbackType;
use api_types::platform::PaymentState;
use platform_sim::{CreatePayment, PaymentStatus, SimError};
use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;

#[tokio::test]
async fn healthz_answers_200() {
    let app = spawn_app(|_| {}).await;

    let response = app
        .http
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .expect("answers");

    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_same_key_returns_the_same_payment_and_starts_one_delivery_series() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let body = payment_body("ord_1", 1000, &receiver.url);

    let first = app.post_payment(Some("key-1"), &body).await;
    let second = app.post_payment(Some("key-1"), &body).await;

    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get("idempotent-replayed").is_none());
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    let first: Value = first.json().await.expect("json");
    let second: Value = second.json().await.expect("json");
    assert_eq!(first["payment_id"], second["payment_id"]);
    assert_eq!(first["status"], "PROCESSING");
    receiver.wait_for(1).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 1, "{deliveries:#?}");
}

#[tokio::test]
async fn concurrent_requests_with_one_key_create_one_payment() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let body = payment_body("ord_1", 1000, &receiver.url);

    let responses =
        futures::future::join_all((0..10).map(|_| app.post_payment(Some("key-1"), &body))).await;

    let created = responses
        .iter()
        .filter(|response| response.status() == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1);
    let mut ids = Vec::new();
    for response in responses {
        let body: Value = response.json().await.expect("json");
        ids.push(body["payment_id"].clone());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1);
}

#[tokio::test]
async fn the_same_key_with_a_different_body_is_refused_with_422() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    app.post_payment(Some("key-1"), &payment_body("ord_1", 1000, &receiver.url))
        .await;

    let response = app
        .post_payment(Some("key-1"), &payment_body("ord_1", 2000, &receiver.url))
        .await;

    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "IDEMPOTENCY_KEY_REUSED");
    assert!(body["error"]["message"].is_string());
}

#[tokio::test]
async fn a_missing_idempotency_key_is_400() {
    let app = spawn_app(|_| {}).await;

    let response = app
        .post_payment(None, &payment_body("ord_1", 1000, "http://127.0.0.1:9/cb"))
        .await;

    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "BAD_REQUEST");
}

#[tokio::test]
async fn a_malformed_body_is_400_in_the_error_shape() {
    let app = spawn_app(|_| {}).await;
    let bodies = [
        serde_json::json!({"order_no": "ord_1"}),
        serde_json::json!({"order_no": "ord_1", "amount_cents": 100, "currency": "euro", "notify_url": "http://x/"}),
        payment_body("ord_1", -5, "http://127.0.0.1:9/cb"),
        payment_body("ord_1", 100, "not a url"),
        referenced_body("ord_1", 100, "http://127.0.0.1:9/cb", ""),
        referenced_body("ord_1", 100, "http://127.0.0.1:9/cb", "has space"),
    ];

    for body in bodies {
        let response = app.post_payment(Some("key-1"), &body).await;

        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let answer: Value = response.json().await.expect("json");
        assert_eq!(answer["error"]["code"], "BAD_REQUEST", "{body}");
    }
}

#[tokio::test]
async fn an_unknown_payment_is_404() {
    let app = spawn_app(|_| {}).await;

    let response = app.get_payment("pay_missing").await;

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "PAYMENT_NOT_FOUND");
}

#[tokio::test]
async fn a_payment_is_processing_until_its_outcome_is_decided() {
    let app = spawn_app(|config| config.processing_delay = Duration::from_secs(10)).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let created = app.pay(1000, &receiver.url).await;

    // 10 s scaled by 0.05 is 500 ms: still processing right after creation.
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.status, PaymentStatus::Processing);
    assert!(payment.callbacks.is_empty());
    let payment = app
        .wait_for_payment(&created.payment_id, |p| {
            p.status != PaymentStatus::Processing
        })
        .await;
    assert_eq!(payment.status, PaymentStatus::Succeeded);
}

#[tokio::test]
async fn an_amount_ending_in_13_fails() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let created = app.pay(1013, &receiver.url).await;

    let deliveries = receiver.wait_for(1).await;
    assert_eq!(deliveries[0].event.kind, CallbackType::PaymentFailed);
    let payment = app
        .wait_for_payment(&created.payment_id, |p| {
            p.callbacks.iter().any(|c| c.delivered)
        })
        .await;
    assert_eq!(payment.status, PaymentStatus::Failed);
}

#[tokio::test]
async fn the_payment_view_reports_each_callback_and_its_delivery() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::fail_first(1)).await;

    let created = app.pay(2500, &receiver.url).await;

    let payment = app
        .wait_for_payment(&created.payment_id, |p| {
            p.callbacks.iter().any(|c| c.delivered)
        })
        .await;
    assert_eq!(payment.amount_cents, 2500);
    assert_eq!(payment.currency.as_str(), "EUR");
    assert_eq!(payment.status, PaymentStatus::Succeeded);
    let deliveries = receiver.deliveries();
    let raw: Value = app
        .get_payment(&created.payment_id)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        raw["callbacks"],
        serde_json::json!([{
            "callback_id": deliveries[0].callback_id,
            "type": "payment.succeeded",
            "attempts": 2,
            "delivered": true,
            "last_status": 200,
        }])
    );
}

#[tokio::test]
async fn payments_can_be_created_in_process_without_http() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let request = CreatePayment {
        order_no: "ord_1".into(),
        amount_cents: 1000,
        currency: "EUR".parse().expect("currency"),
        notify_url: receiver.url.clone(),
        merchant_reference: None,
    };

    let (first, first_replayed) = app
        .simulator
        .create_payment("key-1", request.clone())
        .await
        .expect("created");
    let (again, again_replayed) = app
        .simulator
        .create_payment("key-1", request.clone())
        .await
        .expect("replayed");
    let reused = app
        .simulator
        .create_payment(
            "key-1",
            CreatePayment {
                amount_cents: 1,
                ..request
            },
        )
        .await;

    assert!(!first_replayed && again_replayed);
    assert_eq!(first.payment_id, again.payment_id);
    assert_eq!(reused, Err(SimError::IdempotencyKeyReused));
    let deliveries = receiver.wait_for(1).await;
    assert_eq!(deliveries[0].event.data.payment_id, first.payment_id);
}

#[tokio::test]
async fn a_new_payment_with_a_used_merchant_reference_is_refused_with_422() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let body = referenced_body("ord_1", 1000, &receiver.url, &reference);
    let other_order = referenced_body("ord_2", 1000, &receiver.url, &reference);

    let (first, created) = status_and_body(app.post_payment(Some("key-1"), &body).await).await;
    let (replay, replayed) = status_and_body(app.post_payment(Some("key-1"), &body).await).await;
    let (reuse, refused) =
        status_and_body(app.post_payment(Some("key-2"), &other_order).await).await;
    let (same_body, refused_too) =
        status_and_body(app.post_payment(Some("key-3"), &body).await).await;

    assert_eq!(first, StatusCode::CREATED);
    assert_eq!(replay, StatusCode::OK, "the same key still replays");
    assert_eq!(replayed["payment_id"], created["payment_id"]);
    for (status, answer) in [(reuse, refused), (same_body, refused_too)] {
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(answer["error"]["code"], "MERCHANT_REFERENCE_REUSED");
        assert!(answer["error"]["message"].is_string());
    }
    let (_, found) = status_and_body(app.get_by_reference(&reference).await).await;
    assert_eq!(found["payment_id"], created["payment_id"]);
    receiver.wait_for(1).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 1, "one payment: {deliveries:#?}");
}

#[tokio::test]
async fn the_payment_view_reads_as_the_platforms_payment_state() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let with_reference = app
        .pay_with_reference(2500, &receiver.url, &reference)
        .await;
    let without = app.pay(1000, &receiver.url).await;

    let (_, raw) = status_and_body(app.get_payment(&with_reference.payment_id).await).await;
    let (_, raw_without) = status_and_body(app.get_payment(&without.payment_id).await).await;

    let state: PaymentState = serde_json::from_value(raw.clone()).expect("reads as PaymentState");
    assert_eq!(
        state,
        PaymentState {
            payment_id: with_reference.payment_id.parse().ok(),
            order_no: raw["order_no"].as_str().expect("order_no").to_owned(),
            merchant_reference: Some(reference),
            amount_cents: 2500,
            currency: "EUR".parse().expect("currency"),
            status: serde_json::from_value(raw["status"].clone()).expect("a status"),
        }
    );
    assert!(state.order_no.starts_with("ord_"));
    let state: PaymentState =
        serde_json::from_value(raw_without.clone()).expect("reads as PaymentState");
    assert_eq!(state.merchant_reference, None);
    assert_eq!(
        raw_without.get("merchant_reference"),
        Some(&Value::Null),
        "null, not absent"
    );
    for counter in ["queries", "closes", "max_concurrent_requests"] {
        assert_eq!(
            raw_without[counter],
            if counter == "closes" { 0 } else { 1 },
            "{counter}"
        );
    }
}
