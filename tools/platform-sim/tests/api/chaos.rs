//! Chaos knobs: each produces the misbehaviour it names.

use crate::helpers::{
    Behaviour, PATIENCE, Receiver, gaps, new_reference, spawn_app, status_and_body,
};
use api_types::api::CallbackType;
use api_types::platform::ALREADY_PAID;
use platform_sim::{Chaos, Payment, PaymentStatus, Redeliver};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

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

#[tokio::test]
async fn drop_callbacks_decides_outcomes_but_delivers_nothing() {
    let app = spawn_app(|config| config.chaos.drop_callbacks = true).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let paid = app.pay(1000, &receiver.url).await;
    let failed = app.pay(1013, &receiver.url).await;

    let decided = |p: &Payment| p.status != PaymentStatus::Processing;
    let paid = app.wait_for_payment(&paid.payment_id, decided).await;
    let failed = app.wait_for_payment(&failed.payment_id, decided).await;
    assert_eq!(paid.status, PaymentStatus::Succeeded);
    assert_eq!(failed.status, PaymentStatus::Failed);
    let deliveries = receiver.after_quiet(Duration::from_millis(300)).await;
    assert!(deliveries.is_empty(), "{deliveries:#?}");
    assert!(paid.callbacks.is_empty() && failed.callbacks.is_empty());
    assert!(app.simulator.delivery_log().attempts().is_empty());
}

#[tokio::test]
async fn hold_processing_keeps_payments_created_while_set_processing_until_closed() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();

    app.set_chaos(&json!({"hold_processing": "1h"})).await;
    let held = app
        .pay_with_reference(1000, &receiver.url, &reference)
        .await;
    app.set_chaos(&json!({})).await;
    let normal = app.pay(1000, &receiver.url).await;

    app.wait_for_payment(&normal.payment_id, |p| p.status == PaymentStatus::Succeeded)
        .await;
    let deliveries = receiver.after_quiet(Duration::from_millis(500)).await;
    assert_eq!(deliveries.len(), 1, "{deliveries:#?}");
    assert_eq!(deliveries[0].event.data.payment_id, normal.payment_id);
    let still = app.simulator.payment(&held.payment_id).expect("exists");
    assert_eq!(still.status, PaymentStatus::Processing);
    let (status, closed) = status_and_body(app.close_by_reference(&reference).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(closed["status"], "CLOSED");
}

#[tokio::test]
async fn a_held_payment_is_decided_after_the_hold_scaled_by_the_time_scale() {
    // 20 s at a scale of 0.05 is 1 s; unscaled it would outlast the test's patience.
    let app =
        spawn_app(|config| config.chaos.hold_processing = Some(Duration::from_secs(20))).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let created = app.pay(1000, &receiver.url).await;
    let start = Instant::now();

    tokio::time::sleep(Duration::from_millis(400)).await;
    let during = app.simulator.payment(&created.payment_id).expect("exists");
    let decided = app
        .wait_for_payment(&created.payment_id, |p| {
            p.status != PaymentStatus::Processing
        })
        .await;

    assert_eq!(during.status, PaymentStatus::Processing);
    assert_eq!(decided.status, PaymentStatus::Succeeded);
    assert!(start.elapsed() >= Duration::from_millis(900));
    assert!(start.elapsed() < PATIENCE);
    assert_eq!(receiver.wait_for(1).await.len(), 1);
}

#[tokio::test]
async fn succeed_on_close_pays_at_the_last_second_and_refuses_the_close() {
    // Held 500 ms (10 s scaled): the close arrives while PROCESSING.
    let app = spawn_app(|config| {
        config.chaos.succeed_on_close = true;
        config.chaos.hold_processing = Some(Duration::from_secs(10));
    })
    .await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let created = app
        .pay_with_reference(1000, &receiver.url, &reference)
        .await;

    let (status, body) = status_and_body(app.close_by_reference(&reference).await).await;

    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], ALREADY_PAID);
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.status, PaymentStatus::Succeeded);
    let deliveries = receiver.wait_for(1).await;
    assert_eq!(deliveries[0].event.kind, CallbackType::PaymentSucceeded);
    assert_eq!(deliveries[0].event.data.payment_id, created.payment_id);
    assert_eq!(
        deliveries[0].event.data.merchant_reference.as_deref(),
        Some(&*reference)
    );
    // Past the end of the hold: the processing task must not decide (and send) a second time.
    let deliveries = receiver.after_quiet(Duration::from_millis(900)).await;
    assert_eq!(deliveries.len(), 1, "{deliveries:#?}");
}

#[tokio::test]
async fn query_latency_lets_concurrent_queries_overlap_and_sequential_ones_not() {
    let latency = Duration::from_millis(200);
    let app = spawn_app(|config| config.chaos.query_latency = Some(latency)).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let reference = new_reference();
    let created = app
        .pay_with_reference(1000, &receiver.url, &reference)
        .await;

    for _ in 0..3 {
        let start = Instant::now();
        let response = app.get_payment(&created.payment_id).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            start.elapsed() >= latency,
            "answered in {:?}",
            start.elapsed()
        );
    }
    let sequential = app.simulator.payment(&created.payment_id).expect("exists");
    let (first, second, third) = tokio::join!(
        app.get_payment(&created.payment_id),
        app.get_by_reference(&reference),
        app.get_by_reference(&reference),
    );
    for answer in [first, second, third] {
        assert_eq!(answer.status(), StatusCode::OK);
    }
    let concurrent = app.simulator.payment(&created.payment_id).expect("exists");

    assert_eq!(sequential.queries, 3);
    assert_eq!(sequential.max_concurrent_requests, 1);
    assert_eq!(concurrent.queries, 6);
    assert!(
        concurrent.max_concurrent_requests >= 2,
        "{}",
        concurrent.max_concurrent_requests
    );
}

#[tokio::test]
async fn a_query_abandoned_during_its_latency_leaves_the_in_flight_count() {
    let app = spawn_app(|config| {
        config.chaos.query_latency = Some(Duration::from_millis(300));
    })
    .await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let created = app.pay(1000, &receiver.url).await;

    let abandoned = tokio::time::timeout(
        Duration::from_millis(50),
        app.simulator.query_by_id(&created.payment_id),
    )
    .await;
    let next = app
        .simulator
        .query_by_id(&created.payment_id)
        .await
        .expect("found");

    assert!(abandoned.is_err(), "the first query should have timed out");
    assert_eq!(next.queries, 2);
    assert_eq!(next.max_concurrent_requests, 1);
}

#[tokio::test]
async fn query_and_close_knobs_round_trip_through_post_chaos() {
    let app = spawn_app(|_| {}).await;
    let knobs = json!({
        "drop_callbacks": true,
        "hold_processing": "1h",
        "succeed_on_close": true,
        "query_latency": "250ms",
    });

    let (status, echoed) = status_and_body(app.set_chaos(&knobs).await).await;
    let read: Value = app
        .http
        .get(format!("{}/v1/chaos", app.address))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");

    assert_eq!(status, StatusCode::OK);
    assert_eq!(echoed, read);
    for (name, value) in knobs.as_object().expect("an object") {
        assert_eq!(&read[name], value, "{name}");
    }
    let chaos = app.simulator.chaos();
    assert!(chaos.drop_callbacks && chaos.succeed_on_close);
    assert_eq!(chaos.hold_processing, Some(Duration::from_secs(3600)));
    assert_eq!(chaos.query_latency, Some(Duration::from_millis(250)));
    for refused in [
        json!({"drop_callback": true}),
        json!({"hold_processing": "for ever"}),
        json!({"query_latency": 250}),
    ] {
        let (status, body) = status_and_body(app.set_chaos(&refused).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST");
    }
    assert_eq!(app.simulator.chaos(), chaos, "refused knobs change nothing");
}
