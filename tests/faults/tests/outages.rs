//! PostgreSQL and Redis go away mid-storm or mid-sweep; the backend is not restarted.

use crate::rig::{Platform, Rig, RigOptions, failures, order_nos};
use api_types::platform::PaymentStatus;
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
    let orders = rig.paid_orders(12, AMOUNT).await;
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
    rig.assert_each_order_paid_once(&order_nos(&orders), "PostgreSQL restart")
        .await;
    println!(
        "{} deliveries, {} failed during the outage",
        answers.len(),
        failures(&answers)
    );
}

#[tokio::test]
async fn postgres_restarted_during_an_expiry_sweep_closes_every_order_and_charges_nothing() {
    let pg = OwnedPostgres::start().expect("own PostgreSQL cluster");
    // Payments never decide by themselves, no callback ever comes, and each
    // query and close takes the platform 300 ms: a sweep holds an order's row
    // lock in an open transaction for 600 ms while it closes the payment.
    let rig = Rig::start(RigOptions {
        postgres: pg.url("").trim_end_matches('/').to_owned(),
        platform: Platform::Outside(platform_sim::Chaos {
            hold_processing: Some(Duration::from_secs(3_600)),
            query_latency: Some(Duration::from_millis(300)),
            ..platform_sim::Chaos::default()
        }),
        env: vec![(backend::env::ORDER_TTL_SECS.into(), "2".into())],
        ..RigOptions::default()
    })
    .await;
    let paid = rig.paid_orders(6, AMOUNT).await;
    let unpaid = rig.orders(6, AMOUNT).await;
    let orders = [order_nos(&paid), unpaid].concat();

    // The first order the sweep closes means it is working through the rest:
    // PostgreSQL goes away under the transaction of the next one, for 3 s.
    let closing = tokio::time::Instant::now();
    loop {
        let closed: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM orders WHERE order_no = ANY($1) AND status = 'CLOSED'",
        )
        .bind(&orders)
        .fetch_one(&rig.db)
        .await
        .expect("count");
        if closed > 0 {
            break;
        }
        assert!(
            closing.elapsed() < Duration::from_secs(15),
            "the expiry sweep never closed an order"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pg.stop().expect("stops");
    tokio::time::sleep(Duration::from_secs(3)).await;
    pg.resume().expect("starts again");
    let pending = rig
        .wait_until_settled(&orders, Duration::from_secs(30))
        .await;

    assert_eq!(pending, 0, "orders left PENDING after the restart");
    let statuses: Vec<String> =
        sqlx::query_scalar("SELECT status FROM orders WHERE order_no = ANY($1)")
            .bind(&orders)
            .fetch_all(&rig.db)
            .await
            .expect("statuses");
    assert!(
        statuses.len() == orders.len() && statuses.iter().all(|s| s == "CLOSED"),
        "every order CLOSED: {statuses:?}"
    );
    let (open_attempts, ledger_rows, held, deducted): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM payment_attempts WHERE status <> 'CLOSED'),
                (SELECT count(*) FROM payment_ledger),
                (SELECT coalesce(sum(held_cents), 0)::bigint FROM accounts),
                (SELECT coalesce(sum(opening_balance_cents - balance_cents), 0)::bigint FROM accounts)",
    )
    .fetch_one(&rig.db)
    .await
    .expect("sums");
    assert_eq!(
        (open_attempts, ledger_rows, held, deducted),
        (0, 0, 0, 0),
        "every attempt CLOSED, nothing charged, every hold released"
    );
    let platform = rig.platform().expect("the platform outside");
    let at_platform: Vec<_> = paid
        .iter()
        .map(|p| {
            platform
                .payment(&p.platform_payment_id)
                .expect("the platform has it")
        })
        .collect();
    assert!(
        at_platform
            .iter()
            .all(|p| p.status == PaymentStatus::Closed),
        "every paid order's payment closed at the platform: {:?}",
        at_platform.iter().map(|p| p.status).collect::<Vec<_>>()
    );
    assert!(
        at_platform.iter().any(|p| p.queries >= 2),
        "no sweep transaction was cut by the restart (each payment was queried once)"
    );
    match backend::invariants::check(&rig.db)
        .await
        .expect("invariants query")
    {
        Ok(_) => {}
        Err(violations) => panic!("{violations}"),
    }
    assert_eq!(
        rig.backends[0].lock().await.starts,
        1,
        "the backend was not restarted"
    );
}

#[tokio::test]
async fn redis_flushed_then_stopped_mid_storm_leaves_callbacks_exactly_once_and_pay_replays_answered()
 {
    let mut rig = Rig::start(RigOptions::default()).await;
    let orders = rig.paid_orders(6, AMOUNT).await;
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
    rig.assert_each_order_paid_once(&order_nos(&orders), "Redis flushed and stopped")
        .await;
}
