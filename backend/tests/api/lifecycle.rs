//! The payment lifecycle past the first callback, against `platform-sim` over
//! HTTP: the active query settles payments whose callbacks never come, expired
//! orders are closed at the platform (or booked when the close answers "already
//! paid"), stuck payments are flagged, and three backends running the workers
//! over one database never query or close one payment at once.

use crate::helpers::{TestApp, spawn_app_paying_through};
use api_types::platform::PaymentStatus;
use api_types::{AttemptStatus, OrderStatus};
use backend::config::Config;
use backend::startup::Application;
use platform_sim::{Chaos, Simulator};
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The app paying through a platform with `chaos` that decides after 50 ms
/// (unless the chaos holds payments processing), after `adjust`.
async fn app_with_platform(chaos: Chaos, adjust: impl FnOnce(&mut Config)) -> (TestApp, Simulator) {
    spawn_app_paying_through(chaos, Duration::from_millis(50), adjust).await
}

/// Queries one second after the hand-over and every second after that.
fn query_quickly(config: &mut Config) {
    config.query_after_secs = 1;
    config.query_every_secs = 1;
}

fn dropping_callbacks() -> Chaos {
    Chaos {
        drop_callbacks: true,
        ..Chaos::default()
    }
}

fn processing_for_an_hour() -> Chaos {
    Chaos {
        hold_processing: Some(Duration::from_secs(3_600)),
        ..Chaos::default()
    }
}

/// Takes a token and pays; the pay must be accepted.
async fn pay(app: &TestApp, order_no: &str) {
    let token = app.request_token(order_no).await;
    let response = app.pay(order_no, token).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED, "pay {order_no}");
}

/// Waits (at most `limit`) until no order of the database is PENDING.
async fn wait_until_none_pending(app: &TestApp, limit: Duration) {
    let started = Instant::now();
    loop {
        let pending = count(app, "SELECT count(*) FROM orders WHERE status = 'PENDING'").await;
        if pending == 0 {
            return;
        }
        assert!(
            started.elapsed() < limit,
            "{pending} orders still PENDING after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&app.db)
        .await
        .expect("count")
}

/// The attempt of an order: our payment id, its status and the platform's id.
async fn attempt(app: &TestApp, order_no: &str) -> (Uuid, String, Option<String>) {
    sqlx::query_as(
        "SELECT payment_id, status, platform_payment_id FROM payment_attempts WHERE order_no = $1",
    )
    .bind(order_no)
    .fetch_one(&app.db)
    .await
    .expect("attempt")
}

async fn held(app: &TestApp) -> i64 {
    count(
        app,
        "SELECT coalesce(sum(held_cents), 0)::bigint FROM accounts",
    )
    .await
}

#[tokio::test]
async fn with_every_callback_dropped_the_query_alone_settles_50_orders_once_and_late_callbacks_change_nothing()
 {
    let (app, simulator) = app_with_platform(dropping_callbacks(), query_quickly).await;
    let account = app.create_account(60_000, "EUR").await;
    let mut orders = Vec::new();
    for _ in 0..50 {
        let order = app.create_order(&account, 1_000).await;
        pay(&app, &order.order_no).await;
        orders.push(order.order_no);
    }

    wait_until_none_pending(&app, Duration::from_secs(40)).await;

    assert_eq!(
        count(&app, "SELECT count(*) FROM orders WHERE status = 'PAID'").await,
        50
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM payment_ledger WHERE callback_id LIKE 'query:%'"
        )
        .await,
        50,
        "every charge came from a query's answer"
    );
    app.assert_wallet_untouched(&account).await;
    assert_eq!(held(&app).await, 0);
    assert!(
        simulator.delivery_log().attempts().is_empty(),
        "no callback was ever sent"
    );

    // The platform's callbacks turn up late: each names the payment the
    // query already booked, so each is acknowledged and changes nothing.
    for order_no in &orders {
        let (payment_id, status, platform_payment_id) = attempt(&app, order_no).await;
        assert_eq!(status, "SUCCEEDED");
        let platform_payment_id = platform_payment_id.expect("platform id recorded");
        let payment = simulator
            .payment(&platform_payment_id)
            .expect("the platform has it");
        assert!(payment.queries >= 1, "{order_no} was queried");
        let body = json!({
            "type": "payment.succeeded",
            "timestamp": "2026-12-03T10:00:00Z",
            "data": {
                "order_no": order_no,
                "amount_cents": 1_000,
                "currency": "EUR",
                "payment_id": platform_payment_id,
                "merchant_reference": payment_id,
            }
        })
        .to_string();
        let response = app
            .post_callback(&format!("evt_{}", Uuid::new_v4().simple()), &body)
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert_eq!(app.count("payment_ledger").await, 50);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.count("anomalies").await, 0);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_lost_hand_over_answer_with_no_callback_is_unknown_then_paid_once_by_the_query() {
    let (app, simulator) = app_with_platform(
        Chaos {
            lose_create_answer: true,
            drop_callbacks: true,
            ..Chaos::default()
        },
        query_quickly,
    )
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    pay(&app, &order.order_no).await;
    // The hand-over runs right after the pay's answer; its answer is lost.
    let mut seen = Vec::new();
    for _ in 0..500 {
        let status = attempt(&app, &order.order_no).await.1;
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if status == "SUCCEEDED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.contains(&"UNKNOWN".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"FAILED".to_owned()), "{seen:?}");

    let paid = app.wait_until_final(&order.order_no).await;

    assert_eq!(paid.status, OrderStatus::Paid);
    assert_eq!(paid.payment_status, Some(AttemptStatus::Succeeded));
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.count("payment_ledger").await, 1);
    let (_, _, platform_payment_id) = attempt(&app, &order.order_no).await;
    let payment = simulator
        .payment(&platform_payment_id.expect("learned from the query"))
        .expect("one payment at the platform");
    assert_eq!(payment.status, PaymentStatus::Succeeded);
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_expired_order_whose_payment_is_still_processing_is_closed_at_the_platform() {
    let (app, simulator) = app_with_platform(processing_for_an_hour(), |c| {
        c.order_ttl_secs = 2;
    })
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    pay(&app, &order.order_no).await;
    // The platform pays: nothing is held on the wallet, before or after the close.
    assert_eq!(held(&app).await, 0);

    let closed = app.wait_until_final(&order.order_no).await;

    assert_eq!(closed.status, OrderStatus::Closed);
    assert_eq!(closed.payment_status, Some(AttemptStatus::Closed));
    assert_eq!(held(&app).await, 0, "the hold is released");
    assert_eq!(app.balance(&account).await, 10_000, "nothing charged");
    assert_eq!(app.count("payment_ledger").await, 0);
    let (_, _, platform_payment_id) = attempt(&app, &order.order_no).await;
    let payment = simulator
        .payment(&platform_payment_id.expect("recorded at hand-over"))
        .expect("the platform has it");
    assert_eq!(payment.status, PaymentStatus::Closed);
    assert_eq!(payment.closes, 1);
    assert!(payment.queries >= 1, "queried before the close");
    // A closed order takes no new payment.
    let response = app.post_request_token(&order.order_no).await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_expiry_racing_a_success_is_booked_once_when_the_close_answers_already_paid() {
    let (app, simulator) = app_with_platform(
        Chaos {
            succeed_on_close: true,
            ..processing_for_an_hour()
        },
        |c| c.order_ttl_secs = 2,
    )
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    pay(&app, &order.order_no).await;

    let paid = app.wait_until_final(&order.order_no).await;

    assert_eq!(paid.status, OrderStatus::Paid, "never CLOSED");
    app.assert_wallet_untouched(&account).await;
    assert_eq!(held(&app).await, 0);
    let (_, _, platform_payment_id) = attempt(&app, &order.order_no).await;
    let platform_payment_id = platform_payment_id.expect("recorded");
    // The platform's own success callback, sent when the close made it pay,
    // arrives too: acknowledged, nothing changes, nobody is alarmed.
    let started = Instant::now();
    while !simulator
        .payment(&platform_payment_id)
        .expect("payment")
        .callbacks
        .iter()
        .any(|callback| callback.delivered)
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "callback delivered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.count("payment_ledger").await, 1);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.anomalies(&order.order_no).await, Vec::<String>::new());
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_payment_without_a_result_is_flagged_stuck_once_after_the_scheduled_queries_and_still_asked_about()
 {
    let (app, simulator) = app_with_platform(processing_for_an_hour(), |c| {
        query_quickly(c);
        c.query_retries = 2;
    })
    .await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    pay(&app, &order.order_no).await;

    let started = Instant::now();
    while app.anomalies(&order.order_no).await.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "flagged STUCK_PAYMENT"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, status, platform_payment_id) = attempt(&app, &order.order_no).await;
    let queries_when_flagged = simulator
        .payment(platform_payment_id.as_deref().expect("recorded"))
        .expect("payment")
        .queries;
    assert_eq!(queries_when_flagged, 3, "the first query and two more");
    tokio::time::sleep(Duration::from_millis(2_500)).await;

    assert_eq!(status, "SUBMITTED");
    assert_eq!(app.anomalies(&order.order_no).await, ["STUCK_PAYMENT"]);
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Pending
    );
    assert_eq!(
        held(&app).await,
        0,
        "a platform payment holds nothing, open or not"
    );
    assert!(
        simulator
            .payment(platform_payment_id.as_deref().expect("recorded"))
            .expect("payment")
            .queries
            > queries_when_flagged,
        "the queries go on"
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn three_backends_running_the_workers_never_query_or_close_one_payment_at_once() {
    // Every query and close takes 200 ms at the platform, so two workers on one
    // payment would overlap there and be counted.
    let (app, simulator) = app_with_platform(
        Chaos {
            query_latency: Some(Duration::from_millis(200)),
            ..processing_for_an_hour()
        },
        |c| {
            query_quickly(c);
            c.order_ttl_secs = 5;
        },
    )
    .await;
    let mut others = Vec::new();
    for _ in 0..2 {
        let mut config = app.config.clone();
        config.bind_addr = "127.0.0.1:0".parse().expect("address");
        let other = Application::build(config).await.expect("second backend");
        others.push(tokio::spawn(other.run_until_stopped()));
    }
    let account = app.create_account(100_000, "EUR").await;
    // Ten payments stay processing until their orders expire and are closed;
    // ten are decided at once but never called back, so queries settle them.
    let mut closing = Vec::new();
    for _ in 0..10 {
        let order = app.create_order(&account, 1_000).await;
        pay(&app, &order.order_no).await;
        closing.push(order.order_no);
    }
    simulator.set_chaos(Chaos {
        query_latency: Some(Duration::from_millis(200)),
        drop_callbacks: true,
        ..Chaos::default()
    });
    let mut paying = Vec::new();
    for _ in 0..10 {
        let order = app.create_order(&account, 1_000).await;
        pay(&app, &order.order_no).await;
        paying.push(order.order_no);
    }

    wait_until_none_pending(&app, Duration::from_secs(40)).await;

    for (orders, expected) in [
        (&closing, OrderStatus::Closed),
        (&paying, OrderStatus::Paid),
    ] {
        for order_no in orders {
            assert_eq!(app.order(order_no).await.status, expected, "{order_no}");
            let (_, _, platform_payment_id) = attempt(&app, order_no).await;
            let payment = simulator
                .payment(&platform_payment_id.expect("recorded"))
                .expect("payment");
            assert!(payment.queries >= 1, "{order_no} was queried");
            assert_eq!(
                payment.max_concurrent_requests, 1,
                "{order_no}: queries and closes overlapped"
            );
            let closes = u32::from(expected == OrderStatus::Closed);
            assert_eq!(payment.closes, closes, "{order_no}");
        }
    }
    assert_eq!(app.count("payment_ledger").await, 10);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(held(&app).await, 0);
    app.assert_invariants().await;
    for other in others {
        other.abort();
    }
}

#[tokio::test]
async fn the_remote_platform_client_reads_every_answer_to_a_query_and_a_close() {
    let secret = callback_signing::CallbackSecret::generate();
    let (simulator, url) = crate::helpers::start_platform(
        &secret,
        Chaos {
            succeed_on_close: true,
            drop_callbacks: true,
            ..processing_for_an_hour()
        },
        Duration::from_millis(50),
    )
    .await;
    let platform =
        backend::platform::Platform::remote(&url, "http://127.0.0.1:9".into()).expect("client");
    let ours = backend::platform::PaymentRef {
        order_no: "ord_1",
        payment_id: Uuid::new_v4(),
    };
    assert_eq!(platform.query(ours).await.expect("answer"), None);
    assert_eq!(
        platform.close(ours).await.expect("answer"),
        backend::platform::CloseAnswer::NotFound
    );
    simulator
        .create_payment(
            "key-1",
            api_types::platform::CreatePayment {
                order_no: "ord_1".into(),
                amount_cents: 1_000,
                currency: "EUR".parse().expect("currency"),
                notify_url: "http://127.0.0.1:9/cb".into(),
                merchant_reference: Some(ours.payment_id.to_string()),
            },
        )
        .await
        .expect("created");
    let processing = platform.query(ours).await.expect("answer").expect("found");
    assert_eq!(processing.status, PaymentStatus::Processing);

    // The close makes it succeed: "already paid", never a lost answer.
    assert_eq!(
        platform.close(ours).await.expect("answer"),
        backend::platform::CloseAnswer::AlreadyPaid
    );
    let paid = platform.query(ours).await.expect("answer").expect("found");
    assert_eq!(paid.status, PaymentStatus::Succeeded);
}
