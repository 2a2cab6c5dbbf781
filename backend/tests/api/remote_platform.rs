//! The backend against `platform-sim` over HTTP (`PLATFORM_URL`), with the
//! platform misbehaving the way real ones do.

use crate::helpers::{TestApp, calls_identifying_us, spawn_app_paying_through};
use api_types::OrderStatus;
use platform_sim::{Chaos, Redeliver, Simulator};
use reqwest::StatusCode;
use std::time::Duration;

async fn app_paying_through(chaos: Chaos) -> (TestApp, Simulator) {
    app_paying_through_after(chaos, Duration::from_millis(50)).await
}

/// The app paying through a platform that decides after `processing_delay`.
async fn app_paying_through_after(
    chaos: Chaos,
    processing_delay: Duration,
) -> (TestApp, Simulator) {
    spawn_app_paying_through(chaos, processing_delay, |_| {}).await
}

/// Waits until the platform stops delivering (each test has one payment); returns its attempts.
async fn wait_until_platform_is_done(simulator: &Simulator) -> u32 {
    // Done = no new attempt for a whole second (longer than any knob's interval here).
    let (mut last, mut quiet_polls) = (0, 0);
    for _ in 0..150 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let attempts = u32::try_from(simulator.delivery_log().attempts().len()).unwrap_or(u32::MAX);
        quiet_polls = if attempts == last && attempts > 0 {
            quiet_polls + 1
        } else {
            0
        };
        if quiet_polls >= 10 {
            return attempts;
        }
        last = attempts;
    }
    last
}

/// The platform's second success is a second notification of the same
/// payment (a new callback id): no news for a PAID order, not an anomaly.
#[tokio::test]
async fn a_platform_delivering_copies_a_second_path_redeliveries_and_a_second_success_charges_once()
{
    let (app, simulator) = app_paying_through(Chaos {
        concurrent_copies: 5,
        second_path_delay: Some(Duration::from_millis(300)),
        second_success: true,
        redeliver_after_success: Some(Redeliver {
            count: 2,
            interval: Duration::from_millis(200),
        }),
        ..Chaos::default()
    })
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let token = app.request_token(&order.order_no).await;

    assert_eq!(
        app.pay(&order.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        app.wait_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );
    let deliveries = wait_until_platform_is_done(&simulator).await;

    assert!(
        deliveries >= 9,
        "the platform delivered only {deliveries} times"
    );
    assert_eq!(app.count("payment_ledger").await, 1);
    app.assert_wallet_untouched(&account).await;
    assert!(app.anomalies(&order.order_no).await.is_empty());
    let outcomes = app.delivery_outcomes(&order.order_no).await;
    assert_eq!(
        outcomes.iter().filter(|o| *o == "CHARGED").count(),
        1,
        "{outcomes:?}"
    );
    assert!(
        outcomes.iter().any(|o| o == "IGNORED_ORDER_FINAL"),
        "the second success was seen as no news: {outcomes:?}"
    );
    let submitted: i64 =
        sqlx::query_scalar("SELECT count(*) FROM payment_attempts WHERE submitted_at IS NOT NULL")
            .fetch_one(&app.db)
            .await
            .expect("count");
    assert_eq!(submitted, 1, "the platform accepted the hand-over");
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_failure_delivered_before_the_success_fails_the_order_charges_nothing_and_flags_the_success()
 {
    let (app, simulator) = app_paying_through(Chaos {
        reorder: true,
        ..Chaos::default()
    })
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let token = app.request_token(&order.order_no).await;

    assert_eq!(
        app.pay(&order.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );
    wait_until_platform_is_done(&simulator).await;

    // FAILED is final: the late success is not charged but put in front of a person.
    let order = app.order(&order.order_no).await;
    assert_eq!(order.status, OrderStatus::Failed);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.count("payment_ledger").await, 0);
    let attempt_payment = attempt_platform_payment_id(&app, &order.order_no).await;
    // The money the platform took is given back, at the platform.
    let refund = app
        .assert_given_back_once(&order, &attempt_payment, &["SUCCESS_AFTER_FAILED"])
        .await;
    assert_eq!(refund.status, "SUCCEEDED");
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_hand_over_to_the_platform_is_idempotent_by_request_token() {
    let (app, simulator) = app_paying_through(Chaos::default()).await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    let token = app.request_token(&order.order_no).await;
    app.pay(&order.order_no, token).await;
    app.wait_until_final(&order.order_no).await;

    // The dispatcher hands the same attempt over again (as after a crash): the platform
    // answers with the same payment and starts no second delivery series.
    let attempt = backend::db::attempts::find_by_order(&app.db, &order.order_no)
        .await
        .expect("query")
        .expect("attempt");
    let again = reqwest::Client::new()
        .post(format!(
            "{}/v1/payments",
            app.config.platform_url.clone().expect("remote")
        ))
        .header("idempotency-key", attempt.request_token.to_string())
        .json(&serde_json::json!({
            "order_no": order.order_no, "amount_cents": 2_500, "currency": "EUR",
            "notify_url": app.url("/api/payments/callback"),
            "merchant_reference": attempt.payment_id.to_string(),
        }))
        .send()
        .await
        .expect("sent");

    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    wait_until_platform_is_done(&simulator).await;
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(app.anomalies(&order.order_no).await, Vec::<String>::new());
}

#[tokio::test]
async fn the_platform_endpoint_says_remote_when_payments_go_over_http() {
    let (app, _simulator) = app_paying_through(Chaos::default()).await;

    let body: serde_json::Value = app
        .http
        .get(app.url("/api/platform"))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");

    assert_eq!(
        body,
        serde_json::json!({"platform": "remote", "sandbox": false, "pays_by_qr_code": false,
                           "methods": ["platform"], "demo_shoppers": []})
    );
}

/// The platform's payment id recorded on the order's payment attempt.
async fn attempt_platform_payment_id(app: &TestApp, order_no: &str) -> String {
    sqlx::query_scalar("SELECT platform_payment_id FROM payment_attempts WHERE order_no = $1")
        .bind(order_no)
        .fetch_one(&app.db)
        .await
        .expect("the attempt's platform payment id")
}

/// The status of the order's payment attempt, read from the database.
async fn attempt_status(app: &TestApp, order_no: &str) -> Option<String> {
    sqlx::query_scalar("SELECT status FROM payment_attempts WHERE order_no = $1")
        .bind(order_no)
        .fetch_optional(&app.db)
        .await
        .expect("attempt status")
}

#[tokio::test]
async fn a_hand_over_whose_answer_is_lost_is_unknown_never_failed_then_paid_once() {
    // The platform accepts the payment but answers 503, and takes 3 s to decide:
    // long enough to see the attempt UNKNOWN before the result settles it.
    let (app, simulator) = app_paying_through_after(
        Chaos {
            lose_create_answer: true,
            ..Chaos::default()
        },
        Duration::from_secs(3),
    )
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let token = app.request_token(&order.order_no).await;

    assert_eq!(
        app.pay(&order.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );
    let mut seen = Vec::new();
    for _ in 0..100 {
        let status = attempt_status(&app, &order.order_no)
            .await
            .unwrap_or_default();
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if status == "SUCCEEDED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    assert!(
        seen.contains(&"UNKNOWN".to_owned()),
        "the lost answer made it UNKNOWN: {seen:?}"
    );
    assert!(!seen.contains(&"FAILED".to_owned()), "{seen:?}");
    assert_eq!(
        seen.last().map(String::as_str),
        Some("SUCCEEDED"),
        "{seen:?}"
    );
    let order = app.wait_until_final(&order.order_no).await;
    assert_eq!(order.status, OrderStatus::Paid);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(app.count("anomalies").await, 0);
    // Every call to the platform said who made it and that it reads JSON.
    let calls = calls_identifying_us(&simulator, "/v1/");
    assert!(calls.iter().any(|c| c == "POST /v1/payments"), "{calls:?}");
    app.assert_invariants().await;
}

/// A TCP gate in front of `upstream`: while shut it accepts connections and
/// leaves them unanswered (a platform that stalled, or a network black hole);
/// while open each connection is piped through. Shutting it also cuts the
/// connections piped so far, so that no pooled connection slips past it.
struct Gate {
    url: String,
    /// Connections accepted while shut.
    held: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    open: tokio::sync::watch::Sender<bool>,
}

async fn shut_gate_to(upstream: &str) -> Gate {
    gate_to(upstream, false).await
}

async fn gate_to(upstream: &str, open_now: bool) -> Gate {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let (open, opened) = tokio::sync::watch::channel(open_now);
    let held = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&held);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            if !*opened.borrow() {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let (mut opened, upstream) = (opened.clone(), upstream.clone());
            tokio::spawn(async move {
                if opened.wait_for(|open| *open).await.is_err() {
                    return;
                }
                if let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await {
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = opened.wait_for(|open| !*open) => {}
                    }
                }
            });
        }
    });
    Gate { url, held, open }
}

/// The app paying through `gate` to a platform signing with `secret`.
async fn app_behind(gate: &Gate, secret: &callback_signing::CallbackSecret) -> TestApp {
    crate::helpers::spawn_app_with(|c| {
        c.webhook_secret = Some(secrecy::SecretString::from(secret.expose()));
        c.platform = Some(backend::config::PlatformKind::Remote);
        c.platform_url = Some(gate.url.clone());
    })
    .await
}

/// Half a second after `sent` hand-overs were started towards a shut gate:
/// it holds at least one and at most `HAND_OVERS_IN_FLIGHT_MAX` connections,
/// and `unsubmitted` (a count) says all `sent` are committed, none handed over.
async fn assert_held_within_the_bound(gate: &Gate, app: &TestApp, unsubmitted: &str, sent: usize) {
    use backend::platform::HAND_OVERS_IN_FLIGHT_MAX;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = gate.held.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (1..=HAND_OVERS_IN_FLIGHT_MAX).contains(&held),
        "{held} connections to a stalled platform for {sent} hand-overs"
    );
    let waiting = crate::helpers::count(app, unsubmitted).await;
    assert_eq!(waiting, sent as i64, "all committed, none handed over yet");
}

/// A platform that stops answering while pays keep coming gets at most
/// `HAND_OVERS_IN_FLIGHT_MAX` hand-overs (and connections) from one process;
/// the pays beyond them still answer 202 with their attempts committed, and
/// the dispatcher hands those over once the platform answers again, each once.
#[tokio::test]
async fn a_stalled_platform_gets_a_bounded_number_of_hand_overs_and_the_rest_follow_when_it_answers()
 {
    use backend::platform::HAND_OVERS_IN_FLIGHT_MAX;
    const PAYS: usize = HAND_OVERS_IN_FLIGHT_MAX + 16;
    let secret = callback_signing::CallbackSecret::generate();
    let (simulator, sim_url) = crate::helpers::start_platform(
        &secret,
        crate::helpers::silent_platform(),
        Duration::from_secs(3600),
    )
    .await;
    let gate = shut_gate_to(&sim_url).await;
    let app = app_behind(&gate, &secret).await;
    let account = app.create_account(1_000_000, "EUR").await;
    let orders = app.orders_with_tokens(&account, PAYS, 100).await;
    // All at once: far fewer than the platform client's 10 s timeout apart.
    for answer in app.pay_at_once(&orders).await {
        assert_eq!(answer.status(), StatusCode::ACCEPTED);
    }
    let orders: Vec<_> = orders.into_iter().map(|(order, _)| order).collect();

    // Every pay answered, every attempt committed; the stalled platform holds
    // no more connections than there are hand-over slots.
    assert_held_within_the_bound(
        &gate,
        &app,
        "SELECT count(*) FROM payment_attempts WHERE submitted_at IS NULL",
        PAYS,
    )
    .await;

    // The platform answers again: the held hand-overs go through, and the
    // dispatcher hands over the ones the pays left to it.
    gate.open.send_replace(true);
    let mut submitted = 0;
    for _ in 0..600 {
        submitted = sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM payment_attempts
             WHERE status = 'SUBMITTED' AND platform_payment_id IS NOT NULL",
        )
        .fetch_one(&app.db)
        .await
        .expect("count");
        if submitted == PAYS as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        submitted, PAYS as i64,
        "every attempt handed over once the platform answers"
    );
    for order in &orders {
        let payment_id: uuid::Uuid =
            sqlx::query_scalar("SELECT payment_id FROM payment_attempts WHERE order_no = $1")
                .bind(&order.order_no)
                .fetch_one(&app.db)
                .await
                .expect("attempt");
        let payment = simulator
            .query_by_reference(&payment_id.to_string())
            .await
            .expect("the platform has the payment");
        assert_eq!(payment.order_no, order.order_no);
    }
    let moved: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE status <> 'PENDING'")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(moved, 0, "no order moved without a result");
}

/// Refunds share the bound with the payments: a platform that stalls while
/// refunds keep coming gets at most `HAND_OVERS_IN_FLIGHT_MAX` refund
/// hand-overs from one process; the refunds beyond them still answer 202,
/// committed, and the refund dispatcher hands them over once the platform
/// answers again, each once.
#[tokio::test]
async fn refunds_to_a_stalled_platform_share_the_bound_and_follow_when_it_answers() {
    use crate::helpers::{post_refund, wait_until_refunds_settle};
    use backend::platform::HAND_OVERS_IN_FLIGHT_MAX;
    const REFUNDS: usize = HAND_OVERS_IN_FLIGHT_MAX + 16;
    let secret = callback_signing::CallbackSecret::generate();
    let (simulator, sim_url) =
        crate::helpers::start_platform(&secret, Chaos::default(), Duration::from_millis(50)).await;
    let gate = gate_to(&sim_url, true).await;
    let app = app_behind(&gate, &secret).await;
    let (account, order) = app.account_with_order(10_000, 5_000).await;
    let paid = app.pay_until_final(&order.order_no).await;
    assert_eq!(paid.status, OrderStatus::Paid);

    // The platform stalls; 80 refunds of one cent each come at once.
    gate.open.send_replace(false);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let answers = futures::future::join_all((0..REFUNDS).map(|i| {
        let (app, order_no) = (&app, &order.order_no);
        async move {
            post_refund(
                app,
                order_no,
                Some(&uuid::Uuid::new_v4().to_string()),
                &serde_json::json!({"amount_cents": 1, "reason": format!("item {i} returned")}),
            )
            .await
            .status()
        }
    }))
    .await;
    assert!(
        answers.iter().all(|status| *status == StatusCode::ACCEPTED),
        "{answers:?}"
    );

    // Every refund committed, none handed over; the stalled platform holds no
    // more connections than there are hand-over slots.
    assert_held_within_the_bound(
        &gate,
        &app,
        "SELECT count(*) FROM refunds WHERE platform_refund_id IS NULL",
        REFUNDS,
    )
    .await;

    // The platform answers again: every refund is handed over, each once, and
    // each gives one cent back.
    gate.open.send_replace(true);
    let settled = wait_until_refunds_settle(&app, &order.order_no).await;
    assert_eq!(settled.len(), REFUNDS);
    let ids: Vec<Option<String>> =
        sqlx::query_scalar("SELECT platform_refund_id FROM refunds ORDER BY refund_no")
            .fetch_all(&app.db)
            .await
            .expect("ids");
    let ids: std::collections::BTreeSet<String> = ids.into_iter().flatten().collect();
    assert_eq!(
        ids.len(),
        REFUNDS,
        "each refund has its own platform refund"
    );
    let payment_id = attempt_platform_payment_id(&app, &order.order_no).await;
    let payment = simulator
        .payment(&payment_id)
        .expect("the platform has the payment");
    assert_eq!(
        payment.refunded_cents, REFUNDS as i64,
        "one cent each, once"
    );
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}
