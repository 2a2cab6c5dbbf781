//! `PLATFORM=alipay`: the backend speaks the Alipay open platform gateway to a
//! `platform-sim` serving `/gateway.do` on a real socket, with a key set
//! written to files as a merchant would have them. Notifications are posted
//! the way Alipay posts them: form parameters signed RSA2 with the platform
//! key over the sorted parameters without `sign` and `sign_type`.

use crate::helpers::{
    TestApp, calls_identifying_us, platform_keys, serve_platform_sim, silent_platform,
    spawn_app_with, wait_until_refunds_settle,
};
use api_types::api::Order;
use api_types::{OrderStatus, RefundStatus as OurRefundStatus};
use backend::config::{AlipayConfig, Config, PlatformKind};
use backend::platform::{CloseAnswer, PaymentRef, Platform, RefundRef};
use platform_protocols::alipay::{
    TradeNotification, TradeStatus, format_timestamp, sign_notification, sign_notification_params,
};
use platform_protocols::keys::{self, PrivateKey};
use platform_protocols::money::Yuan;
use platform_sim::AlipayConfig as SimAlipay;
use reqwest::StatusCode;
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

const APP_ID: &str = "2021000000000001";
const NOTIFY_PATH: &str = "/api/payments/callback/alipay";
/// Long enough that no trade finishes during a test.
const NEVER: Duration = Duration::from_secs(3_600);

/// The backend's Alipay settings for the key set, against `gateway_url`:
/// the merchant private key is the application private key, the platform
/// public key the Alipay public key.
fn alipay_config(gateway_url: &str) -> AlipayConfig {
    let (_, dir) = platform_keys();
    AlipayConfig {
        alipay_gateway_url: gateway_url.to_owned(),
        alipay_app_id: Some(APP_ID.into()),
        alipay_app_private_key_file: Some(dir.join(keys::MERCHANT_PRIVATE_KEY_FILE)),
        alipay_public_key_file: Some(dir.join(keys::PLATFORM_PUBLIC_KEY_FILE)),
    }
}

/// A platform-sim speaking Alipay for our application on its own port,
/// deciding payments after `delay`, finishing trades `finished_after` they
/// were paid, retrying notifications every 100 ms; returns its gateway URL.
async fn start_alipay(
    chaos: platform_sim::Chaos,
    delay: Duration,
    finished_after: Duration,
) -> (platform_sim::Simulator, String) {
    let (keys, _) = platform_keys();
    let (simulator, url) = serve_platform_sim(chaos, delay, |config| {
        config.alipay = Some(SimAlipay {
            trade_finished_after: finished_after,
            ..SimAlipay::from_keys(APP_ID, keys)
        });
    })
    .await;
    (
        simulator,
        format!("{url}{}", platform_sim::alipay::GATEWAY_PATH),
    )
}

/// The app with `PLATFORM=alipay` against a fresh platform-sim.
async fn spawn_alipay_app(
    chaos: platform_sim::Chaos,
    delay: Duration,
    finished_after: Duration,
) -> (TestApp, platform_sim::Simulator, String) {
    let (simulator, url) = start_alipay(chaos, delay, finished_after).await;
    let gateway_url = url.clone();
    let app = spawn_app_with(move |config| {
        config.platform = Some(PlatformKind::Alipay);
        config.alipay = alipay_config(&gateway_url);
    })
    .await;
    (app, simulator, url)
}

/// The app against an Alipay that decides each payment after 50 ms but
/// posts no notification of its own (the test posts them) and finishes no
/// trade; the simulator lives as long as the test holds it.
async fn silent_alipay_app() -> (TestApp, platform_sim::Simulator) {
    let (app, simulator, _) =
        spawn_alipay_app(silent_platform(), Duration::from_millis(50), NEVER).await;
    (app, simulator)
}

fn connector(gateway_url: &str) -> Platform {
    Platform::alipay(
        alipay_config(gateway_url).load().expect("settings load"),
        "http://127.0.0.1:9".into(),
    )
    .expect("connector")
}

fn yuan(fen: i64) -> Yuan {
    Yuan::from_fen(fen).expect("not negative")
}

/// Alipay's notification of the trade paying `order` (`TRADE_SUCCESS`), with
/// our payment id passed back.
fn trade_notice(
    order: &Order,
    payment_id: Uuid,
    trade_no: &str,
    total: i64,
    status: TradeStatus,
) -> TradeNotification {
    let now = format_timestamp(OffsetDateTime::now_utc());
    let mut notice = TradeNotification::new(
        &Uuid::new_v4().simple().to_string(),
        &now,
        APP_ID,
        trade_no,
        &order.order_no,
    );
    notice.trade_status = Some(status);
    notice.total_amount = Some(yuan(total));
    notice.receipt_amount = Some(yuan(total));
    notice.buyer_pay_amount = Some(yuan(total));
    notice.subject = Some(format!("Order {}", order.order_no));
    notice.gmt_create = Some(now.clone());
    notice.gmt_payment = Some("2026-12-03 10:00:00".into());
    notice.passback_params = Some(payment_id.to_string());
    notice
}

fn signed(notice: &TradeNotification) -> String {
    sign_notification(notice, &platform_keys().0.platform_private).expect("signs")
}

async fn post_form(app: &TestApp, body: String) -> (StatusCode, String) {
    let answer = app
        .http
        .post(app.url(NOTIFY_PATH))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("request sent");
    let status = answer.status();
    (status, answer.text().await.expect("a body"))
}

/// Posts a notification and asserts Alipay's `success` came back.
async fn post_accepted(app: &TestApp, notice: &TradeNotification) {
    let (status, body) = post_form(app, signed(notice)).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "success"));
}

async fn charges(app: &TestApp, order_no: &str) -> i64 {
    app.ledger_rows(Some(order_no), "CHARGE").await
}

async fn refund_credits(app: &TestApp, order_no: &str) -> i64 {
    app.ledger_rows(Some(order_no), "REFUND").await
}

/// Waits until the simulator has had `count` distinct notifications about
/// `trade_no` acknowledged (HTTP 200, `success`).
async fn wait_for_acknowledged(simulator: &platform_sim::Simulator, trade_no: &str, count: usize) {
    for _ in 0..200 {
        let mut acknowledged: Vec<String> = simulator
            .delivery_log()
            .attempts()
            .into_iter()
            .filter(|attempt| attempt.payment_id == trade_no && attempt.outcome.is_success())
            .map(|attempt| attempt.callback_id)
            .collect();
        acknowledged.sort();
        acknowledged.dedup();
        if acknowledged.len() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{count} notifications about {trade_no} were not acknowledged");
}

#[tokio::test]
async fn a_shopper_pays_by_qr_code_and_trade_success_then_finished_charge_once() {
    let (app, simulator, _) = spawn_alipay_app(
        platform_sim::Chaos::default(),
        Duration::from_millis(500),
        Duration::from_millis(300),
    )
    .await;
    // A shopper with no wallet money: the platform takes the payment from their own account.
    let (account, order, payment_id) = app.submitted_cny_order(0, 2_450).await;

    // While it is being paid the page can show Alipay's qr_code.
    let code = app.qr_code_shown(&order, payment_id).await;
    assert!(code.starts_with("https://qr.alipay.com/"), "{code}");
    let platform: serde_json::Value = app.get_json("/api/platform").await;
    assert_eq!(platform["pays_by_qr_code"], true, "{platform}");

    let paid = app.wait_until_final(&order.order_no).await;
    assert_eq!(paid.status, OrderStatus::Paid);
    let sim_payment = simulator
        .query_by_reference(&format!("alipay:{}", order.order_no))
        .await
        .expect("the simulator has it");
    // TRADE_SUCCESS, then TRADE_FINISHED under another notify_id: both acknowledged.
    wait_for_acknowledged(&simulator, &sim_payment.payment_id, 2).await;

    app.assert_wallet_untouched(&account).await;
    assert_eq!(charges(&app, &order.order_no).await, 1);
    // Alipay's trade_no was booked, and our payment id came back in passback_params.
    let booked: String =
        sqlx::query_scalar("SELECT payment_id FROM payment_ledger WHERE order_no = $1")
            .bind(&order.order_no)
            .fetch_one(&app.db)
            .await
            .expect("ledger row");
    assert_eq!(booked, sim_payment.payment_id);
    let outcomes = app.delivery_outcomes(&order.order_no).await;
    assert_eq!(outcomes, ["CHARGED", "IGNORED_ORDER_FINAL"], "{outcomes:?}");
    assert!(app.anomalies(&order.order_no).await.is_empty());
    assert_eq!(app.count("refunds").await, 0, "no automatic refund");
    // Every call to the gateway said who made it and that it reads JSON.
    let calls = calls_identifying_us(&simulator, "/gateway.do");
    assert!(!calls.is_empty(), "the precreate went to the gateway");
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_incident_in_alipay_format_charges_once() {
    let (app, _simulator) = silent_alipay_app().await;
    let (account, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;
    let notice = trade_notice(
        &order,
        payment_id,
        "2026120322001400000000000001",
        3_000,
        TradeStatus::TradeSuccess,
    );

    // 100 copies at once.
    let copies = (0..100).map(|_| post_form(&app, signed(&notice)));
    for (status, body) in futures::future::join_all(copies).await {
        assert_eq!((status, body.as_str()), (StatusCode::OK, "success"));
    }
    // 10 retries (Alipay sends a retry with a new notify_time), a restart, one more.
    for _ in 0..10 {
        let mut retry = notice.clone();
        retry.notify_time = format_timestamp(OffsetDateTime::now_utc() + Duration::from_secs(240));
        post_accepted(&app, &retry).await;
    }
    let app = app.restart().await;
    post_accepted(&app, &notice).await;
    app.sign_in_as(&app.http, &account).await;

    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(charges(&app, &order.order_no).await, 1);
    app.assert_wallet_untouched(&account).await;
    let outcomes = app.delivery_outcomes(&order.order_no).await;
    assert_eq!(outcomes.len(), 111);
    assert_eq!(outcomes.iter().filter(|o| *o == "CHARGED").count(), 1);
    assert_eq!(outcomes.iter().filter(|o| *o == "DUPLICATE").count(), 110);
    // One transfer for the payment: the platform's clearing account pays the merchant.
    assert_eq!(
        app.transfers_of(&order.order_no).await,
        ["CHARGE CLEARING -> MERCHANT 3000"]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn trade_success_and_trade_finished_are_one_payment_without_anomaly() {
    let (app, _simulator) = silent_alipay_app().await;
    let (account, order, payment_id) = app.submitted_cny_order(10_000, 1_250).await;
    let trade_no = "2026120322001400000000000002";
    let success = trade_notice(
        &order,
        payment_id,
        trade_no,
        1_250,
        TradeStatus::TradeSuccess,
    );
    let finished = trade_notice(
        &order,
        payment_id,
        trade_no,
        1_250,
        TradeStatus::TradeFinished,
    );
    assert_ne!(success.notify_id, finished.notify_id);

    post_accepted(&app, &success).await;
    post_accepted(&app, &finished).await;
    // And the pair again, each a duplicate of itself.
    post_accepted(&app, &finished).await;
    post_accepted(&app, &success).await;

    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(charges(&app, &order.order_no).await, 1);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(
        app.delivery_outcomes(&order.order_no).await,
        ["CHARGED", "IGNORED_ORDER_FINAL", "DUPLICATE", "DUPLICATE"]
    );
    assert!(app.anomalies(&order.order_no).await.is_empty());
    assert_eq!(app.count("refunds").await, 0, "no automatic refund");
    app.assert_invariants().await;
}

/// Replaces a parameter's value in a form body's parameter list.
fn set(params: &mut [(String, String)], name: &str, value: &str) {
    let param = params
        .iter_mut()
        .find(|(key, _)| key == name)
        .expect("the parameter is there");
    param.1 = value.to_owned();
}

fn parse(body: &str) -> Vec<(String, String)> {
    platform_protocols::alipay::parse_form(body).expect("a form")
}

fn form(params: &[(String, String)]) -> String {
    platform_protocols::alipay::to_form(params).expect("encodes")
}

#[tokio::test]
async fn spoiled_notifications_are_refused_and_change_nothing() {
    let (app, _simulator) = silent_alipay_app().await;
    let (account, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;
    let notice = trade_notice(
        &order,
        payment_id,
        "2026120322001400000000000003",
        3_000,
        TradeStatus::TradeSuccess,
    );
    let good = parse(&signed(&notice));
    let before = app.snapshot().await;
    let deliveries_before = app.count("callback_deliveries").await;

    let mut spoiled: Vec<(&str, String, StatusCode)> = Vec::new();
    // A value changed after signing.
    let mut tampered = good.clone();
    set(&mut tampered, "total_amount", "1.00");
    spoiled.push(("tampered amount", form(&tampered), StatusCode::UNAUTHORIZED));
    let mut tampered = good.clone();
    set(&mut tampered, "trade_status", "TRADE_FINISHED");
    spoiled.push(("tampered status", form(&tampered), StatusCode::UNAUTHORIZED));
    // RSA (SHA1withRSA) is refused even over the right content.
    let mut rsa = good.clone();
    set(&mut rsa, "sign_type", "RSA");
    spoiled.push(("sign_type=RSA", form(&rsa), StatusCode::UNAUTHORIZED));
    // Signed with a key that is not Alipay's.
    let wrong_key = sign_notification(&notice, &platform_keys().0.merchant_private).expect("signs");
    spoiled.push(("wrong key", wrong_key, StatusCode::UNAUTHORIZED));
    let stranger = PrivateKey::generate().expect("a key");
    spoiled.push((
        "stranger's key",
        sign_notification(&notice, &stranger).expect("signs"),
        StatusCode::UNAUTHORIZED,
    ));
    // No sign at all; an empty one.
    let unsigned: Vec<_> = good.iter().filter(|(k, _)| k != "sign").cloned().collect();
    spoiled.push(("missing sign", form(&unsigned), StatusCode::UNAUTHORIZED));
    let mut empty = good.clone();
    set(&mut empty, "sign", "");
    spoiled.push(("empty sign", form(&empty), StatusCode::UNAUTHORIZED));
    // A parameter twice.
    let mut twice = good.clone();
    twice.push(("total_amount".into(), "30.00".into()));
    spoiled.push(("a parameter twice", form(&twice), StatusCode::BAD_REQUEST));
    // Amounts that are not exact yuan, signed properly: malformed.
    for bad in ["1.234", "-1", "1e3", "30.", " 30.00", "30,00"] {
        let mut params = good.clone();
        set(&mut params, "total_amount", bad);
        let body =
            sign_notification_params(params, &platform_keys().0.platform_private).expect("signs");
        spoiled.push(("bad amount", body, StatusCode::BAD_REQUEST));
    }
    spoiled.push(("empty", String::new(), StatusCode::UNAUTHORIZED));
    // Signed by Alipay's key, but over the parameters in another order than
    // sorted by name: not the content Alipay signs.
    let mut unsorted: Vec<_> = good
        .iter()
        .filter(|(k, _)| k != "sign" && k != "sign_type")
        .cloned()
        .collect();
    unsorted.sort();
    unsorted.reverse();
    let content = unsorted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut wrong_order = good.clone();
    set(
        &mut wrong_order,
        "sign",
        &platform_keys()
            .0
            .platform_private
            .sign_rsa_sha256_base64(content.as_bytes()),
    );
    spoiled.push((
        "signed in reverse order",
        form(&wrong_order),
        StatusCode::UNAUTHORIZED,
    ));

    for (what, body, status) in spoiled {
        let (got, reply) = post_form(&app, body).await;
        assert_eq!(got, status, "{what}: {reply}");
        assert_eq!(reply, "fail", "{what}");
    }

    assert_eq!(app.snapshot().await, before);
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Pending
    );
    // Signature failures write nothing; the six signed notifications with a
    // bad amount leave a MALFORMED_BODY line in the delivery log for people.
    assert_eq!(
        app.count("callback_deliveries").await,
        deliveries_before + 6
    );
    assert!(app.anomalies(&order.order_no).await.is_empty());

    // The parameters in another order are the same signed content: accepted.
    let mut reordered = good.clone();
    reordered.reverse();
    assert_ne!(form(&reordered), form(&good));
    let (status, reply) = post_form(&app, form(&reordered)).await;
    assert_eq!((status, reply.as_str()), (StatusCode::OK, "success"));
    assert_eq!(charges(&app, &order.order_no).await, 1);
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn another_app_or_another_amount_is_refused_with_an_anomaly() {
    let (app, _simulator) = silent_alipay_app().await;
    let (account, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;
    let trade_no = "2026120322001400000000000004";

    let mut other_app = trade_notice(
        &order,
        payment_id,
        trade_no,
        3_000,
        TradeStatus::TradeSuccess,
    );
    other_app.app_id = "2021999999999999".into();
    let (status, reply) = post_form(&app, signed(&other_app)).await;
    assert_eq!((status, reply.as_str()), (StatusCode::BAD_REQUEST, "fail"));
    assert_eq!(app.anomalies(&order.order_no).await, ["MERCHANT_MISMATCH"]);

    let more = trade_notice(
        &order,
        payment_id,
        trade_no,
        3_001,
        TradeStatus::TradeSuccess,
    );
    let (status, reply) = post_form(&app, signed(&more)).await;
    assert_eq!(
        (status, reply.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "fail")
    );

    let mut anomalies = app.anomalies(&order.order_no).await;
    anomalies.sort();
    assert_eq!(anomalies, ["AMOUNT_MISMATCH", "MERCHANT_MISMATCH"]);
    assert_eq!(charges(&app, &order.order_no).await, 0);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Pending
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn waiting_and_closed_notifications_are_acknowledged_and_change_nothing() {
    let (app, _simulator) = silent_alipay_app().await;
    let (_, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;
    let before = app.snapshot().await;
    for status in [TradeStatus::WaitBuyerPay, TradeStatus::TradeClosed] {
        let notice = trade_notice(
            &order,
            payment_id,
            "2026120322001400000000000005",
            3_000,
            status,
        );
        post_accepted(&app, &notice).await;
    }
    assert_eq!(app.snapshot().await, before);
    assert!(app.anomalies(&order.order_no).await.is_empty());
}

#[tokio::test]
async fn the_connector_queries_and_closes_a_trade() {
    let (app, _simulator, url) =
        spawn_alipay_app(platform_sim::Chaos::default(), NEVER, NEVER).await;
    let (_, unpaid, unpaid_id) = app.submitted_cny_order(10_000, 1_000).await;
    let connector = connector(&url);
    let payment = PaymentRef {
        order_no: &unpaid.order_no,
        payment_id: unpaid_id,
    };

    let asked = connector
        .query(payment)
        .await
        .expect("an answer")
        .expect("Alipay has it");
    assert_eq!(asked.status, api_types::platform::PaymentStatus::Processing);
    assert_eq!(asked.merchant_reference, Some(unpaid_id.to_string()));
    assert_eq!(asked.amount_cents, 1_000);

    let closed = connector.close(payment).await.expect("an answer");
    let CloseAnswer::Closed(state) = closed else {
        panic!("expected Closed, got {closed:?}");
    };
    assert_eq!(state.status, api_types::platform::PaymentStatus::Closed);
    // Closing again is still closed.
    assert!(matches!(
        connector.close(payment).await.expect("an answer"),
        CloseAnswer::Closed(_)
    ));

    // An order Alipay never saw.
    let (_, never) = app.cny_order(10_000, 1_300).await;
    let unknown = PaymentRef {
        order_no: &never.order_no,
        payment_id: Uuid::new_v4(),
    };
    assert_eq!(connector.query(unknown).await.expect("an answer"), None);
    assert_eq!(
        connector.close(unknown).await.expect("an answer"),
        CloseAnswer::NotFound
    );

    // An answer signed with another key is no answer.
    let mut wrong = alipay_config(&url);
    wrong.alipay_public_key_file = Some(platform_keys().1.join(keys::MERCHANT_PUBLIC_KEY_FILE));
    let doubting = Platform::alipay(wrong.load().expect("loads"), "http://127.0.0.1:9".into())
        .expect("connector");
    assert!(doubting.query(payment).await.is_err());
}

#[tokio::test]
async fn a_refund_goes_through_alipay_and_its_notification_storm_credits_once() {
    let (app, simulator, url) = spawn_alipay_app(
        platform_sim::Chaos::default(),
        Duration::from_millis(100),
        NEVER,
    )
    .await;
    let (account, order, payment_id) = app.paid_cny_order(10_000, 2_000).await;
    let payment = PaymentRef {
        order_no: &order.order_no,
        payment_id,
    };

    // Closing a trade that was paid first: ACQ.TRADE_STATUS_ERROR, and the query says paid.
    let connector = connector(&url);
    assert_eq!(
        connector.close(payment).await.expect("an answer"),
        CloseAnswer::AlreadyPaid
    );
    let state = connector
        .query(payment)
        .await
        .expect("an answer")
        .expect("Alipay has it");
    assert_eq!(state.status, api_types::platform::PaymentStatus::Succeeded);

    // Two refunds, one after the other: the second's notification carries
    // the trade's refunded total (8.00), which is still the 3.00 refund.
    for amount in [500, 300] {
        let refunds = app
            .refund_settled(&order.order_no, amount, "an item returned")
            .await;
        assert!(
            refunds
                .iter()
                .all(|r| r.status == OurRefundStatus::Succeeded),
            "{refunds:?}"
        );
        app.assert_wallet_untouched(&account).await;
    }
    let refunds = wait_until_refunds_settle(&app, &order.order_no).await;
    assert_eq!(refunds.len(), 2);
    let first = refunds
        .iter()
        .find(|r| r.amount_cents == 500)
        .expect("the first refund");

    let charged: api_types::PlatformPaymentId = sqlx::query_scalar::<_, String>(
        "SELECT payment_id FROM payment_ledger WHERE order_no = $1 AND kind = 'CHARGE'",
    )
    .bind(&order.order_no)
    .fetch_one(&app.db)
    .await
    .expect("the charge")
    .parse()
    .expect("an id");
    let found = connector
        .query_refund(RefundRef {
            order_no: &order.order_no,
            refund_no: &first.refund_no,
            payment_id: &charged,
        })
        .await
        .expect("an answer")
        .expect("Alipay has it");
    assert_eq!(found.status, api_types::platform::RefundStatus::Succeeded);
    assert_eq!(found.amount_cents, 500);
    assert_eq!(found.payment_id, charged.as_str());
    let none = connector
        .query_refund(RefundRef {
            order_no: &order.order_no,
            refund_no: "rf_never_made",
            payment_id: &charged,
        })
        .await
        .expect("an answer");
    assert_eq!(none, None);

    // The first refund's notification again (refund_fee now the total, 8.00),
    // 50 copies at once under one notify_id and under new ones: still one credit.
    let sim_payment = simulator
        .query_by_reference(&format!("alipay:{}", order.order_no))
        .await
        .expect("the simulator has it");
    let mut notice = trade_notice(
        &order,
        payment_id,
        &sim_payment.payment_id,
        2_000,
        TradeStatus::TradeSuccess,
    );
    notice.out_biz_no = Some(first.refund_no.clone());
    notice.refund_fee = Some(yuan(800));
    notice.gmt_refund = Some(format_timestamp(OffsetDateTime::now_utc()));
    let storm = (0..50).map(|i| {
        let mut copy = notice.clone();
        if i % 2 == 1 {
            copy.notify_id = Uuid::new_v4().simple().to_string();
        }
        let app = &app;
        async move { post_form(app, signed(&copy)).await }
    });
    for (status, reply) in futures::future::join_all(storm).await {
        assert_eq!((status, reply.as_str()), (StatusCode::OK, "success"));
    }
    app.assert_wallet_untouched(&account).await;
    assert_eq!(refund_credits(&app, &order.order_no).await, 2);
    assert!(app.anomalies(&order.order_no).await.is_empty());

    // A refund notification whose total cannot include the refund: refused.
    let mut impossible = notice.clone();
    impossible.notify_id = Uuid::new_v4().simple().to_string();
    impossible.refund_fee = Some(yuan(400));
    let (status, reply) = post_form(&app, signed(&impossible)).await;
    assert_eq!(
        (status, reply.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "fail")
    );
    assert_eq!(app.anomalies(&order.order_no).await, ["AMOUNT_MISMATCH"]);
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

#[test]
fn alipay_settings_say_what_is_missing_and_never_show_keys() {
    let config = Config {
        platform: Some(PlatformKind::Alipay),
        ..Config::default()
    };
    let err = config.settle().expect_err("nothing configured");
    assert!(err.to_string().contains("ALIPAY_APP_ID"), "{err}");

    let mut config = alipay_config("http://127.0.0.1:9/gateway.do");
    config.alipay_app_private_key_file = Some("/nonexistent/app_private_key.pem".into());
    let err = config.load().expect_err("no key file");
    assert!(err.contains("ALIPAY_APP_PRIVATE_KEY_FILE"), "{err}");

    let mut config = alipay_config("http://127.0.0.1:9/gateway.do");
    config.alipay_public_key_file = None;
    let err = config.load().expect_err("no public key");
    assert!(err.contains("ALIPAY_PUBLIC_KEY_FILE"), "{err}");

    let mut config = alipay_config("http://127.0.0.1:9/gateway.do");
    // The public key where the private one belongs: not a private key.
    config.alipay_app_private_key_file =
        Some(platform_keys().1.join(keys::PLATFORM_PUBLIC_KEY_FILE));
    let err = config.load().expect_err("not a private key");
    assert!(err.contains("ALIPAY_APP_PRIVATE_KEY_FILE"), "{err}");

    let err = alipay_config("ftp://example.com/gateway.do")
        .load()
        .expect_err("not http");
    assert!(err.contains("ALIPAY_GATEWAY_URL"), "{err}");

    let settings = alipay_config("http://127.0.0.1:9/gateway.do")
        .load()
        .expect("loads");
    let shown = format!("{settings:?}");
    assert!(shown.contains(APP_ID), "{shown}");
    assert!(!shown.contains("PRIVATE"), "{shown}");
    assert!(!shown.contains("BEGIN"), "{shown}");
    let settled = Config {
        platform: Some(PlatformKind::Alipay),
        alipay: alipay_config("http://127.0.0.1:9/gateway.do"),
        ..Config::default()
    }
    .settle()
    .expect("settles");
    assert!(settled.platform.is_simulated());
    assert_eq!(settled.platform.kind(), PlatformKind::Alipay);
    assert!(PlatformKind::Alipay.pays_by_qr_code());
    assert!(!format!("{settled:?}").contains("BEGIN"));
}
