//! Querying and closing payments, by the platform's id and by the merchant's
//! reference: the answers for each status, the counters, and no callback ever
//! after a close.

use crate::helpers::{
    Behaviour, PATIENCE, Receiver, TestApp, new_reference, spawn_app, status_and_body,
};
use api_types::platform::ALREADY_PAID;
use platform_sim::{CreatePayment, Payment, PaymentStatus, SimError};
use reqwest::StatusCode;
use serde_json::Value;
use std::time::{Duration, Instant};

/// 10 s at the suite's time scale of 0.05: payments stay PROCESSING for 500 ms.
const SLOW_PROCESSING: Duration = Duration::from_secs(10);
/// Well past [`SLOW_PROCESSING`]'s 500 ms: by then a decision would have been
/// made and its callback delivered.
const PAST_THE_DECISION: Duration = Duration::from_millis(900);

/// Polls `GET /v1/payments/by-reference/{reference}` until the payment is no longer PROCESSING.
async fn wait_until_decided(app: &TestApp, reference: &str) -> Payment {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, body) = status_and_body(app.get_by_reference(reference).await).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let payment: Payment = serde_json::from_value(body).expect("a payment");
        if payment.status != PaymentStatus::Processing {
            return payment;
        }
        assert!(Instant::now() < deadline, "never decided: {payment:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_payment_is_found_by_its_merchant_reference_from_processing_to_succeeded() {
    let app = spawn_app(|config| config.processing_delay = SLOW_PROCESSING).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();

    let (before, not_found) = status_and_body(app.get_by_reference(&reference).await).await;
    let created = app
        .pay_with_reference(1000, &receiver.url, &reference)
        .await;
    let (during, processing) = status_and_body(app.get_by_reference(&reference).await).await;

    assert_eq!(before, StatusCode::NOT_FOUND);
    assert_eq!(not_found["error"]["code"], "PAYMENT_NOT_FOUND");
    assert_eq!(during, StatusCode::OK);
    let processing: Payment = serde_json::from_value(processing).expect("a payment");
    assert_eq!(processing.payment_id, created.payment_id);
    assert_eq!(processing.merchant_reference.as_deref(), Some(&*reference));
    assert_eq!(processing.status, PaymentStatus::Processing);
    let decided = wait_until_decided(&app, &reference).await;
    assert_eq!(decided.payment_id, created.payment_id);
    assert_eq!(decided.status, PaymentStatus::Succeeded);
}

#[tokio::test]
async fn queries_and_closes_of_an_unknown_payment_are_404() {
    let app = spawn_app(|_| {}).await;

    let answers = [
        app.get_by_reference("ref-missing").await,
        app.close_by_reference("ref-missing").await,
        app.close_payment("pay_missing").await,
    ];

    for answer in answers {
        let (status, body) = status_and_body(answer).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(body["error"]["code"], "PAYMENT_NOT_FOUND");
    }
}

#[tokio::test]
async fn closing_a_processing_payment_closes_it_and_no_callback_ever_follows() {
    let app = spawn_app(|config| config.processing_delay = SLOW_PROCESSING).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let created = app
        .pay_with_reference(1000, &receiver.url, &reference)
        .await;

    let (status, body) = status_and_body(app.close_by_reference(&reference).await).await;

    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["payment_id"], created.payment_id.as_str());
    assert_eq!(body["status"], "CLOSED");
    assert_eq!(body["closes"], 1);
    let deliveries = receiver.after_quiet(PAST_THE_DECISION).await;
    assert!(deliveries.is_empty(), "{deliveries:#?}");
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.status, PaymentStatus::Closed);
    assert!(payment.callbacks.is_empty(), "{payment:#?}");
}

#[tokio::test]
async fn closing_twice_answers_closed_both_times_by_reference_and_by_id() {
    let app = spawn_app(|config| config.processing_delay = SLOW_PROCESSING).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let created = app
        .pay_with_reference(1000, &receiver.url, &reference)
        .await;

    let (first, _) = status_and_body(app.close_by_reference(&reference).await).await;
    let (second, again) = status_and_body(app.close_payment(&created.payment_id).await).await;

    assert_eq!(first, StatusCode::OK);
    assert_eq!(second, StatusCode::OK, "{again}");
    assert_eq!(again["status"], "CLOSED");
    assert_eq!(again["closes"], 2);
    assert!(receiver.after_quiet(PAST_THE_DECISION).await.is_empty());
}

#[tokio::test]
async fn closing_a_failed_payment_answers_200_with_its_failed_status() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let created = app
        .pay_with_reference(1013, &receiver.url, &reference)
        .await;
    app.wait_for_payment(&created.payment_id, |p| {
        p.callbacks.iter().any(|c| c.delivered)
    })
    .await;

    let (status, body) = status_and_body(app.close_by_reference(&reference).await).await;

    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "FAILED");
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.status, PaymentStatus::Failed);
    assert_eq!(receiver.deliveries().len(), 1);
}

#[tokio::test]
async fn closing_a_succeeded_payment_is_409_already_paid() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let created = app.pay(1000, &receiver.url).await;
    app.wait_for_payment(&created.payment_id, |p| {
        p.status == PaymentStatus::Succeeded
    })
    .await;

    let (status, body) = status_and_body(app.close_payment(&created.payment_id).await).await;

    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], ALREADY_PAID);
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(message.contains("already paid"), "{message}");
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.status, PaymentStatus::Succeeded);
    assert_eq!(payment.closes, 1);
}

#[tokio::test]
async fn queries_and_closes_are_counted_on_the_payment_and_inspection_is_not() {
    let app = spawn_app(|config| config.processing_delay = SLOW_PROCESSING).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let created = app
        .pay_with_reference(1000, &receiver.url, &reference)
        .await;

    app.get_payment(&created.payment_id).await;
    app.get_by_reference(&reference).await;
    let (_, third) = status_and_body(app.get_payment(&created.payment_id).await).await;
    let (_, closed) = status_and_body(app.close_payment(&created.payment_id).await).await;
    let inspected = app.simulator.payment(&created.payment_id).expect("exists");

    assert_eq!(third["queries"], 3);
    assert_eq!(third["closes"], 0);
    assert_eq!(closed["queries"], 3);
    assert_eq!(closed["closes"], 1);
    assert_eq!(
        (inspected.queries, inspected.closes),
        (3, 1),
        "looking from the side counts nothing"
    );
    assert_eq!(inspected.max_concurrent_requests, 1, "one at a time");
}

#[tokio::test]
async fn the_simulator_queries_and_closes_in_process_as_the_routes_do() {
    let app = spawn_app(|config| config.processing_delay = SLOW_PROCESSING).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let request = |reference: &str| CreatePayment {
        order_no: format!("ord_{reference}"),
        amount_cents: 1000,
        currency: "EUR".parse().expect("currency"),
        notify_url: receiver.url.clone(),
        merchant_reference: Some(reference.to_owned()),
    };
    let (to_close, _) = app
        .simulator
        .create_payment("key-close", request("ref-close"))
        .await
        .expect("created");
    let (to_pay, _) = app
        .simulator
        .create_payment("key-pay", request("ref-pay"))
        .await
        .expect("created");

    let queried = app.simulator.query_by_reference("ref-close").await;
    let closed = app.simulator.close_by_reference("ref-close").await;
    let missing = app.simulator.query_by_reference("ref-missing").await;
    let missing_close = app.simulator.close_by_reference("ref-missing").await;
    app.wait_for_payment(&to_pay.payment_id, |p| p.status == PaymentStatus::Succeeded)
        .await;
    let too_late = app.simulator.close_by_reference("ref-pay").await;
    let by_id = app.simulator.query_by_id(&to_close.payment_id).await;

    let queried = queried.expect("found");
    assert_eq!(queried.status, PaymentStatus::Processing);
    assert_eq!(queried.queries, 1);
    let closed = closed.expect("closed");
    assert_eq!(closed.payment_id, to_close.payment_id);
    assert_eq!((closed.status, closed.closes), (PaymentStatus::Closed, 1));
    assert!(matches!(missing, Err(SimError::PaymentNotFound(_))));
    assert!(matches!(missing_close, Err(SimError::PaymentNotFound(_))));
    assert_eq!(too_late, Err(SimError::AlreadySucceeded(to_pay.payment_id)));
    let by_id = by_id.expect("found");
    assert_eq!((by_id.status, by_id.queries), (PaymentStatus::Closed, 2));
    let deliveries = receiver.after_quiet(PAST_THE_DECISION).await;
    assert_eq!(deliveries.len(), 1, "only the paid one: {deliveries:#?}");
    assert_eq!(
        deliveries[0].event.data.merchant_reference.as_deref(),
        Some("ref-pay")
    );
}

#[tokio::test]
async fn a_closed_payment_reads_closed_on_every_later_query() {
    let app = spawn_app(|config| config.processing_delay = SLOW_PROCESSING).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    app.pay_with_reference(1000, &receiver.url, &reference)
        .await;
    app.close_by_reference(&reference).await;

    tokio::time::sleep(PAST_THE_DECISION).await;
    let (status, body) = status_and_body(app.get_by_reference(&reference).await).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "CLOSED");
    assert_eq!(body["callbacks"], Value::Array(Vec::new()));
}
