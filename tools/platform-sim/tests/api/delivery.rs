//! Delivering callbacks: signatures, the body, retries on schedule, timeouts,
//! connection errors, and giving up.

use crate::helpers::{Behaviour, Receiver, gaps, spawn_app};
use api_types::api::{CallbackType, EventTimestamp};
use platform_sim::{AttemptOutcome, CallbackSecret, Schedule};
use std::time::Duration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

#[tokio::test]
async fn callbacks_are_signed_with_the_shared_secret_and_carry_the_payment() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;

    let created = app.pay(4200, &receiver.url).await;

    let delivery = receiver.wait_for(1).await.remove(0);
    assert!(delivery.signature_valid);
    assert!(delivery.callback_id.starts_with("evt_"));
    assert_eq!(delivery.callback_id.len(), 4 + 32);
    let now = OffsetDateTime::now_utc().unix_timestamp();
    assert!((now - delivery.signed_at).abs() <= 5);
    let event = delivery.event;
    assert_eq!(event.kind, CallbackType::PaymentSucceeded);
    assert_eq!(event.data.payment_id, created.payment_id);
    assert_eq!(event.data.amount_cents, 4200);
    assert_eq!(event.data.currency.as_str(), "EUR");
    assert!(event.data.order_no.starts_with("ord_"));
    let EventTimestamp::Text(timestamp) = event.timestamp else {
        panic!("timestamp should be RFC 3339 text");
    };
    assert!(OffsetDateTime::parse(&timestamp, &Rfc3339).is_ok());
}

#[tokio::test]
async fn a_receiver_with_another_secret_rejects_every_attempt() {
    let app = spawn_app(|config| {
        config.schedule = Schedule::Fixed {
            interval: Duration::from_secs(1),
            count: 2,
        };
    })
    .await;
    let receiver = Receiver::start(&CallbackSecret::generate(), Behaviour::accept_all()).await;

    let created = app.pay(1000, &receiver.url).await;

    let payment = app
        .wait_for_payment(&created.payment_id, |p| {
            p.callbacks.first().is_some_and(|c| c.attempts == 3)
        })
        .await;
    assert!(receiver.deliveries().iter().all(|d| !d.signature_valid));
    assert!(!payment.callbacks[0].delivered);
    assert_eq!(payment.callbacks[0].last_status, Some(401));
}

#[tokio::test]
async fn non_2xx_answers_are_retried_on_the_schedule_until_a_2xx() {
    // WeChat's first waits are 15 s, 15 s, 30 s, 3 min; at 1/1000 speed: 15, 15, 30, 180 ms.
    let app = spawn_app(|config| {
        config.schedule = Schedule::Wechat;
        config.time_scale = 0.001;
    })
    .await;
    let receiver = Receiver::start(&app.secret, Behaviour::fail_first(4)).await;

    app.pay(1000, &receiver.url).await;

    receiver.wait_for(5).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(600)).await;
    assert_eq!(deliveries.len(), 5, "no attempt after the 2xx");
    assert!(deliveries.iter().all(|d| d.signature_valid));
    assert!(
        deliveries
            .iter()
            .all(|d| d.callback_id == deliveries[0].callback_id),
        "retries carry the same callback id"
    );
    assert!(
        deliveries.iter().all(|d| d.event == deliveries[0].event),
        "retries carry the same body"
    );
    let gaps = gaps(&deliveries);
    let at_least = [10, 10, 25, 170].map(Duration::from_millis);
    for (gap, minimum) in gaps.iter().zip(at_least) {
        assert!(
            *gap >= minimum,
            "gaps {gaps:?} should follow 15/15/30/180 ms"
        );
    }
    assert!(gaps[3] > gaps[0] + gaps[1] + gaps[2]);
}

#[tokio::test]
async fn each_retry_is_signed_afresh() {
    let app = spawn_app(|config| {
        config.schedule = Schedule::Fixed {
            interval: Duration::from_millis(1100),
            count: 1,
        };
        config.time_scale = 1.0;
        config.processing_delay = Duration::ZERO;
    })
    .await;
    let receiver = Receiver::start(&app.secret, Behaviour::fail_first(1)).await;

    app.pay(1000, &receiver.url).await;

    let deliveries = receiver.wait_for(2).await;
    assert!(deliveries.iter().all(|d| d.signature_valid));
    assert!(deliveries[1].signed_at > deliveries[0].signed_at);
}

#[tokio::test]
async fn a_connection_error_is_retried_until_the_receiver_comes_up() {
    let app = spawn_app(|config| {
        config.schedule = Schedule::Fixed {
            interval: Duration::from_secs(1),
            count: 100,
        };
        config.time_scale = 0.1;
    })
    .await;
    // A port that was just free and now has no listener: connections are refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let notify_url = format!("http://{closed}/callback");

    let created = app.pay(1000, &notify_url).await;

    let refused = app
        .wait_for_payment(&created.payment_id, |p| {
            p.callbacks.first().is_some_and(|c| c.attempts >= 2)
        })
        .await;
    assert!(!refused.callbacks[0].delivered);
    assert_eq!(refused.callbacks[0].last_status, None);
    let receiver = Receiver::start_on(closed, &app.secret, Behaviour::accept_all()).await;
    let deliveries = receiver.wait_for(1).await;
    assert_eq!(deliveries[0].callback_id, refused.callbacks[0].callback_id);
    let payment = app
        .wait_for_payment(&created.payment_id, |p| p.callbacks[0].delivered)
        .await;
    assert_eq!(payment.callbacks[0].last_status, Some(200));
}

#[tokio::test]
async fn a_timed_out_attempt_is_retried() {
    let app = spawn_app(|config| config.request_timeout = Duration::from_millis(200)).await;
    let receiver = Receiver::start(
        &app.secret,
        Behaviour {
            stall_first: 1,
            stall_for: Duration::from_secs(2),
            ..Behaviour::default()
        },
    )
    .await;

    let created = app.pay(1000, &receiver.url).await;

    let deliveries = receiver.wait_for(2).await;
    assert_eq!(deliveries[0].callback_id, deliveries[1].callback_id);
    app.wait_for_payment(&created.payment_id, |p| p.callbacks[0].delivered)
        .await;
    let attempts = app.simulator.delivery_log().attempts();
    assert_eq!(
        attempts[0].outcome,
        AttemptOutcome::NoAnswer("timed out".into())
    );
    assert_eq!(attempts[1].outcome, AttemptOutcome::Answered(200));
}

#[tokio::test]
async fn delivery_gives_up_when_the_schedule_runs_out() {
    let app = spawn_app(|config| {
        config.schedule = Schedule::Fixed {
            interval: Duration::from_secs(1),
            count: 2,
        };
    })
    .await;
    let receiver = Receiver::start(&app.secret, Behaviour::fail_first(usize::MAX)).await;

    let created = app.pay(1000, &receiver.url).await;

    receiver.wait_for(3).await;
    let deliveries = receiver.after_quiet(Duration::from_millis(400)).await;
    assert_eq!(deliveries.len(), 3, "one attempt and two retries");
    let payment = app.simulator.payment(&created.payment_id).expect("exists");
    assert_eq!(payment.callbacks[0].attempts, 3);
    assert!(!payment.callbacks[0].delivered);
    assert_eq!(payment.callbacks[0].last_status, Some(500));
}
