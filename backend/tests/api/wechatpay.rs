//! `PLATFORM=wechatpay`: the backend speaks WeChat Pay API v3 to a
//! `platform-sim` serving `/v3` on a real socket, with a key set written to
//! files as a merchant would have them. Notifications are posted the way
//! WeChat Pay posts them: an envelope signed with the platform key whose
//! resource is AES-256-GCM encrypted with the APIv3 key.

use crate::helpers::{
    TestApp, calls_identifying_us, our_user_agent, platform_keys, serve_platform_sim,
    silent_platform, spawn_app_with,
};
use api_types::api::Order;
use api_types::{Currency, OrderStatus, RefundStatus as OurRefundStatus};
use backend::config::{Config, PlatformKind, WechatPayConfig};
use backend::platform::{CloseAnswer, PaymentRef, Platform, RefundRef};
use platform_protocols::keys;
use platform_protocols::wechatpay::{
    EventType, Notification, NotificationPayload, OutTradeNo, PlatformSigner, RefundNotification,
    RefundNotificationAmount, RefundStatus, TradeState, TradeType, Transaction, TransactionAmount,
    generate_nonce,
};
use platform_sim::WechatPayConfig as SimWechatPay;
use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

const MCHID: &str = "1900009191";
const APPID: &str = "wxd678efh567hg6787";
const NOTIFY_PATH: &str = "/api/payments/callback/wechatpay";

/// The backend's WeChat Pay settings for the key set, against `api_url`.
fn wechatpay_config(api_url: &str) -> WechatPayConfig {
    let (keys, dir) = platform_keys();
    WechatPayConfig {
        wechatpay_api_url: api_url.to_owned(),
        wechatpay_mchid: Some(MCHID.into()),
        wechatpay_appid: Some(APPID.into()),
        wechatpay_merchant_key_file: Some(dir.join(keys::MERCHANT_PRIVATE_KEY_FILE)),
        wechatpay_merchant_serial: Some(keys.merchant_serial_no.clone()),
        wechatpay_platform_public_key_file: Some(dir.join(keys::PLATFORM_PUBLIC_KEY_FILE)),
        wechatpay_platform_serial: Some(keys.platform_serial_no.clone()),
        wechatpay_apiv3_key_file: Some(dir.join(keys::WECHATPAY_APIV3_KEY_FILE)),
    }
}

/// A platform-sim speaking WeChat Pay for our merchant on its own port,
/// deciding payments after `delay`, retrying notifications every 100 ms.
async fn start_wechatpay(
    chaos: platform_sim::Chaos,
    delay: Duration,
) -> (platform_sim::Simulator, String) {
    let (keys, _) = platform_keys();
    serve_platform_sim(chaos, delay, |config| {
        config.wechatpay = Some(SimWechatPay::from_keys(MCHID, APPID, keys));
    })
    .await
}

/// The app with `PLATFORM=wechatpay` against a fresh platform-sim.
async fn spawn_wechatpay_app(
    chaos: platform_sim::Chaos,
    delay: Duration,
    adjust: impl FnOnce(&mut Config),
) -> (TestApp, platform_sim::Simulator, String) {
    let (simulator, url) = start_wechatpay(chaos, delay).await;
    let api_url = url.clone();
    let app = spawn_app_with(move |config| {
        config.platform = Some(PlatformKind::Wechatpay);
        config.wechatpay = wechatpay_config(&api_url);
        adjust(config);
    })
    .await;
    (app, simulator, url)
}

/// The app against a WeChat Pay that decides each payment after 50 ms but
/// posts no notification of its own (the test posts them); the simulator
/// lives as long as the test holds it.
async fn silent_wechatpay_app() -> (TestApp, platform_sim::Simulator) {
    let (app, simulator, _) =
        spawn_wechatpay_app(silent_platform(), Duration::from_millis(50), |_| {}).await;
    (app, simulator)
}

/// A WeChat Pay connector of the backend's own against the platform-sim at
/// `api_url`, for asking it what the backend would ask.
fn connector(api_url: &str) -> Platform {
    Platform::wechatpay(
        wechatpay_config(api_url).load().expect("settings load"),
        "http://127.0.0.1:9".into(),
    )
    .expect("connector")
}

/// WeChat Pay's `TRANSACTION.SUCCESS` content for the order.
fn transaction(order: &Order, payment_id: Uuid, transaction_id: &str, total: i64) -> Transaction {
    Transaction {
        appid: APPID.into(),
        mchid: MCHID.into(),
        out_trade_no: OutTradeNo::parse(&order.order_no).expect("order numbers fit"),
        transaction_id: Some(transaction_id.into()),
        trade_type: Some(TradeType::Native),
        trade_state: TradeState::Success,
        trade_state_desc: "支付成功".into(),
        bank_type: Some("OTHERS".into()),
        attach: Some(payment_id.to_string()),
        success_time: Some(OffsetDateTime::now_utc()),
        payer: None,
        amount: TransactionAmount {
            total,
            payer_total: Some(total),
            currency: Currency::CNY,
            payer_currency: Some(Currency::CNY),
        },
    }
}

/// How to spoil a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spoil {
    None,
    /// Change a byte of the body after signing.
    TamperedBody,
    /// Sign with a key that is not the platform's.
    WrongKey,
    /// Name another platform key serial.
    WrongSerial,
    /// Signed six minutes ago.
    OldTimestamp,
    /// Signed six minutes from now.
    FutureTimestamp,
    /// Encrypted under other associated data than the envelope names.
    WrongAssociatedData,
    /// The ciphertext cut short (tag gone), then signed properly.
    TruncatedCiphertext,
}

/// Encrypts `payload` into a notification `id` and signs it as WeChat Pay
/// would (or spoiled as asked); returns body and headers.
fn notification(
    id: &str,
    event: EventType,
    payload: &NotificationPayload,
    spoil: Spoil,
) -> (Vec<u8>, Vec<(&'static str, String)>) {
    let (keys, _) = platform_keys();
    let mut envelope = Notification::encrypt(
        id,
        OffsetDateTime::now_utc(),
        event,
        payload,
        &keys.apiv3_key,
        &platform_protocols::wechatpay::resource::generate_resource_nonce(),
    )
    .expect("encrypts");
    match spoil {
        Spoil::WrongAssociatedData => envelope.resource.associated_data = "refund".into(),
        Spoil::TruncatedCiphertext => {
            let cut = envelope.resource.ciphertext.len() - 24;
            envelope.resource.ciphertext.truncate(cut);
        }
        _ => {}
    }
    let mut body = serde_json::to_vec(&envelope).expect("serializes");
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let timestamp = match spoil {
        Spoil::OldTimestamp => now - 360,
        Spoil::FutureTimestamp => now + 360,
        _ => now,
    };
    let signer = match spoil {
        Spoil::WrongKey => PlatformSigner {
            serial: keys.platform_serial_no.clone(),
            key: keys.merchant_private.clone(),
        },
        Spoil::WrongSerial => PlatformSigner {
            serial: "5157F09EFDC096DE15EBE81A47057A7232F1B8E1".into(),
            key: keys.platform_private.clone(),
        },
        _ => PlatformSigner {
            serial: keys.platform_serial_no.clone(),
            key: keys.platform_private.clone(),
        },
    };
    let signature = signer.sign(&body, timestamp, &generate_nonce());
    if spoil == Spoil::TamperedBody {
        let at = body.iter().position(|b| *b == b'"').expect("a quote");
        body.insert(at, b' ');
    }
    (body, signature.header_pairs().to_vec())
}

async fn post_notification(
    app: &TestApp,
    body: Vec<u8>,
    headers: &[(&'static str, String)],
) -> reqwest::Response {
    let mut request = app
        .http
        .post(app.url(NOTIFY_PATH))
        .header("content-type", "application/json")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().await.expect("request sent")
}

async fn post_success(app: &TestApp, id: &str, content: &Transaction) -> reqwest::Response {
    let (body, headers) = notification(
        id,
        EventType::TransactionSuccess,
        &NotificationPayload::Transaction(content.clone()),
        Spoil::None,
    );
    post_notification(app, body, &headers).await
}

async fn charges(app: &TestApp, order_no: &str) -> i64 {
    app.ledger_rows(Some(order_no), "CHARGE").await
}

/// The attempt of an order as the tests here look at it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
struct AttemptNow {
    payment_id: Uuid,
    status: String,
    platform_payment_id: Option<String>,
    qr_code: Option<String>,
    queries: i32,
    handed_over: bool,
}

async fn attempt_now(app: &TestApp, order_no: &str) -> Option<AttemptNow> {
    sqlx::query_as(
        "SELECT payment_id, status, platform_payment_id, qr_code, queries,
                submitted_at IS NOT NULL AS handed_over
         FROM payment_attempts WHERE order_no = $1",
    )
    .bind(order_no)
    .fetch_optional(&app.db)
    .await
    .expect("attempt")
}

/// Waits (up to 30 s) until the order's attempt is as `done` wants it.
async fn wait_for_attempt(
    app: &TestApp,
    order_no: &str,
    what: &str,
    done: impl Fn(&AttemptNow) -> bool,
) -> AttemptNow {
    let mut last = None;
    for _ in 0..600 {
        last = attempt_now(app, order_no).await;
        if last.as_ref().is_some_and(&done) {
            return last.expect("checked");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the attempt of {order_no} never became {what}: {last:?}");
}

/// Pays the order as its shopper: 202, whatever becomes of the hand-over.
async fn press_pay(app: &TestApp, order: &Order) {
    let token = app.request_token(&order.order_no).await;
    assert_eq!(
        app.pay(&order.order_no, token).await.status(),
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn a_shopper_pays_by_qr_code_and_the_notification_charges_once() {
    let (app, simulator, _) = spawn_wechatpay_app(
        platform_sim::Chaos::default(),
        Duration::from_millis(800),
        |_| {},
    )
    .await;
    // A shopper with no wallet money: the platform takes the payment from their own account.
    let (account, order, payment_id) = app.submitted_cny_order(0, 2_450).await;

    // While it is being paid the page can show WeChat Pay's code_url as a QR code.
    let code = app.qr_code_shown(&order, payment_id).await;
    assert!(code.starts_with("weixin://wxpay/bizpayurl?pr="), "{code}");
    // Nobody else sees it.
    let stranger = app.create_shopper(0, "CNY").await;
    let other = app.client_of(&stranger).await;
    let peek = other
        .get(app.url(&format!("/api/orders/{}/payment-code.svg", order.order_no)))
        .send()
        .await
        .expect("sent");
    assert_eq!(peek.status(), StatusCode::NOT_FOUND);

    let paid = app.wait_until_final(&order.order_no).await;
    assert_eq!(paid.status, OrderStatus::Paid);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(charges(&app, &order.order_no).await, 1);
    // The platform's transaction_id was booked, and our payment id came back in `attach`.
    let booked: String =
        sqlx::query_scalar("SELECT payment_id FROM payment_ledger WHERE order_no = $1")
            .bind(&order.order_no)
            .fetch_one(&app.db)
            .await
            .expect("ledger row");
    let sim_payment = simulator
        .query_by_reference(&format!("wechatpay:{}", order.order_no))
        .await
        .expect("the simulator has it");
    assert_eq!(booked, sim_payment.payment_id);
    // Once paid there is no code to scan any more.
    let after = app
        .get(&format!("/api/orders/{}/payment-code.svg", order.order_no))
        .await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_incident_in_wechat_pay_format_charges_once() {
    let (app, _simulator) = silent_wechatpay_app().await;
    let (account, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;
    let content = transaction(&order, payment_id, "4200000991202612036853086457", 3_000);
    let id = Uuid::new_v4().to_string();

    // 100 copies at once, each encrypted afresh (another nonce, another ciphertext).
    let copies = (0..100).map(|_| post_success(&app, &id, &content));
    let answers = futures::future::join_all(copies).await;
    for answer in &answers {
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    }
    // 10 retries, a restart, one more.
    for _ in 0..10 {
        assert_eq!(
            post_success(&app, &id, &content).await.status(),
            StatusCode::NO_CONTENT
        );
    }
    let app = app.restart().await;
    assert_eq!(
        post_success(&app, &id, &content).await.status(),
        StatusCode::NO_CONTENT
    );
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
async fn spoiled_notifications_are_refused_and_change_nothing() {
    let (app, _simulator) = silent_wechatpay_app().await;
    let (_, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;
    let content = NotificationPayload::Transaction(transaction(
        &order,
        payment_id,
        "4200000991202612036853086458",
        3_000,
    ));
    let before = app.snapshot().await;
    let deliveries_before = app.count("callback_deliveries").await;
    for (spoil, status) in [
        (Spoil::TamperedBody, StatusCode::UNAUTHORIZED),
        (Spoil::WrongKey, StatusCode::UNAUTHORIZED),
        (Spoil::WrongSerial, StatusCode::UNAUTHORIZED),
        (Spoil::OldTimestamp, StatusCode::UNAUTHORIZED),
        (Spoil::FutureTimestamp, StatusCode::UNAUTHORIZED),
        (Spoil::WrongAssociatedData, StatusCode::BAD_REQUEST),
        (Spoil::TruncatedCiphertext, StatusCode::BAD_REQUEST),
    ] {
        let (body, headers) = notification(
            &Uuid::new_v4().to_string(),
            EventType::TransactionSuccess,
            &content,
            spoil,
        );
        let answer = post_notification(&app, body, &headers).await;
        assert_eq!(answer.status(), status, "{spoil:?}");
        let reply: Value = answer.json().await.expect("a JSON reply");
        assert_eq!(reply["code"], "FAIL", "{spoil:?}");
        assert!(reply["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    // No headers at all.
    let bare = app
        .http
        .post(app.url(NOTIFY_PATH))
        .body("{}")
        .send()
        .await
        .expect("sent");
    assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);

    assert_eq!(app.snapshot().await, before);
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Pending
    );
    // Signature failures write nothing at all; the two signed-but-undecryptable
    // ones leave a MALFORMED_BODY line in the delivery log for people.
    assert_eq!(
        app.count("callback_deliveries").await,
        deliveries_before + 2
    );
    assert!(app.anomalies(&order.order_no).await.is_empty());
}

#[tokio::test]
async fn another_merchant_or_another_amount_is_refused_with_an_anomaly() {
    let (app, _simulator) = silent_wechatpay_app().await;
    let (account, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;

    let mut other_merchant = transaction(&order, payment_id, "4200000991202612036853086459", 3_000);
    other_merchant.mchid = "1900000109".into();
    let answer = post_success(&app, &Uuid::new_v4().to_string(), &other_merchant).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(app.anomalies(&order.order_no).await, ["MERCHANT_MISMATCH"]);

    let mut other_app = transaction(&order, payment_id, "4200000991202612036853086459", 3_000);
    other_app.appid = "wx0000000000000000".into();
    let answer = post_success(&app, &Uuid::new_v4().to_string(), &other_app).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);

    let more = transaction(&order, payment_id, "4200000991202612036853086459", 3_001);
    let answer = post_success(&app, &Uuid::new_v4().to_string(), &more).await;
    assert_eq!(answer.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let reply: Value = answer.json().await.expect("reply");
    assert_eq!(reply["code"], "FAIL");

    let mut anomalies = app.anomalies(&order.order_no).await;
    anomalies.sort();
    assert_eq!(
        anomalies,
        ["AMOUNT_MISMATCH", "MERCHANT_MISMATCH", "MERCHANT_MISMATCH"]
    );
    assert_eq!(charges(&app, &order.order_no).await, 0);
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_connector_queries_and_closes_a_payment() {
    let (app, _simulator, url) = spawn_wechatpay_app(
        platform_sim::Chaos::default(),
        Duration::from_secs(3_600),
        |_| {},
    )
    .await;
    let (_, unpaid, unpaid_id) = app.submitted_cny_order(10_000, 1_000).await;
    let connector = connector(&url);

    let asked = connector
        .query(PaymentRef {
            order_no: &unpaid.order_no,
            payment_id: unpaid_id,
        })
        .await
        .expect("an answer")
        .expect("WeChat Pay has it");
    assert_eq!(asked.status, api_types::platform::PaymentStatus::Processing);
    assert_eq!(asked.merchant_reference, Some(unpaid_id.to_string()));
    assert_eq!(asked.amount_cents, 1_000);

    let closed = connector
        .close(PaymentRef {
            order_no: &unpaid.order_no,
            payment_id: unpaid_id,
        })
        .await
        .expect("an answer");
    let CloseAnswer::Closed(state) = closed else {
        panic!("expected Closed, got {closed:?}");
    };
    assert_eq!(state.status, api_types::platform::PaymentStatus::Closed);

    // An order WeChat Pay never saw.
    let (_, never) = app.cny_order(10_000, 1_300).await;
    let answer = connector
        .query(PaymentRef {
            order_no: &never.order_no,
            payment_id: Uuid::new_v4(),
        })
        .await
        .expect("an answer");
    assert_eq!(answer, None);
}

#[tokio::test]
async fn a_refund_goes_through_wechat_pay_and_its_notification_storm_credits_once() {
    let (app, simulator, url) = spawn_wechatpay_app(
        platform_sim::Chaos::default(),
        Duration::from_millis(100),
        |_| {},
    )
    .await;
    let (account, order, payment_id) = app.paid_cny_order(10_000, 2_000).await;

    // Closing a transaction that was paid first: WeChat Pay says ORDERPAID.
    let connector = connector(&url);
    let answer = connector
        .close(PaymentRef {
            order_no: &order.order_no,
            payment_id,
        })
        .await
        .expect("an answer");
    assert_eq!(answer, CloseAnswer::AlreadyPaid);

    let refunds = app
        .refund_settled(&order.order_no, 500, "one item returned")
        .await;
    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].status, OurRefundStatus::Succeeded);
    app.assert_wallet_untouched(&account).await;

    // The refund's REFUND.SUCCESS again, 50 copies at once under one id and
    // under new ids: still one credit.
    let sim_payment = simulator
        .query_by_reference(&format!("wechatpay:{}", order.order_no))
        .await
        .expect("the simulator has it");
    let platform_refund_id: String =
        sqlx::query_scalar("SELECT platform_refund_id FROM refunds WHERE refund_no = $1")
            .bind(&refunds[0].refund_no)
            .fetch_one(&app.db)
            .await
            .expect("the platform's id for it");
    let content = NotificationPayload::Refund(RefundNotification {
        mchid: MCHID.into(),
        out_trade_no: OutTradeNo::parse(&order.order_no).expect("fits"),
        transaction_id: sim_payment.payment_id.clone(),
        out_refund_no: refunds[0].refund_no.clone(),
        refund_id: platform_refund_id,
        refund_status: RefundStatus::Success,
        success_time: Some(OffsetDateTime::now_utc()),
        user_received_account: None,
        amount: RefundNotificationAmount {
            total: 2_000,
            refund: 500,
            payer_total: 2_000,
            payer_refund: 500,
        },
    });
    let id = Uuid::new_v4().to_string();
    let storm = (0..50).map(|i| {
        let id = if i % 2 == 0 {
            id.clone()
        } else {
            Uuid::new_v4().to_string()
        };
        let (body, headers) = notification(&id, EventType::RefundSuccess, &content, Spoil::None);
        let app = &app;
        async move { post_notification(app, body, &headers).await.status() }
    });
    for status in futures::future::join_all(storm).await {
        assert_eq!(status, StatusCode::NO_CONTENT);
    }
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.ledger_rows(Some(&order.order_no), "REFUND").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn every_request_to_wechat_pay_says_who_is_calling_and_that_it_reads_json() {
    let (app, simulator, url) = spawn_wechatpay_app(
        platform_sim::Chaos::default(),
        Duration::from_millis(300),
        |_| {},
    )
    .await;
    // Hand-over, notification, refund (which queries first) by the backend itself...
    let (_, order, payment_id) = app.paid_cny_order(10_000, 2_000).await;
    let refunds = app
        .refund_settled(&order.order_no, 500, "one item returned")
        .await;
    assert_eq!(refunds[0].status, OurRefundStatus::Succeeded);
    // ...and query, close and refund query through the same connector.
    let connector = connector(&url);
    let paid = PaymentRef {
        order_no: &order.order_no,
        payment_id,
    };
    let state = connector
        .query(paid)
        .await
        .expect("an answer")
        .expect("WeChat Pay has it");
    assert_eq!(state.status, api_types::platform::PaymentStatus::Succeeded);
    assert_eq!(
        connector.close(paid).await.expect("an answer"),
        CloseAnswer::AlreadyPaid
    );
    let charged = state
        .payment_id
        .expect("a paid order has its transaction_id");
    let refund = connector
        .query_refund(RefundRef {
            order_no: &order.order_no,
            refund_no: &refunds[0].refund_no,
            payment_id: &charged,
        })
        .await
        .expect("an answer")
        .expect("WeChat Pay has the refund");
    assert_eq!(refund.amount_cents, 500);

    let calls = calls_identifying_us(&simulator, "/v3/");
    let out_trade_no = &order.order_no;
    for call in [
        "POST /v3/pay/transactions/native".to_owned(),
        format!("GET /v3/pay/transactions/out-trade-no/{out_trade_no}"),
        format!("POST /v3/pay/transactions/out-trade-no/{out_trade_no}/close"),
        "POST /v3/refund/domestic/refunds".to_owned(),
        format!("GET /v3/refund/domestic/refunds/{}", refunds[0].refund_no),
    ] {
        assert!(calls.contains(&call), "no {call} among {calls:?}");
    }
    let agent = our_user_agent();
    assert!(
        agent.starts_with("exactly-once-checkout/") && agent.ends_with(')'),
        "{agent}"
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_query_while_the_order_is_unpaid_leaves_the_real_success_to_charge_once() {
    // No notification of the platform's own, and nobody pays for an hour: the
    // active query (after 1 s) finds the order NOTPAY, without transaction_id.
    let (app, simulator, _) = spawn_wechatpay_app(
        platform_sim::Chaos {
            drop_callbacks: true,
            ..platform_sim::Chaos::default()
        },
        Duration::from_secs(3_600),
        |config| config.query_after_secs = 1,
    )
    .await;
    let (account, order, payment_id) = app.submitted_cny_order(10_000, 3_000).await;
    let queried = wait_for_attempt(&app, &order.order_no, "queried", |a| a.queries >= 1).await;
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Pending
    );
    assert_eq!(queried.status, "SUBMITTED");
    assert_eq!(
        queried.platform_payment_id, None,
        "an unpaid order has no transaction_id to record"
    );
    let asked = simulator
        .query_by_reference(&format!("wechatpay:{}", order.order_no))
        .await
        .expect("the simulator has it");
    assert!(asked.queries >= 1, "{asked:?}");

    // Then the shopper scans the code: WeChat Pay's TRANSACTION.SUCCESS.
    let transaction_id = "4200000991202612036853086460";
    let content = transaction(&order, payment_id, transaction_id, 3_000);
    let answer = post_success(&app, &Uuid::new_v4().to_string(), &content).await;

    assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(charges(&app, &order.order_no).await, 1);
    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.held(&account).await, 0);
    assert!(
        app.anomalies(&order.order_no).await.is_empty(),
        "{:?}",
        app.anomalies(&order.order_no).await
    );
    let refunds: i64 = sqlx::query_scalar("SELECT count(*) FROM refunds WHERE order_no = $1")
        .bind(&order.order_no)
        .fetch_one(&app.db)
        .await
        .expect("refunds");
    assert_eq!(refunds, 0, "nothing is given back automatically");
    let settled = attempt_now(&app, &order.order_no)
        .await
        .expect("the attempt");
    assert_eq!(settled.status, "SUCCEEDED");
    assert_eq!(settled.platform_payment_id.as_deref(), Some(transaction_id));
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_lost_prepay_answer_then_an_unpaid_query_sends_the_prepay_again_and_shows_the_code() {
    // WeChat Pay takes the prepay but its answer is lost (a 500); the active
    // query (after 1 s) finds the order NOTPAY, which is no answer to the
    // prepay: the code the shopper scans is only in the prepay's answer.
    let (app, simulator, _) = spawn_wechatpay_app(
        platform_sim::Chaos {
            lose_create_answer: true,
            drop_callbacks: true,
            ..platform_sim::Chaos::default()
        },
        Duration::from_secs(3_600),
        |config| config.query_after_secs = 1,
    )
    .await;
    let (account, order) = app.cny_order(10_000, 2_500).await;
    press_pay(&app, &order).await;

    let queried = wait_for_attempt(&app, &order.order_no, "queried", |a| a.queries >= 1).await;
    let shown = wait_for_attempt(&app, &order.order_no, "handed over with a code", |a| {
        a.qr_code.is_some()
    })
    .await;

    // The query came between the lost prepay and the one sent again.
    let out_trade_no = &order.order_no;
    let calls: Vec<String> = simulator
        .requests()
        .all()
        .into_iter()
        .filter(|request| request.path.starts_with("/v3/"))
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    let prepay = "POST /v3/pay/transactions/native";
    let query = format!("GET /v3/pay/transactions/out-trade-no/{out_trade_no}");
    let first_query = calls.iter().position(|c| *c == query).expect("a query");
    let prepays: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| *c == prepay)
        .map(|(at, _)| at)
        .collect();
    assert!(
        prepays.len() >= 2 && prepays[0] < first_query && first_query < prepays[1],
        "{calls:?}"
    );
    // Right after that query the attempt was still waiting to be sent again
    // (unless the dispatcher had already sent it, with its code).
    assert!(
        (queried.status == "UNKNOWN" && !queried.handed_over) || queried.qr_code.is_some(),
        "{queried:?}"
    );
    assert_eq!(shown.status, "SUBMITTED");
    assert!(shown.handed_over);
    assert_eq!(shown.platform_payment_id, None);
    let code = app.qr_code_shown(&order, shown.payment_id).await;
    assert!(code.starts_with("weixin://wxpay/bizpayurl?pr="), "{code}");

    // The shopper scans it and pays: charged once.
    let content = transaction(
        &order,
        shown.payment_id,
        "4200000991202612036853086461",
        2_500,
    );
    let answer = post_success(&app, &Uuid::new_v4().to_string(), &content).await;
    assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(charges(&app, &order.order_no).await, 1);
    app.assert_wallet_untouched(&account).await;
    assert!(app.anomalies(&order.order_no).await.is_empty());
    app.assert_invariants().await;
}

#[test]
fn wechatpay_settings_say_what_is_missing_and_never_show_keys() {
    let config = Config {
        platform: Some(PlatformKind::Wechatpay),
        ..Config::default()
    };
    let err = config.settle().expect_err("nothing configured");
    assert!(err.to_string().contains("WECHATPAY_MCHID"), "{err}");

    let mut config = wechatpay_config("http://127.0.0.1:9");
    config.wechatpay_merchant_key_file = Some("/nonexistent/apiclient_key.pem".into());
    let err = config.load().expect_err("no key file");
    assert!(err.contains("WECHATPAY_MERCHANT_KEY_FILE"), "{err}");

    let settings = wechatpay_config("http://127.0.0.1:9")
        .load()
        .expect("loads");
    let shown = format!("{settings:?}");
    let (keys, _) = platform_keys();
    assert!(shown.contains(MCHID));
    assert!(!shown.contains(keys.apiv3_key.expose()), "{shown}");
    assert!(!shown.contains("PRIVATE"), "{shown}");
}
