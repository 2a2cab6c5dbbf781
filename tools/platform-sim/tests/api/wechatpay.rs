//! WeChat Pay API v3 as the simulator serves it: a merchant client built from
//! `platform_protocols` (it signs requests and verifies every answer with the
//! platform key), and a notification receiver that verifies, decrypts, and
//! refuses or accepts.

use crate::helpers::{PATIENCE, Served, TestApp, serve_post, spawn_app, wait_for_count};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use platform_protocols::keys::LocalKeys;
use platform_protocols::wechatpay::{
    EventType, MerchantSigner, Notification, NotificationPayload, NotificationReply, PlatformKey,
    Refund, RefundStatus, TradeState, Transaction, generate_nonce, paths, verify_platform_message,
};
use platform_sim::WechatPayConfig;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use time::OffsetDateTime;

const MCHID: &str = "1900009191";
const APPID: &str = "wxd678efh567hg6787";
/// What the merchant client says it is, as every WeChat Pay client must.
const USER_AGENT: &str = "platform-sim-tests/0.1.0 (linux/x86_64)";

fn keys() -> &'static LocalKeys {
    crate::helpers::local_keys()
}

fn now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

/// A simulator speaking WeChat Pay for [`MCHID`], and a merchant client for it.
struct Merchant {
    app: TestApp,
    signer: MerchantSigner,
    platform: PlatformKey,
}

/// An answer whose platform signature verified.
struct Answer {
    status: StatusCode,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }
}

/// How to spoil a request's signature.
#[derive(Clone, Copy)]
enum Spoil {
    None,
    /// Sign one body, send another.
    Body,
    /// Name another certificate serial.
    Serial,
    /// Name another merchant.
    Mchid,
    /// Sign with a timestamp six minutes old.
    OldTimestamp,
    /// Sign properly but send no `User-Agent`.
    NoUserAgent,
    /// Sign properly but send an empty `Accept` (the HTTP client sends
    /// `Accept: */*` when the request sets none).
    NoAccept,
}

async fn merchant(adjust: impl FnOnce(&mut platform_sim::SimConfig)) -> Merchant {
    let keys = keys();
    let app = spawn_app(|config| {
        config.wechatpay = Some(WechatPayConfig::from_keys(MCHID, APPID, keys));
        adjust(config);
    })
    .await;
    Merchant {
        app,
        signer: MerchantSigner {
            mchid: MCHID.to_owned(),
            serial_no: keys.merchant_serial_no.clone(),
            key: keys.merchant_private.clone(),
        },
        platform: PlatformKey {
            serial: keys.platform_serial_no.clone(),
            public_key: keys.platform_public.clone(),
        },
    }
}

impl Merchant {
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Answer {
        self.call_spoiled(method, path, body, Spoil::None).await
    }

    async fn call_spoiled(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        spoil: Spoil,
    ) -> Answer {
        let bytes = body.map_or_else(Vec::new, |body| serde_json::to_vec(body).expect("json"));
        let timestamp = match spoil {
            Spoil::OldTimestamp => now() - 360,
            _ => now(),
        };
        let signed = match spoil {
            Spoil::Body => b"{}".to_vec(),
            _ => bytes.clone(),
        };
        let mut authorization =
            self.signer
                .sign_request(&method, path, &signed, timestamp, &generate_nonce());
        match spoil {
            Spoil::Serial => authorization.serial_no = "0123456789ABCDEF".to_owned(),
            Spoil::Mchid => authorization.mchid = "1900000000".to_owned(),
            _ => {}
        }
        let mut request = self
            .app
            .http
            .request(method, format!("{}{path}", self.app.address))
            .header("Authorization", authorization.header_value());
        request = request.header(
            "Accept",
            if matches!(spoil, Spoil::NoAccept) {
                ""
            } else {
                "application/json"
            },
        );
        if !matches!(spoil, Spoil::NoUserAgent) {
            request = request.header("User-Agent", USER_AGENT);
        }
        if body.is_some() {
            request = request
                .header("Content-Type", "application/json")
                .body(bytes);
        }
        let response = request.send().await.expect("the simulator answers");
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.expect("a body").to_vec();
        verify_platform_message(&headers, &body, &self.platform, now()).unwrap_or_else(|err| {
            panic!("the answer ({status}) is not signed by the platform: {err}")
        });
        Answer { status, body }
    }

    async fn prepay(&self, out_trade_no: &str, total: i64, notify_url: &str) -> Answer {
        self.call(
            Method::POST,
            paths::NATIVE_PREPAY,
            Some(&prepay_body(out_trade_no, total, notify_url)),
        )
        .await
    }

    async fn query(&self, out_trade_no: &str) -> Answer {
        let path = format!("/v3/pay/transactions/out-trade-no/{out_trade_no}?mchid={MCHID}");
        self.call(Method::GET, &path, None).await
    }

    async fn transaction(&self, out_trade_no: &str) -> Transaction {
        let answer = self.query(out_trade_no).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.json());
        serde_json::from_slice(&answer.body).expect("a Transaction")
    }

    async fn close(&self, out_trade_no: &str) -> Answer {
        let path = format!("/v3/pay/transactions/out-trade-no/{out_trade_no}/close");
        self.call(Method::POST, &path, Some(&json!({"mchid": MCHID})))
            .await
    }

    async fn wait_for_state(&self, out_trade_no: &str, state: TradeState) -> Transaction {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let transaction = self.transaction(out_trade_no).await;
            if transaction.trade_state == state {
                return transaction;
            }
            assert!(Instant::now() < deadline, "still {transaction:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn refund(&self, body: &Value) -> Answer {
        self.call(Method::POST, paths::REFUNDS, Some(body)).await
    }

    async fn query_refund(&self, out_refund_no: &str) -> Refund {
        let answer = self
            .call(Method::GET, &paths::query_refund(out_refund_no), None)
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.json());
        serde_json::from_slice(&answer.body).expect("a Refund")
    }
}

fn prepay_body(out_trade_no: &str, total: i64, notify_url: &str) -> Value {
    json!({
        "appid": APPID,
        "mchid": MCHID,
        "description": "Checkout order",
        "out_trade_no": out_trade_no,
        "attach": format!("attempt-{out_trade_no}"),
        "notify_url": notify_url,
        "amount": {"total": total, "currency": "CNY"},
    })
}

fn refund_body(out_trade_no: &str, out_refund_no: &str, refund: i64, total: i64) -> Value {
    json!({
        "out_trade_no": out_trade_no,
        "out_refund_no": out_refund_no,
        "reason": "returned",
        "amount": {"refund": refund, "total": total, "currency": "CNY"},
    })
}

fn out_trade_no() -> String {
    format!("ORD{}", &uuid::Uuid::new_v4().simple().to_string()[..20])
}

/// One notification as the receiver saw it: verified, then decrypted.
#[derive(Debug, Clone)]
struct Received {
    id: String,
    arrived: Instant,
    event_type: EventType,
    payload: NotificationPayload,
}

#[derive(Clone)]
struct ReceiverState {
    platform: PlatformKey,
    refuse_first: usize,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A merchant's WeChat Pay notification endpoint: refuses the first
/// `refuse_first` notifications with 500 and `{"code":"FAIL"}`, then answers 204.
struct WxReceiver {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    _server: Served,
}

impl WxReceiver {
    async fn start(refuse_first: usize) -> Self {
        let keys = keys();
        let received = Arc::new(Mutex::new(Vec::new()));
        let state = ReceiverState {
            platform: PlatformKey {
                serial: keys.platform_serial_no.clone(),
                public_key: keys.platform_public.clone(),
            },
            refuse_first,
            received: Arc::clone(&received),
        };
        let (url, server) = serve_post("/notify", receive, state).await;
        Self {
            url,
            received,
            _server: server,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("not poisoned").clone()
    }

    async fn wait_for(&self, count: usize) -> Vec<Received> {
        wait_for_count(count, || self.received()).await
    }
}

async fn receive(State(state): State<ReceiverState>, headers: HeaderMap, body: Bytes) -> Response {
    let refuse = |message: &str| {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(NotificationReply::fail(message)),
        )
            .into_response()
    };
    if let Err(err) = verify_platform_message(&headers, &body, &state.platform, now()) {
        return refuse(&format!("bad signature: {err}"));
    }
    let notification: Notification = match serde_json::from_slice(&body) {
        Ok(notification) => notification,
        Err(err) => return refuse(&format!("not a notification: {err}")),
    };
    let payload = match notification.decrypt(&keys().apiv3_key) {
        Ok(payload) => payload,
        Err(err) => return refuse(&format!("cannot decrypt: {err}")),
    };
    let index = {
        let mut received = state.received.lock().expect("not poisoned");
        received.push(Received {
            id: notification.id.clone(),
            arrived: Instant::now(),
            event_type: notification.event_type,
            payload,
        });
        received.len() - 1
    };
    if index < state.refuse_first {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(NotificationReply::fail("try again")),
        )
            .into_response()
    } else {
        StatusCode::NO_CONTENT.into_response()
    }
}

#[tokio::test]
async fn a_native_payment_is_created_queried_paid_notified_and_refunded() {
    let merchant = merchant(|config| config.processing_delay = Duration::from_secs(6)).await;
    let receiver = WxReceiver::start(0).await;
    let order = out_trade_no();

    let created = merchant.prepay(&order, 1000, &receiver.url).await;
    let unpaid = merchant.transaction(&order).await;
    let unpaid_body = merchant.query(&order).await.json();
    let replayed = merchant.prepay(&order, 1000, &receiver.url).await;
    let other_amount = merchant.prepay(&order, 2000, &receiver.url).await;
    let paid = merchant.wait_for_state(&order, TradeState::Success).await;
    let notified = receiver.wait_for(1).await;

    assert_eq!(created.status, StatusCode::OK);
    let code_url = created.json()["code_url"]
        .as_str()
        .expect("a code_url")
        .to_owned();
    assert!(
        code_url.starts_with("weixin://wxpay/bizpayurl?pr="),
        "{code_url}"
    );
    assert_eq!(unpaid.trade_state, TradeState::NotPay);
    assert_eq!(unpaid.transaction_id, None);
    // Left out, as WeChat Pay leaves it out before payment: not null, not "".
    assert!(unpaid_body.get("transaction_id").is_none(), "{unpaid_body}");
    assert_eq!(replayed.json()["code_url"], code_url.as_str());
    assert_eq!(
        (other_amount.status, other_amount.code().as_str()),
        (StatusCode::FORBIDDEN, "OUT_TRADE_NO_USED")
    );
    assert_eq!(
        paid.attach.as_deref(),
        Some(format!("attempt-{order}").as_str())
    );
    assert_eq!(paid.amount.total, 1000);
    assert!(paid.success_time.is_some() && paid.transaction_id.is_some());
    assert_eq!(notified[0].event_type, EventType::TransactionSuccess);
    let NotificationPayload::Transaction(transaction) = &notified[0].payload else {
        panic!("a transaction: {notified:?}");
    };
    assert_eq!(transaction.trade_state, TradeState::Success);
    assert_eq!(transaction.out_trade_no.as_str(), order);
    assert_eq!(transaction.attach, paid.attach);

    let refund_no = format!("RF{order}");
    let refunded = merchant
        .refund(&refund_body(&order, &refund_no, 400, 1000))
        .await;
    let again = merchant
        .refund(&refund_body(&order, &refund_no, 400, 1000))
        .await;
    let changed = merchant
        .refund(&refund_body(&order, &refund_no, 500, 1000))
        .await;
    let too_much = merchant
        .refund(&refund_body(&order, &format!("RX{order}"), 700, 1000))
        .await;
    let notified = receiver.wait_for(2).await;
    let settled = merchant.query_refund(&refund_no).await;
    let after = merchant.transaction(&order).await;

    assert_eq!(refunded.status, StatusCode::OK, "{}", refunded.json());
    let first: Refund = serde_json::from_slice(&refunded.body).expect("a Refund");
    assert_eq!(first.status, RefundStatus::Processing);
    assert_eq!(first.amount.refund, 400);
    let second: Refund = serde_json::from_slice(&again.body).expect("a Refund");
    assert_eq!(second.refund_id, first.refund_id);
    assert_eq!(
        (changed.status, changed.code().as_str()),
        (StatusCode::BAD_REQUEST, "INVALID_REQUEST")
    );
    assert_eq!(too_much.code(), "INVALID_REQUEST");
    assert_eq!(notified[1].event_type, EventType::RefundSuccess);
    let NotificationPayload::Refund(refund) = &notified[1].payload else {
        panic!("a refund: {notified:?}");
    };
    assert_eq!(refund.out_refund_no, refund_no);
    assert_eq!(refund.refund_status, RefundStatus::Success);
    assert_eq!(settled.status, RefundStatus::Success);
    assert_eq!(after.trade_state, TradeState::Refund);
}

#[tokio::test]
async fn closing_an_unpaid_order_answers_204_and_a_paid_one_orderpaid() {
    let merchant = merchant(|_| {}).await;
    let receiver = WxReceiver::start(0).await;
    merchant
        .app
        .set_chaos(&json!({"hold_processing": "1h"}))
        .await;
    let held = out_trade_no();
    merchant.prepay(&held, 1000, &receiver.url).await;

    let closed = merchant.close(&held).await;
    let closed_again = merchant.close(&held).await;
    let state = merchant.transaction(&held).await;
    let prepay_again = merchant.prepay(&held, 1000, &receiver.url).await;
    let unknown = merchant.close(&out_trade_no()).await;
    let unknown_query = merchant.query(&out_trade_no()).await;

    merchant.app.set_chaos(&json!({})).await;
    let paid = out_trade_no();
    merchant.prepay(&paid, 1000, &receiver.url).await;
    merchant.wait_for_state(&paid, TradeState::Success).await;
    let close_paid = merchant.close(&paid).await;

    assert_eq!(closed.status, StatusCode::NO_CONTENT);
    assert!(closed.body.is_empty());
    assert_eq!(closed_again.status, StatusCode::NO_CONTENT);
    assert_eq!(state.trade_state, TradeState::Closed);
    assert_eq!(
        (prepay_again.status, prepay_again.code().as_str()),
        (StatusCode::BAD_REQUEST, "ORDER_CLOSED")
    );
    assert_eq!(
        (unknown.status, unknown.code().as_str()),
        (StatusCode::NOT_FOUND, "ORDER_NOT_EXIST")
    );
    assert_eq!(unknown_query.code(), "ORDER_NOT_EXIST");
    assert_eq!(
        (close_paid.status, close_paid.code().as_str()),
        (StatusCode::FORBIDDEN, "ORDERPAID")
    );
}

#[tokio::test]
async fn a_failed_payment_reads_payerror_and_sends_no_notification() {
    let merchant = merchant(|_| {}).await;
    let receiver = WxReceiver::start(0).await;
    let order = out_trade_no();

    merchant.prepay(&order, 1013, &receiver.url).await;
    let failed = merchant.wait_for_state(&order, TradeState::PayError).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    assert_eq!(failed.transaction_id, None);
    assert!(receiver.received().is_empty(), "{:?}", receiver.received());
}

#[tokio::test]
async fn badly_signed_requests_are_refused_with_sign_error_and_create_nothing() {
    let merchant = merchant(|_| {}).await;
    let order = out_trade_no();
    let body = prepay_body(&order, 1000, "http://127.0.0.1:9/notify");

    for spoil in [
        Spoil::Body,
        Spoil::Serial,
        Spoil::Mchid,
        Spoil::OldTimestamp,
    ] {
        let answer = merchant
            .call_spoiled(Method::POST, paths::NATIVE_PREPAY, Some(&body), spoil)
            .await;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::UNAUTHORIZED, "SIGN_ERROR"),
            "{}",
            answer.json()
        );
    }
    let unsigned = merchant
        .app
        .http
        .post(format!("{}{}", merchant.app.address, paths::NATIVE_PREPAY))
        .header("Accept", "application/json")
        .header("User-Agent", USER_AGENT)
        .json(&body)
        .send()
        .await
        .expect("answers");
    let query = merchant.query(&order).await;

    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        (query.status, query.code().as_str()),
        (StatusCode::NOT_FOUND, "ORDER_NOT_EXIST")
    );
}

#[tokio::test]
async fn a_request_without_accept_or_user_agent_is_refused_as_invalid_request_and_creates_nothing()
{
    let merchant = merchant(|_| {}).await;
    let order = out_trade_no();
    let body = prepay_body(&order, 1000, "http://127.0.0.1:9/notify");
    let query = format!("/v3/pay/transactions/out-trade-no/{order}?mchid={MCHID}");

    for spoil in [Spoil::NoUserAgent, Spoil::NoAccept] {
        for (method, path, body) in [
            (Method::POST, paths::NATIVE_PREPAY, Some(&body)),
            (Method::GET, query.as_str(), None),
        ] {
            let answer = merchant
                .call_spoiled(method.clone(), path, body, spoil)
                .await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.json());
            assert_eq!(
                answer.json(),
                json!({"code": "INVALID_REQUEST", "message": "Http头缺少Accept或User-Agent"}),
                "{method} {path}"
            );
        }
    }
    // Before the signature is looked at, as WeChat Pay does: nothing signed, no headers.
    let bare = merchant
        .app
        .http
        .post(format!("{}{}", merchant.app.address, paths::NATIVE_PREPAY))
        .json(&body)
        .send()
        .await
        .expect("answers");
    let bare_status = bare.status();
    let bare_body: Value = bare.json().await.expect("a JSON body");

    assert_eq!(bare_status, StatusCode::BAD_REQUEST);
    assert_eq!(bare_body["code"], "INVALID_REQUEST");
    let query = merchant.query(&order).await;
    assert_eq!(
        (query.status, query.code().as_str()),
        (StatusCode::NOT_FOUND, "ORDER_NOT_EXIST"),
        "nothing was created"
    );
    // The simulator's request log shows what each request carried.
    let received = merchant.app.simulator.requests().all();
    assert!(
        received
            .iter()
            .any(|r| r.user_agent.is_none() && r.path == paths::NATIVE_PREPAY),
        "{received:?}"
    );
    assert!(
        received
            .iter()
            .any(|r| r.user_agent.as_deref() == Some(USER_AGENT)
                && r.accept.as_deref() == Some("application/json")),
        "{received:?}"
    );
}

#[tokio::test]
async fn a_refused_notification_is_retried_with_the_same_id() {
    let merchant = merchant(|_| {}).await;
    let receiver = WxReceiver::start(1).await;
    let order = out_trade_no();

    merchant.prepay(&order, 1000, &receiver.url).await;
    let received = receiver.wait_for(2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    assert_eq!(received[0].id, received[1].id);
    assert_eq!(receiver.received().len(), 2, "a 204 ends the retries");
    let attempts: Vec<_> = merchant
        .app
        .simulator
        .delivery_log()
        .attempts()
        .into_iter()
        .map(|attempt| attempt.outcome.status())
        .collect();
    assert_eq!(attempts, vec![Some(500), Some(204)]);
}

#[tokio::test]
async fn chaos_copies_share_an_id_and_a_second_success_has_its_own() {
    let merchant = merchant(|_| {}).await;
    let receiver = WxReceiver::start(0).await;
    merchant
        .app
        .set_chaos(&json!({"concurrent_copies": 3, "second_success": true}))
        .await;
    let order = out_trade_no();

    merchant.prepay(&order, 1000, &receiver.url).await;
    let received = receiver.wait_for(6).await;

    let first_id = &received[0].id;
    let same: Vec<_> = received.iter().filter(|r| &r.id == first_id).collect();
    let others: Vec<_> = received.iter().filter(|r| &r.id != first_id).collect();
    assert_eq!(same.len(), 3, "{received:#?}");
    assert_eq!(others.len(), 3, "{received:#?}");
    assert!(others.iter().all(|r| r.id == others[0].id));
    assert!(
        received
            .iter()
            .all(|r| r.event_type == EventType::TransactionSuccess)
    );
}

#[tokio::test]
async fn a_failed_refund_is_abnormal_and_notified_as_refund_abnormal() {
    let merchant = merchant(|_| {}).await;
    let receiver = WxReceiver::start(0).await;
    let order = out_trade_no();
    merchant.prepay(&order, 1000, &receiver.url).await;
    merchant.wait_for_state(&order, TradeState::Success).await;
    let refund_no = format!("RF{order}");

    let accepted = merchant
        .refund(&refund_body(&order, &refund_no, 113, 1000))
        .await;
    let received = receiver.wait_for(2).await;
    let refund = merchant.query_refund(&refund_no).await;
    let after = merchant.transaction(&order).await;

    assert_eq!(accepted.status, StatusCode::OK, "{}", accepted.json());
    assert_eq!(received[1].event_type, EventType::RefundAbnormal);
    assert_eq!(refund.status, RefundStatus::Abnormal);
    assert_eq!(refund.success_time, None);
    assert_eq!(
        after.trade_state,
        TradeState::Success,
        "nothing was refunded"
    );
}

#[tokio::test]
async fn a_lost_prepay_answer_is_a_system_error_and_the_retry_gets_the_order() {
    let merchant = merchant(|_| {}).await;
    let receiver = WxReceiver::start(0).await;
    merchant
        .app
        .set_chaos(&json!({"lose_create_answer": true, "hold_processing": "1h"}))
        .await;
    let order = out_trade_no();

    let lost = merchant.prepay(&order, 1000, &receiver.url).await;
    let retried = merchant.prepay(&order, 1000, &receiver.url).await;
    let state = merchant.transaction(&order).await;

    assert_eq!(
        (lost.status, lost.code().as_str()),
        (StatusCode::INTERNAL_SERVER_ERROR, "SYSTEM_ERROR")
    );
    assert_eq!(retried.status, StatusCode::OK);
    assert_eq!(state.trade_state, TradeState::NotPay);
}

#[tokio::test]
async fn refused_notifications_follow_the_wechat_schedule() {
    // 15 s and 15 s at a time scale of 0.01: 150 ms, then 150 ms.
    let merchant = merchant(|config| {
        config.schedule = platform_sim::Schedule::Wechat;
        config.time_scale = 0.01;
    })
    .await;
    let receiver = WxReceiver::start(2).await;
    let order = out_trade_no();

    merchant.prepay(&order, 1000, &receiver.url).await;
    let received = receiver.wait_for(3).await;

    let gaps: Vec<Duration> = received
        .windows(2)
        .map(|pair| pair[1].arrived.duration_since(pair[0].arrived))
        .collect();
    assert!(received.iter().all(|r| r.id == received[0].id));
    for gap in gaps {
        assert!(
            gap >= Duration::from_millis(140) && gap < Duration::from_secs(2),
            "{gap:?}"
        );
    }
}
