//! PostgreSQL and Redis go away mid-storm; the backend is not restarted.

use crate::rig::{Rig, RigOptions, failures};
use serde_json::{Value, json};
use std::time::Duration;
use storm::platform::Answer;
use storm::processes::OwnedPostgres;

const AMOUNT: i64 = 2_000;

#[tokio::test]
async fn postgres_restarted_mid_storm_the_backend_recovers_by_itself_and_charges_once() {
    let pg = OwnedPostgres::start().expect("own PostgreSQL cluster");
    let rig = Rig::start(RigOptions {
        postgres: pg.url("").trim_end_matches('/').to_owned(),
        ..RigOptions::default()
    })
    .await;
    let orders = rig.orders(12, AMOUNT).await;
    let (before, during) = orders.split_at(4);

    // The storm's first part lands; the database goes away; the rest arrives
    // while it is gone and is retried by the platform until it is back.
    let mut answers = rig
        .storm(
            before,
            AMOUNT,
            3,
            Duration::from_millis(200),
            Duration::from_secs(60),
        )
        .await;
    pg.stop().expect("stops");
    let outage = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(3)).await;
        pg.resume().expect("starts again");
        pg
    });
    answers.extend(
        rig.storm(
            during,
            AMOUNT,
            3,
            Duration::from_millis(200),
            Duration::from_secs(60),
        )
        .await,
    );
    let _pg = outage.await.expect("outage");

    let server_errors = answers
        .iter()
        .filter(|a| matches!(a, Answer::Status(500..=599)))
        .count();
    assert!(
        server_errors >= 1,
        "the outage was never answered with a 5xx: {answers:?}"
    );
    assert!(
        !answers
            .iter()
            .any(|a| matches!(a, Answer::Status(400..=499))),
        "an outage must never look like a client error (the platform would stop retrying)"
    );
    assert_eq!(
        rig.backends[0].lock().await.starts,
        1,
        "the backend was not restarted"
    );
    // The rig's own pool reconnects as well.
    rig.assert_each_order_paid_once(&orders, "PostgreSQL restart")
        .await;
    println!(
        "{} deliveries, {} failed during the outage",
        answers.len(),
        failures(&answers)
    );
}

#[tokio::test]
async fn redis_flushed_then_stopped_mid_storm_leaves_callbacks_exactly_once_and_pay_replays_answered()
 {
    let mut rig = Rig::start(RigOptions::default()).await;
    let orders = rig.orders(6, AMOUNT).await;
    let http = rig.shopper_http().await;
    let url = rig.url().to_owned();

    // A shopper's pay that completed before the trouble.
    let paid_order = rig.orders(1, AMOUNT).await.remove(0);
    let token: Value = http
        .post(format!("{url}/api/orders/{paid_order}/request-token"))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let pay = |token: Value| {
        let (http, url, order) = (http.clone(), url.clone(), paid_order.clone());
        async move {
            http.post(format!("{url}/api/orders/{order}/pay"))
                .json(&json!({"request_token": token}))
                .send()
                .await
                .expect("sent")
        }
    };
    let first = pay(token["request_token"].clone()).await;
    assert_eq!(first.status(), 202);
    let first_body: Value = first.json().await.expect("json");

    rig.redis.flush().await.expect("flush");
    let storm_flushed = rig
        .storm(
            &orders[..3],
            AMOUNT,
            5,
            Duration::from_millis(100),
            Duration::from_secs(30),
        )
        .await;
    let replay_flushed = pay(token["request_token"].clone()).await;

    rig.redis.stop();
    let storm_stopped = rig
        .storm(
            &orders[3..],
            AMOUNT,
            5,
            Duration::from_millis(100),
            Duration::from_secs(30),
        )
        .await;
    let replay_stopped = pay(token["request_token"].clone()).await;
    let another = rig.orders(1, AMOUNT).await.remove(0);
    let new_token = http
        .post(format!("{url}/api/orders/{another}/request-token"))
        .send()
        .await
        .expect("sent");

    assert_eq!(
        failures(&storm_flushed) + failures(&storm_stopped),
        0,
        "callbacks never need Redis"
    );
    for replay in [replay_flushed, replay_stopped] {
        assert_eq!(replay.status(), 202);
        assert_eq!(replay.headers()["idempotent-replayed"], "true");
        assert_eq!(replay.json::<Value>().await.expect("json"), first_body);
    }
    assert_eq!(
        new_token.status(),
        503,
        "a new submit cannot start without the token store"
    );
    assert!(new_token.headers().contains_key("retry-after"));
    rig.assert_each_order_paid_once(&orders, "Redis flushed and stopped")
        .await;
}
