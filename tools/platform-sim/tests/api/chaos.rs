//! Chaos knobs: each produces the misbehaviour it names.

use crate::helpers::{Behaviour, Receiver, gaps, spawn_app};
use api_types::api::CallbackType;
use platform_sim::{Chaos, PaymentStatus, Redeliver};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test]
async fn concurrent_copies_deliver_the_same_callback_at_once() {
    let app = spawn_app(|config| config.chaos.concurrent_copies = 3).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let created = app.pay(1000, &receiver.url).await;

    receiver.wait_for(3).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 3);
    assert!(deliveries.iter().all(|d| d.signature_valid));
    assert!(
        deliveries
            .iter()
            .all(|d| d.callback_id == deliveries[0].callback_id)
    );
    let spread = deliveries[2].arrived - deliveries[0].arrived;
    assert!(spread < Duration::from_millis(500), "spread {spread:?}");
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.callbacks.len(), 1);
    assert_eq!(payment.callbacks[0].attempts, 3);
}

#[tokio::test]
async fn a_second_path_delivers_the_same_callback_again_later() {
    // 4 s at a scale of 0.05: the second path starts 200 ms after the first.
    let app =
        spawn_app(|config| config.chaos.second_path_delay = Some(Duration::from_secs(4))).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    app.pay(1000, &receiver.url).await;

    let deliveries = receiver.wait_for(2).await;
    assert_eq!(deliveries[0].callback_id, deliveries[1].callback_id);
    assert_eq!(deliveries[0].event, deliveries[1].event);
    assert!(gaps(&deliveries)[0] >= Duration::from_millis(180));
}

#[tokio::test]
async fn reorder_sends_a_failure_before_the_success() {
    let app = spawn_app(|config| config.chaos.reorder = true).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let created = app.pay(1000, &receiver.url).await;

    let deliveries = receiver.wait_for(2).await;
    assert_eq!(deliveries[0].event.kind, CallbackType::PaymentFailed);
    assert_eq!(deliveries[1].event.kind, CallbackType::PaymentSucceeded);
    assert_ne!(deliveries[0].callback_id, deliveries[1].callback_id);
    assert!(
        deliveries
            .iter()
            .all(|d| d.event.data.payment_id == created.payment_id)
    );
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.status, PaymentStatus::Succeeded);
    let kinds: Vec<_> = payment.callbacks.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [CallbackType::PaymentFailed, CallbackType::PaymentSucceeded]
    );
}

#[tokio::test]
async fn a_second_success_comes_with_a_new_callback_id() {
    let app = spawn_app(|config| config.chaos.second_success = true).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let created = app.pay(1000, &receiver.url).await;

    receiver.wait_for(2).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 2);
    assert!(
        deliveries
            .iter()
            .all(|d| d.event.kind == CallbackType::PaymentSucceeded
                && d.event.data.payment_id == created.payment_id)
    );
    assert_ne!(deliveries[0].callback_id, deliveries[1].callback_id);
}

#[tokio::test]
async fn redelivery_after_success_repeats_the_same_callback() {
    let app = spawn_app(|config| {
        config.chaos.redeliver_after_success = Some(Redeliver {
            count: 2,
            interval: Duration::from_secs(2),
        });
    })
    .await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let created = app.pay(1000, &receiver.url).await;

    receiver.wait_for(3).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(400)).await;
    assert_eq!(deliveries.len(), 3);
    assert!(
        deliveries
            .iter()
            .all(|d| d.callback_id == deliveries[0].callback_id && d.signature_valid)
    );
    // 2 s at a scale of 0.05 is 100 ms between redeliveries.
    assert!(
        gaps(&deliveries)
            .iter()
            .all(|gap| *gap >= Duration::from_millis(90))
    );
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.callbacks[0].attempts, 3);
}

#[tokio::test]
async fn the_incident_storm_three_at_once_and_another_seven_seconds_later() {
    let app = spawn_app(|config| {
        config.chaos.concurrent_copies = 3;
        config.chaos.redeliver_after_success = Some(Redeliver {
            count: 1,
            interval: Duration::from_secs(7),
        });
    })
    .await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    app.pay(1000, &receiver.url).await;

    let deliveries = receiver.wait_for(4).await;
    assert!(
        deliveries
            .iter()
            .all(|d| d.callback_id == deliveries[0].callback_id)
    );
    // Scaled by 0.05: three within a few ms, the fourth 350 ms later.
    assert!(deliveries[2].arrived - deliveries[0].arrived < Duration::from_millis(200));
    assert!(deliveries[3].arrived - deliveries[2].arrived >= Duration::from_millis(300));
}

#[tokio::test]
async fn chaos_can_be_changed_at_runtime_over_http() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let before = app.pay(1000, &receiver.url).await;

    let response = app
        .set_chaos(&json!({"concurrent_copies": 2, "second_path_delay": "1s"}))
        .await;
    let after = app.pay(1000, &receiver.url).await;

    assert_eq!(response.status(), StatusCode::OK);
    let knobs: Chaos = app
        .http
        .get(format!("{}/v1/chaos", app.address))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(knobs.concurrent_copies, 2);
    assert_eq!(knobs.second_path_delay, Some(Duration::from_secs(1)));
    receiver.wait_for(4).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(300)).await;
    let count = |payment_id: &str| {
        deliveries
            .iter()
            .filter(|d| d.event.data.payment_id == payment_id)
            .count()
    };
    assert_eq!(
        count(&before.payment_id),
        1,
        "earlier payments keep their knobs"
    );
    assert_eq!(count(&after.payment_id), 3, "two copies and a second path");
}

#[tokio::test]
async fn unknown_chaos_knobs_are_refused_with_400() {
    let app = spawn_app(|_| {}).await;

    let response = app.set_chaos(&json!({"duplicate": true})).await;

    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "BAD_REQUEST");
}
