//! The Alipay gateway as the simulator serves it: a merchant client built from
//! `platform_protocols::alipay` (it signs requests with RSA2 and verifies every
//! answer over its exact bytes with the platform key), and a notification
//! receiver that verifies each form and answers as told.

use crate::helpers::{
    PATIENCE, Served, TestApp, local_keys, serve_post, spawn_app, wait_for_count,
};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use platform_protocols::alipay::{
    self as ali, Method, QueryResponse, TradeNotification, TradeStatus, verify_notification,
    verify_response,
};
use platform_protocols::keys::{PrivateKey, PublicKey};
use platform_protocols::money::parse_yuan;
use platform_sim::{AlipayConfig, AttemptOutcome, Schedule, SimConfig};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use time::OffsetDateTime;

const APP_ID: &str = "2021000000000001";

/// A simulator speaking Alipay for [`APP_ID`], and a merchant client for it.
struct Merchant {
    app: TestApp,
    key: PrivateKey,
    platform: PublicKey,
}

/// An answer whose platform signature verified: its node, parsed.
#[derive(Debug)]
struct Answer {
    node: Value,
}

impl Answer {
    fn field(&self, name: &str) -> &str {
        self.node[name].as_str().unwrap_or_default()
    }

    fn code(&self) -> &str {
        self.field("code")
    }

    fn sub_code(&self) -> &str {
        self.field("sub_code")
    }

    fn is_success(&self) -> bool {
        self.code() == "10000"
    }
}

/// How to spoil a request.
#[derive(Debug, Clone, Copy)]
enum Spoil {
    None,
    /// Sign one `biz_content`, send another.
    Signature,
    /// Sign (properly) for another application.
    AppId,
    /// Sign properly, but say `sign_type=RSA`.
    SignTypeRsa,
    /// Send no `sign`.
    NoSign,
    /// Sign properly a `method` the gateway does not know.
    UnknownMethod,
}

/// Starts a simulator whose trades finish `finished_after` (before the suite's
/// time scale of 0.05) after they are paid.
async fn merchant(finished_after: Duration, adjust: impl FnOnce(&mut SimConfig)) -> Merchant {
    let keys = local_keys();
    let app = spawn_app(|config| {
        config.alipay = Some(AlipayConfig {
            trade_finished_after: finished_after,
            ..AlipayConfig::from_keys(APP_ID, keys)
        });
        adjust(config);
    })
    .await;
    Merchant {
        app,
        key: keys.merchant_private.clone(),
        platform: keys.platform_public.clone(),
    }
}

/// An hour: long enough that no trade finishes during a test.
const NEVER: Duration = Duration::from_secs(3600);

impl Merchant {
    async fn call(&self, method: Method, biz: &Value, notify_url: Option<&str>) -> Answer {
        self.call_spoiled(method, biz, notify_url, Spoil::None)
            .await
    }

    async fn call_spoiled(
        &self,
        method: Method,
        biz: &Value,
        notify_url: Option<&str>,
        spoil: Spoil,
    ) -> Answer {
        let app_id = match spoil {
            Spoil::AppId => "2021999999999999",
            _ => APP_ID,
        };
        let now = OffsetDateTime::now_utc();
        let mut params = ali::sign_request(app_id, &self.key, method, biz, notify_url, now)
            .expect("the request signs");
        let set = |params: &mut Vec<(String, String)>, name: &str, value: String| {
            if let Some(param) = params.iter_mut().find(|(key, _)| key == name) {
                param.1 = value;
            }
        };
        match spoil {
            Spoil::None | Spoil::AppId => {}
            Spoil::Signature => set(&mut params, "biz_content", r#"{"out_trade_no":"X"}"#.into()),
            Spoil::SignTypeRsa | Spoil::UnknownMethod => {
                match spoil {
                    Spoil::SignTypeRsa => set(&mut params, "sign_type", "RSA".into()),
                    _ => set(&mut params, "method", "alipay.trade.pay".into()),
                }
                let content = ali::sign_content(&params, &["sign"]).expect("content");
                let sign = self.key.sign_rsa_sha256_base64(content.as_bytes());
                set(&mut params, "sign", sign);
            }
            Spoil::NoSign => params.retain(|(name, _)| name != "sign"),
        }
        self.post(&ali::to_form(&params).expect("a form"), method)
            .await
    }

    /// Posts a form to the gateway and verifies the answer as `method`'s.
    async fn post(&self, form: &str, method: Method) -> Answer {
        let response = self
            .app
            .http
            .post(format!("{}/gateway.do", self.app.address))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form.to_owned())
            .send()
            .await
            .expect("the simulator answers");
        assert_eq!(response.status(), StatusCode::OK, "Alipay answers 200");
        let text = response.text().await.expect("a body");
        let node = verify_response(&text, method, &self.platform).unwrap_or_else(|err| {
            panic!("the answer is not signed by the platform: {err}: {text}")
        });
        Answer {
            node: serde_json::from_str(node.json).expect("a JSON node"),
        }
    }

    async fn precreate(&self, out_trade_no: &str, amount: &str, notify_url: &str) -> Answer {
        let biz = json!({
            "out_trade_no": out_trade_no,
            "total_amount": amount,
            "subject": "Checkout order",
            "passback_params": passback(out_trade_no),
        });
        self.call(Method::TradePrecreate, &biz, Some(notify_url))
            .await
    }

    /// A call whose `biz_content` names only the trade (query, close).
    async fn on_trade(&self, method: Method, out_trade_no: &str) -> Answer {
        self.call(method, &json!({"out_trade_no": out_trade_no}), None)
            .await
    }

    async fn query(&self, out_trade_no: &str) -> Answer {
        self.on_trade(Method::TradeQuery, out_trade_no).await
    }

    async fn status(&self, out_trade_no: &str) -> TradeStatus {
        let answer = self.query(out_trade_no).await;
        assert!(answer.is_success(), "{answer:?}");
        let read: QueryResponse = serde_json::from_value(answer.node).expect("a query answer");
        read.trade_status.expect("a trade_status")
    }

    async fn wait_for_status(&self, out_trade_no: &str, wanted: TradeStatus) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let status = self.status(out_trade_no).await;
            if status == wanted {
                return;
            }
            assert!(Instant::now() < deadline, "still {status:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn close(&self, out_trade_no: &str) -> Answer {
        self.on_trade(Method::TradeClose, out_trade_no).await
    }

    async fn refund(&self, out_trade_no: &str, out_request_no: &str, amount: &str) -> Answer {
        let biz = json!({
            "out_trade_no": out_trade_no,
            "out_request_no": out_request_no,
            "refund_amount": amount,
        });
        self.call(Method::TradeRefund, &biz, None).await
    }

    async fn refund_query(&self, out_trade_no: &str, out_request_no: &str) -> Answer {
        let biz = json!({"out_trade_no": out_trade_no, "out_request_no": out_request_no});
        self.call(Method::TradeFastpayRefundQuery, &biz, None).await
    }
}

fn out_trade_no() -> String {
    format!("T{}", &uuid::Uuid::new_v4().simple().to_string()[..24])
}

/// What the checkout passes back: its payment id, URL-encoded.
fn passback(out_trade_no: &str) -> String {
    format!("payment_id%3D{out_trade_no}%26src%3Dcheckout")
}

/// One notification as the receiver saw it, its signature verified.
#[derive(Debug, Clone)]
struct Received {
    arrived: Instant,
    notification: TradeNotification,
}

#[derive(Clone)]
struct ReceiverState {
    platform: PublicKey,
    replies: Arc<Vec<(StatusCode, &'static str)>>,
    received: Arc<Mutex<Vec<Received>>>,
    forged: Arc<Mutex<Vec<String>>>,
}

/// A merchant's Alipay notification endpoint: answers the n-th notification
/// with the n-th of `replies`, and `success` after them; a notification whose
/// signature does not verify is kept apart and answered `fail`.
struct AliReceiver {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    forged: Arc<Mutex<Vec<String>>>,
    _server: Served,
}

impl AliReceiver {
    async fn start(replies: Vec<(StatusCode, &'static str)>) -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let forged = Arc::new(Mutex::new(Vec::new()));
        let state = ReceiverState {
            platform: local_keys().platform_public.clone(),
            replies: Arc::new(replies),
            received: Arc::clone(&received),
            forged: Arc::clone(&forged),
        };
        let (url, server) = serve_post("/notify", receive, state).await;
        Self {
            url,
            received,
            forged,
            _server: server,
        }
    }

    fn received(&self) -> Vec<Received> {
        assert!(
            self.forged.lock().expect("not poisoned").is_empty(),
            "notifications that did not verify: {:?}",
            self.forged.lock().expect("not poisoned")
        );
        self.received.lock().expect("not poisoned").clone()
    }

    async fn wait_for(&self, count: usize) -> Vec<Received> {
        wait_for_count(count, || self.received()).await
    }
}

async fn receive(State(state): State<ReceiverState>, body: String) -> Response {
    match verify_notification(&body, APP_ID, &state.platform) {
        Ok(notification) => {
            let index = {
                let mut received = state.received.lock().expect("not poisoned");
                received.push(Received {
                    arrived: Instant::now(),
                    notification,
                });
                received.len() - 1
            };
            let (status, reply) = state
                .replies
                .get(index)
                .copied()
                .unwrap_or((StatusCode::OK, "success"));
            (status, reply).into_response()
        }
        Err(err) => {
            state
                .forged
                .lock()
                .expect("not poisoned")
                .push(format!("{err}: {body}"));
            "fail".into_response()
        }
    }
}

#[tokio::test]
async fn a_paid_trade_is_notified_success_then_finished_with_its_own_notify_id() {
    // At the suite's time scale of 0.05: paid after 300 ms, finished 300 ms later.
    let merchant = merchant(Duration::from_secs(6), |config| {
        config.processing_delay = Duration::from_secs(6);
    })
    .await;
    let receiver = AliReceiver::start(Vec::new()).await;
    let order = out_trade_no();

    let created = merchant.precreate(&order, "12.50", &receiver.url).await;
    let unpaid = merchant.status(&order).await;
    let replayed = merchant.precreate(&order, "12.50", &receiver.url).await;
    let other_amount = merchant.precreate(&order, "12.51", &receiver.url).await;
    let notified = receiver.wait_for(2).await;
    let finished = merchant.query(&order).await;
    let refund_after = merchant.refund(&order, "R1", "1.00").await;

    assert!(created.is_success(), "{created:?}");
    let qr_code = created.field("qr_code");
    assert!(qr_code.starts_with("https://qr.alipay.com/"), "{qr_code}");
    assert_eq!(created.field("out_trade_no"), order);
    assert_eq!(unpaid, TradeStatus::WaitBuyerPay);
    assert_eq!(
        replayed.field("qr_code"),
        qr_code,
        "a replay shows the same QR code"
    );
    assert_eq!(
        (other_amount.code(), other_amount.sub_code()),
        ("40004", "ACQ.CONTEXT_INCONSISTENT")
    );

    let (paid, done) = (&notified[0].notification, &notified[1].notification);
    assert_eq!(paid.trade_status, Some(TradeStatus::TradeSuccess));
    assert_eq!(done.trade_status, Some(TradeStatus::TradeFinished));
    assert_ne!(
        paid.notify_id, done.notify_id,
        "each notification has its own id"
    );
    assert!(!paid.notify_id.is_empty());
    for notification in [paid, done] {
        assert_eq!(notification.app_id, APP_ID);
        assert_eq!(notification.out_trade_no, order);
        assert_eq!(notification.notify_type, "trade_status_sync");
        assert_eq!(notification.trade_no, finished.field("trade_no"));
        assert_eq!(
            notification.passback_params.as_deref(),
            Some(passback(&order).as_str()),
            "passed back unchanged"
        );
        assert_eq!(notification.total_amount.map(|yuan| yuan.fen()), Some(1250));
        assert!(ali::parse_timestamp(&notification.notify_time).is_ok());
        assert!(notification.gmt_payment.is_some());
    }
    assert!(done.gmt_close.is_some());
    assert!(
        notified[1].arrived.duration_since(notified[0].arrived) >= Duration::from_millis(250),
        "TRADE_FINISHED waits its delay"
    );

    assert_eq!(finished.field("trade_status"), "TRADE_FINISHED");
    assert_eq!(finished.field("total_amount"), "12.50");
    assert_eq!(parse_yuan(finished.field("total_amount")), Ok(1250));
    let payment = merchant
        .app
        .simulator
        .payment(finished.field("trade_no"))
        .expect("the trade is a payment in the book");
    assert_eq!(payment.amount_cents, 1250);
    assert_eq!(payment.currency.as_str(), "CNY");
    assert_eq!(
        (refund_after.code(), refund_after.sub_code()),
        ("40004", "ACQ.TRADE_HAS_FINISHED")
    );
    let by_trade_no = merchant
        .call(
            Method::TradeQuery,
            &json!({"trade_no": finished.field("trade_no")}),
            None,
        )
        .await;
    assert_eq!(by_trade_no.field("out_trade_no"), order);
}

#[tokio::test]
async fn only_exactly_success_acknowledges_a_notification() {
    let merchant = merchant(NEVER, |_| {}).await;
    let receiver = AliReceiver::start(vec![
        (StatusCode::OK, "fail"),
        (StatusCode::OK, "Success"),
        (StatusCode::OK, "success\n"),
        (StatusCode::OK, " success"),
        (StatusCode::INTERNAL_SERVER_ERROR, "success"),
        (StatusCode::NO_CONTENT, ""),
    ])
    .await;
    let order = out_trade_no();

    merchant.precreate(&order, "10.00", &receiver.url).await;
    let received = receiver.wait_for(7).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    assert_eq!(receiver.received().len(), 7, "`success` ends the retries");
    assert!(
        received
            .iter()
            .all(|r| r.notification.notify_id == received[0].notification.notify_id),
        "a retry is the same notification"
    );
    let outcomes: Vec<AttemptOutcome> = merchant
        .app
        .simulator
        .delivery_log()
        .attempts()
        .into_iter()
        .map(|attempt| attempt.outcome)
        .collect();
    let refused = |reply: &str| AttemptOutcome::Unacknowledged {
        status: 200,
        reply: reply.to_owned(),
    };
    assert_eq!(
        outcomes,
        vec![
            refused("fail"),
            refused("Success"),
            refused("success\n"),
            refused(" success"),
            AttemptOutcome::Answered(500),
            AttemptOutcome::Answered(204),
            AttemptOutcome::Answered(200),
        ]
    );
}

#[tokio::test]
async fn badly_signed_requests_are_refused_and_create_nothing() {
    let merchant = merchant(NEVER, |_| {}).await;
    let order = out_trade_no();
    let biz = json!({"out_trade_no": order, "total_amount": "10.00", "subject": "Checkout order"});
    let notify_url = Some("http://127.0.0.1:9/notify");

    for (spoil, sub_code) in [
        (Spoil::Signature, "isv.invalid-signature"),
        (Spoil::AppId, "isv.invalid-app-id"),
        (Spoil::SignTypeRsa, "isv.invalid-signature-type"),
        (Spoil::NoSign, "isv.missing-signature"),
    ] {
        let answer = merchant
            .call_spoiled(Method::TradePrecreate, &biz, notify_url, spoil)
            .await;
        assert_eq!(
            (answer.code(), answer.sub_code()),
            ("40002", sub_code),
            "{spoil:?}: {answer:?}"
        );
    }
    let unknown_method = merchant
        .call_spoiled(Method::TradeQuery, &biz, None, Spoil::UnknownMethod)
        .await;
    let query = merchant.query(&order).await;

    assert_eq!(
        unknown_method.sub_code(),
        "isv.invalid-method",
        "{unknown_method:?}"
    );
    assert_eq!(
        (query.code(), query.sub_code()),
        ("40004", "ACQ.TRADE_NOT_EXIST")
    );
}

#[tokio::test]
async fn closing_an_unpaid_trade_succeeds_and_a_paid_one_is_refused() {
    let merchant = merchant(NEVER, |_| {}).await;
    let receiver = AliReceiver::start(Vec::new()).await;
    merchant
        .app
        .set_chaos(&json!({"hold_processing": "1h"}))
        .await;
    let held = out_trade_no();
    merchant.precreate(&held, "10.00", &receiver.url).await;

    let closed = merchant.close(&held).await;
    let closed_again = merchant.close(&held).await;
    let status = merchant.status(&held).await;
    let precreate_again = merchant.precreate(&held, "10.00", &receiver.url).await;
    let unknown = merchant.close(&out_trade_no()).await;

    merchant.app.set_chaos(&json!({})).await;
    let paid = out_trade_no();
    merchant.precreate(&paid, "10.00", &receiver.url).await;
    merchant
        .wait_for_status(&paid, TradeStatus::TradeSuccess)
        .await;
    let close_paid = merchant.close(&paid).await;
    let precreate_paid = merchant.precreate(&paid, "10.00", &receiver.url).await;

    assert!(closed.is_success(), "{closed:?}");
    assert_eq!(closed.field("out_trade_no"), held);
    assert!(closed_again.is_success(), "{closed_again:?}");
    assert_eq!(status, TradeStatus::TradeClosed);
    assert_eq!(precreate_again.sub_code(), "ACQ.TRADE_HAS_CLOSE");
    assert_eq!(unknown.sub_code(), "ACQ.TRADE_NOT_EXIST");
    assert_eq!(
        (close_paid.code(), close_paid.sub_code()),
        ("40004", "ACQ.TRADE_STATUS_ERROR")
    );
    assert_eq!(precreate_paid.sub_code(), "ACQ.TRADE_HAS_SUCCESS");
    assert_eq!(receiver.wait_for(1).await.len(), 1, "only the paid trade");
}

#[tokio::test]
async fn refunds_are_synchronous_idempotent_by_request_number_and_notified() {
    let merchant = merchant(NEVER, |_| {}).await;
    let receiver = AliReceiver::start(Vec::new()).await;
    let order = out_trade_no();
    let unpaid = out_trade_no();
    merchant
        .app
        .set_chaos(&json!({"hold_processing": "1h"}))
        .await;
    merchant.precreate(&unpaid, "10.00", &receiver.url).await;
    merchant.app.set_chaos(&json!({})).await;
    merchant.precreate(&order, "12.50", &receiver.url).await;
    merchant
        .wait_for_status(&order, TradeStatus::TradeSuccess)
        .await;

    let first = merchant.refund(&order, "R1", "4.00").await;
    let again = merchant.refund(&order, "R1", "4.00").await;
    let changed = merchant.refund(&order, "R1", "5.00").await;
    let declined = merchant.refund(&order, "R3", "1.13").await;
    let declined_again = merchant.refund(&order, "R3", "1.13").await;
    let too_much = merchant.refund(&order, "R2", "8.51").await;
    let not_paid = merchant.refund(&unpaid, "R1", "1.00").await;
    let unknown = merchant.refund(&out_trade_no(), "R1", "1.00").await;
    let found = merchant.refund_query(&order, "R1").await;
    let missing = merchant.refund_query(&order, "R9").await;
    let failed = merchant.refund_query(&order, "R3").await;
    let partly = merchant.status(&order).await;
    let rest = merchant.refund(&order, "R2", "8.50").await;
    let notified = receiver.wait_for(3).await;
    let closed = merchant.status(&order).await;

    assert!(first.is_success(), "{first:?}");
    assert_eq!(first.field("fund_change"), "Y");
    assert_eq!(first.field("refund_fee"), "4.00");
    assert!(again.is_success(), "{again:?}");
    assert_eq!(again.field("fund_change"), "N", "a repeat moves no money");
    assert_eq!(again.field("refund_fee"), "4.00");
    assert_eq!(again.field("gmt_refund_pay"), first.field("gmt_refund_pay"));
    assert_eq!(changed.sub_code(), "ACQ.DISCORDANT_REPEAT_REQUEST");
    assert_eq!(declined.sub_code(), "ACQ.SELLER_BALANCE_NOT_ENOUGH");
    assert_eq!(declined_again.sub_code(), "ACQ.SELLER_BALANCE_NOT_ENOUGH");
    assert_eq!(too_much.sub_code(), "ACQ.REASON_TRADE_REFUND_FEE_ERR");
    assert_eq!(not_paid.sub_code(), "ACQ.TRADE_STATUS_ERROR");
    assert_eq!(unknown.sub_code(), "ACQ.TRADE_NOT_EXIST");
    assert_eq!(found.field("refund_status"), "REFUND_SUCCESS");
    assert_eq!(found.field("refund_amount"), "4.00");
    assert_eq!(found.field("total_amount"), "12.50");
    assert_eq!(found.field("out_request_no"), "R1");
    assert!(missing.is_success(), "{missing:?}");
    assert!(missing.node.get("refund_status").is_none(), "{missing:?}");
    assert!(failed.node.get("refund_status").is_none(), "{failed:?}");
    assert_eq!(partly, TradeStatus::TradeSuccess);
    assert!(rest.is_success(), "{rest:?}");
    assert_eq!(rest.field("refund_fee"), "12.50");
    assert_eq!(closed, TradeStatus::TradeClosed);

    let refunds: Vec<&TradeNotification> = notified[1..]
        .iter()
        .map(|received| &received.notification)
        .collect();
    let by_request = |number: &str| {
        refunds
            .iter()
            .find(|n| n.out_biz_no.as_deref() == Some(number))
            .copied()
            .unwrap_or_else(|| panic!("no refund notification for {number}: {refunds:#?}"))
    };
    let (r1, r2) = (by_request("R1"), by_request("R2"));
    assert_eq!(r1.refund_fee.map(|yuan| yuan.fen()), Some(400));
    assert_eq!(r1.trade_status, Some(TradeStatus::TradeSuccess));
    assert!(r1.gmt_refund.is_some());
    assert_eq!(r2.refund_fee.map(|yuan| yuan.fen()), Some(1250));
    assert_eq!(r2.trade_status, Some(TradeStatus::TradeClosed));
    assert_eq!(
        r2.passback_params.as_deref(),
        Some(passback(&order).as_str())
    );
    assert_ne!(r1.notify_id, r2.notify_id);
}

#[tokio::test]
async fn a_failed_payment_is_closed_and_notifies_nothing() {
    let merchant = merchant(NEVER, |_| {}).await;
    let receiver = AliReceiver::start(Vec::new()).await;
    let order = out_trade_no();

    merchant.precreate(&order, "10.13", &receiver.url).await;
    merchant
        .wait_for_status(&order, TradeStatus::TradeClosed)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    assert!(receiver.received().is_empty(), "{:?}", receiver.received());
}

#[tokio::test]
async fn chaos_applies_copies_share_a_notify_id_and_a_lost_answer_is_retried() {
    let merchant = merchant(NEVER, |_| {}).await;
    let receiver = AliReceiver::start(Vec::new()).await;
    merchant
        .app
        .set_chaos(
            &json!({"concurrent_copies": 2, "second_success": true, "reorder": true,
            "lose_create_answer": true}),
        )
        .await;
    let order = out_trade_no();

    let lost = merchant.precreate(&order, "10.00", &receiver.url).await;
    let retried = merchant.precreate(&order, "10.00", &receiver.url).await;
    let received = receiver.wait_for(4).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    assert_eq!(
        (lost.code(), lost.sub_code()),
        ("20000", "isp.unknow-error")
    );
    assert!(retried.is_success(), "{retried:?}");
    assert_eq!(
        receiver.received().len(),
        4,
        "no false failure: {received:#?}"
    );
    let first = &received[0].notification.notify_id;
    let same = received
        .iter()
        .filter(|r| &r.notification.notify_id == first)
        .count();
    assert_eq!(same, 2, "{received:#?}");
    assert!(
        received
            .iter()
            .all(|r| r.notification.trade_status == Some(TradeStatus::TradeSuccess))
    );
}

#[tokio::test]
async fn refused_notifications_follow_the_alipay_schedule() {
    // 4 min and 10 min at a time scale of 0.001: 240 ms, then 600 ms.
    let merchant = merchant(NEVER, |config| {
        config.schedule = Schedule::Alipay;
        config.time_scale = 0.001;
    })
    .await;
    let receiver =
        AliReceiver::start(vec![(StatusCode::OK, "fail"), (StatusCode::OK, "fail")]).await;
    let order = out_trade_no();

    merchant.precreate(&order, "10.00", &receiver.url).await;
    let received = receiver.wait_for(3).await;

    let gaps: Vec<Duration> = received
        .windows(2)
        .map(|pair| pair[1].arrived.duration_since(pair[0].arrived))
        .collect();
    assert!(
        gaps[0] >= Duration::from_millis(230) && gaps[0] < Duration::from_millis(500),
        "{gaps:?}"
    );
    assert!(
        gaps[1] >= Duration::from_millis(590) && gaps[1] < Duration::from_secs(2),
        "{gaps:?}"
    );
}
