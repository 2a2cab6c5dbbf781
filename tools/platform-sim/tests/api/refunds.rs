//! Refunds: idempotency, refusals that store nothing, a payment's limit under
//! concurrency, outcomes and their signed callbacks, chaos, and queries.

use crate::helpers::{
    Behaviour, Receiver, TestApp, new_reference, payment_body, refund_body, spawn_app,
    status_and_body,
};
use api_types::api::{CallbackData, CallbackType};
use api_types::platform::{REFUND_EXCEEDS_PAYMENT, RefundState};
use platform_sim::{
    CallbackRecord, Chaos, CreateRefund, Payment, PaymentStatus, Redeliver, Refund, RefundStatus,
    SimError,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

/// 10 s at the suite's time scale of 0.05: refunds stay PROCESSING for 500 ms.
const SLOW_PROCESSING: Duration = Duration::from_secs(10);

/// A simulator with a SUCCEEDED payment (with a merchant reference), and a
/// receiver for its refunds' callbacks apart from the payment's, so a test
/// counts only what its refunds sent.
struct Refundable {
    app: TestApp,
    payment: Payment,
    /// Where the refunds' callbacks go.
    refunds: Receiver,
    /// Where the payment's callbacks went; kept alive so its delivery ends quietly.
    _payments: Receiver,
}

async fn refundable(amount_cents: i64) -> Refundable {
    let app = spawn_app(|_| {}).await;
    let payments = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let refunds = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let payment = app
        .paid(amount_cents, &payments.url, &new_reference())
        .await;
    Refundable {
        app,
        payment,
        refunds,
        _payments: payments,
    }
}

impl Refundable {
    /// A refund body for the payment, notifying the refund receiver.
    fn body(&self, refund_no: &str, amount_cents: i64) -> Value {
        refund_body(
            &self.payment.payment_id,
            refund_no,
            amount_cents,
            &self.refunds.url,
        )
    }

    /// Posts a refund of the payment under its refund number as the key.
    async fn refund(&self, refund_no: &str, amount_cents: i64) -> (StatusCode, Value) {
        let body = self.body(refund_no, amount_cents);
        status_and_body(self.app.post_refund(Some(refund_no), &body).await).await
    }

    /// Posts a refund that must be accepted; returns its state.
    async fn accepted(&self, refund_no: &str, amount_cents: i64) -> RefundState {
        let (status, body) = self.refund(refund_no, amount_cents).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        serde_json::from_value(body).expect("a RefundState")
    }

    /// The knobs refunds created from now on copy (the payment is already decided).
    fn set_chaos(&self, chaos: Chaos) {
        self.app.simulator.set_chaos(chaos);
    }

    fn payment_now(&self) -> Payment {
        self.app
            .simulator
            .payment(&self.payment.payment_id)
            .expect("the payment exists")
    }
}

fn held() -> Chaos {
    Chaos {
        hold_processing: Some(SLOW_PROCESSING),
        ..Chaos::default()
    }
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_new_refund_is_201_processing_and_the_same_key_and_body_replay_it_with_200() {
    let f = refundable(1000).await;
    f.set_chaos(held());
    let body = f.body("rfn-1", 250);

    let first = f.app.post_refund(Some("rfn-1"), &body).await;
    let second = f.app.post_refund(Some("rfn-1"), &body).await;

    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get("idempotent-replayed").is_none());
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    let first: RefundState = first.json().await.expect("a RefundState");
    let second: RefundState = second.json().await.expect("a RefundState");
    assert_eq!(first, second);
    assert!(first.refund_id.starts_with("rf_"), "{}", first.refund_id);
    assert_eq!(first.payment_id, f.payment.payment_id);
    assert_eq!(first.refund_no, "rfn-1");
    assert_eq!(first.amount_cents, 250);
    assert_eq!(first.currency.as_str(), "EUR");
    assert_eq!(first.status, RefundStatus::Processing);
    f.refunds.wait_for(1).await;
    let deliveries = f.refunds.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 1, "one refund: {deliveries:#?}");
    assert_eq!(f.payment_now().refunded_cents, 250, "refunded once");
}

#[tokio::test]
async fn the_same_refund_key_with_another_body_is_refused_with_422() {
    let f = refundable(1000).await;
    f.accepted("rfn-1", 250).await;

    let (status, body) = status_and_body(
        f.app
            .post_refund(Some("rfn-1"), &f.body("rfn-1", 300))
            .await,
    )
    .await;

    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(error_code(&body), "IDEMPOTENCY_KEY_REUSED");
    f.refunds.wait_for(1).await;
    let deliveries = f.refunds.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 1, "{deliveries:#?}");
    assert_eq!(deliveries[0].event.data.amount_cents, 250);
}

#[tokio::test]
async fn a_refund_without_an_idempotency_key_is_400() {
    let f = refundable(1000).await;

    let (status, body) =
        status_and_body(f.app.post_refund(None, &f.body("rfn-1", 100)).await).await;

    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "BAD_REQUEST");
    let (status, _) = status_and_body(f.app.get_refund_by_reference("rfn-1").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing was stored");
}

#[tokio::test]
async fn refund_keys_are_a_namespace_apart_from_payment_keys() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let payment = payment_body("ord_1", 1000, &receiver.url);
    let (_, created) = status_and_body(app.post_payment(Some("shared-key"), &payment).await).await;
    let payment_id = created["payment_id"].as_str().expect("an id").to_owned();
    app.wait_for_payment(&payment_id, |p| p.status == PaymentStatus::Succeeded)
        .await;

    let refund = refund_body(&payment_id, "shared-key", 100, &receiver.url);
    let (refunded, _) = status_and_body(app.post_refund(Some("shared-key"), &refund).await).await;
    let (replayed, again) =
        status_and_body(app.post_payment(Some("shared-key"), &payment).await).await;

    assert_eq!(
        refunded,
        StatusCode::CREATED,
        "a payment's key is free for a refund"
    );
    assert_eq!(replayed, StatusCode::OK, "and still means the payment");
    assert_eq!(again["payment_id"], created["payment_id"]);
}

#[tokio::test]
async fn refused_refunds_store_nothing_so_a_valid_one_under_the_same_key_still_fits() {
    let f = refundable(1000).await;
    let url = &f.refunds.url;
    let mut other_currency = f.body("rfn-1", 100);
    other_currency["currency"] = json!("USD");
    let refusals = [
        (
            refund_body("pay_missing", "rfn-1", 100, url),
            StatusCode::NOT_FOUND,
            "PAYMENT_NOT_FOUND",
        ),
        (other_currency, StatusCode::BAD_REQUEST, "BAD_REQUEST"),
        (f.body("rfn-1", 0), StatusCode::BAD_REQUEST, "BAD_REQUEST"),
        (f.body("rfn-1", -5), StatusCode::BAD_REQUEST, "BAD_REQUEST"),
        (
            f.body("rfn-1", 1001),
            StatusCode::UNPROCESSABLE_ENTITY,
            REFUND_EXCEEDS_PAYMENT,
        ),
    ];

    for (body, expected, code) in refusals {
        let (status, answer) = status_and_body(f.app.post_refund(Some("rfn-1"), &body).await).await;

        assert_eq!(status, expected, "{body} -> {answer}");
        assert_eq!(error_code(&answer), code, "{body}");
        assert!(answer["error"]["message"].is_string());
    }
    let (status, body) = f.refund("rfn-1", 1000).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "the whole amount still fits: {body}"
    );
    let deliveries = f.refunds.wait_for(1).await;
    assert_eq!(deliveries[0].event.data.amount_cents, 1000);
}

#[tokio::test]
async fn a_payment_that_did_not_succeed_is_409_not_refundable() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    app.set_chaos(&json!({"hold_processing": "1h"})).await;
    let processing = app.pay(1000, &receiver.url).await.payment_id;
    let closed = app.pay(1000, &receiver.url).await.payment_id;
    app.close_payment(&closed).await;
    app.set_chaos(&json!({})).await;
    let failed = app.pay(1013, &receiver.url).await.payment_id;
    app.wait_for_payment(&failed, |p| p.status == PaymentStatus::Failed)
        .await;
    let paid = app.paid(1000, &receiver.url, &new_reference()).await;

    for (payment_id, status_text) in [
        (&processing, "PROCESSING"),
        (&closed, "CLOSED"),
        (&failed, "FAILED"),
    ] {
        let body = refund_body(payment_id, "rfn-1", 100, &receiver.url);
        let (status, answer) = status_and_body(app.post_refund(Some("rfn-1"), &body).await).await;

        assert_eq!(status, StatusCode::CONFLICT, "{status_text}: {answer}");
        assert_eq!(error_code(&answer), "PAYMENT_NOT_REFUNDABLE");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(status_text), "{message}");
    }
    let body = refund_body(&paid.payment_id, "rfn-1", 100, &receiver.url);
    let (status, answer) = status_and_body(app.post_refund(Some("rfn-1"), &body).await).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "the key was never taken: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_refunds_of_one_payment_never_give_back_more_than_it_took() {
    let f = refundable(100).await;
    // Held, so every accepted refund is still PROCESSING while the others arrive.
    f.set_chaos(held());
    let refund_nos: Vec<String> = (0..20).map(|i| format!("rfn-{i}")).collect();

    let answers = futures::future::join_all(refund_nos.iter().map(|no| f.refund(no, 10))).await;

    let accepted = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::CREATED)
        .count();
    assert_eq!(accepted, 10, "{answers:#?}");
    for (status, body) in answers.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
        assert_eq!(*status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_code(body), REFUND_EXCEEDS_PAYMENT);
    }
    let settled = f
        .app
        .wait_for_payment(&f.payment.payment_id, |p| p.refunded_cents == 100)
        .await;
    assert_eq!(settled.status, PaymentStatus::Succeeded);
    f.refunds.wait_for(10).await;
    let deliveries = f.refunds.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 10);
}

#[tokio::test]
async fn processing_refunds_hold_their_share_and_a_failed_one_gives_it_back() {
    let f = refundable(1000).await;
    f.set_chaos(held());

    let failing = f.accepted("rfn-1", 613).await;
    let (while_processing, refused) = f.refund("rfn-2", 400).await;
    let failed = f
        .app
        .wait_for_refund(&failing.refund_id, |r| {
            r.state.status != RefundStatus::Processing
        })
        .await;
    f.set_chaos(Chaos::default());
    let first = f.accepted("rfn-3", 300).await;
    let rest = f.accepted("rfn-4", 700).await;
    let (one_more, exceeded) = f.refund("rfn-5", 1).await;

    assert_eq!(
        while_processing,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{refused}"
    );
    assert_eq!(error_code(&refused), REFUND_EXCEEDS_PAYMENT);
    assert_eq!(failed.state.status, RefundStatus::Failed);
    assert_eq!(one_more, StatusCode::UNPROCESSABLE_ENTITY, "{exceeded}");
    for refund in [first, rest] {
        f.app
            .wait_for_refund(&refund.refund_id, |r| {
                r.state.status == RefundStatus::Succeeded
            })
            .await;
    }
    let payment = f.payment_now();
    assert_eq!(payment.refunded_cents, 1000);
    assert_eq!(payment.status, PaymentStatus::Succeeded);
}

#[tokio::test]
async fn a_succeeded_refund_is_reported_by_a_signed_refund_succeeded_callback() {
    let f = refundable(1000).await;

    let created = f.accepted("rfn-1", 250).await;

    let delivery = f.refunds.wait_for(1).await.remove(0);
    assert!(delivery.signature_valid);
    assert!(delivery.callback_id.starts_with("evt_"));
    assert_eq!(delivery.event.kind, CallbackType::RefundSucceeded);
    assert_eq!(
        delivery.event.data,
        CallbackData {
            order_no: f.payment.order_no.clone(),
            amount_cents: 250,
            currency: "EUR".parse().expect("currency"),
            payment_id: f.payment.payment_id.parse().expect("an id"),
            merchant_reference: f.payment.merchant_reference.clone(),
            refund_no: Some("rfn-1".into()),
            refund_id: Some(created.refund_id.clone()),
        }
    );
    let refund = f
        .app
        .wait_for_refund(&created.refund_id, |r| {
            r.callbacks.iter().any(|c| c.delivered)
        })
        .await;
    assert_eq!(refund.state.status, RefundStatus::Succeeded);
    assert_eq!(
        refund.callbacks,
        [CallbackRecord {
            callback_id: delivery.callback_id,
            kind: CallbackType::RefundSucceeded,
            attempts: 1,
            delivered: true,
            last_status: Some(200),
        }]
    );
    let payment = f.payment_now();
    assert_eq!(payment.refunded_cents, 250);
    let kinds: Vec<_> = payment.callbacks.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [CallbackType::PaymentSucceeded],
        "only the payment's own"
    );
}

#[tokio::test]
async fn a_refund_of_an_amount_ending_in_13_fails_with_a_refund_failed_callback() {
    let f = refundable(1000).await;

    let created = f.accepted("rfn-1", 113).await;

    let delivery = f.refunds.wait_for(1).await.remove(0);
    assert!(delivery.signature_valid);
    assert_eq!(delivery.event.kind, CallbackType::RefundFailed);
    assert_eq!(delivery.event.data.amount_cents, 113);
    assert_eq!(delivery.event.data.refund_no.as_deref(), Some("rfn-1"));
    assert_eq!(
        delivery.event.data.refund_id.as_deref(),
        Some(&*created.refund_id)
    );
    let refund = f
        .app
        .wait_for_refund(&created.refund_id, |r| {
            r.state.status != RefundStatus::Processing
        })
        .await;
    assert_eq!(refund.state.status, RefundStatus::Failed);
    assert_eq!(f.payment_now().refunded_cents, 0);
}

#[tokio::test]
async fn reorder_sends_a_refund_failed_before_the_refund_succeeded() {
    let f = refundable(1000).await;
    f.set_chaos(Chaos {
        reorder: true,
        ..Chaos::default()
    });

    let created = f.accepted("rfn-1", 250).await;

    let deliveries = f.refunds.wait_for(2).await;
    assert_eq!(deliveries[0].event.kind, CallbackType::RefundFailed);
    assert_eq!(deliveries[1].event.kind, CallbackType::RefundSucceeded);
    assert_ne!(deliveries[0].callback_id, deliveries[1].callback_id);
    assert!(deliveries.iter().all(
        |d| d.signature_valid && d.event.data.refund_id.as_deref() == Some(&*created.refund_id)
    ));
    let refund = f
        .app
        .wait_for_refund(&created.refund_id, |r| r.callbacks.len() == 2)
        .await;
    assert_eq!(refund.state.status, RefundStatus::Succeeded);
    let kinds: Vec<_> = refund.callbacks.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [CallbackType::RefundFailed, CallbackType::RefundSucceeded]
    );
}

#[tokio::test]
async fn a_second_refund_success_comes_with_a_new_callback_id() {
    let f = refundable(1000).await;
    f.set_chaos(Chaos {
        second_success: true,
        ..Chaos::default()
    });

    let created = f.accepted("rfn-1", 250).await;

    f.refunds.wait_for(2).await;
    let deliveries = f.refunds.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 2, "{deliveries:#?}");
    assert!(
        deliveries
            .iter()
            .all(|d| d.event.kind == CallbackType::RefundSucceeded
                && d.event.data.refund_id.as_deref() == Some(&*created.refund_id))
    );
    assert_ne!(deliveries[0].callback_id, deliveries[1].callback_id);
    assert_eq!(
        f.payment_now().refunded_cents,
        250,
        "one refund, reported twice"
    );
}

#[tokio::test]
async fn copies_a_second_path_and_redelivery_repeat_the_refunds_one_callback() {
    let f = refundable(1000).await;
    // Scaled by 0.05: the second path starts 200 ms later, the redelivery 100 ms after the 2xx.
    f.set_chaos(Chaos {
        concurrent_copies: 2,
        second_path_delay: Some(Duration::from_secs(4)),
        redeliver_after_success: Some(Redeliver {
            count: 1,
            interval: Duration::from_secs(2),
        }),
        ..Chaos::default()
    });

    let created = f.accepted("rfn-1", 250).await;

    f.refunds.wait_for(4).await;
    let deliveries = f.refunds.after_quiet(Duration::from_millis(400)).await;
    assert_eq!(
        deliveries.len(),
        4,
        "two copies, a redelivery, a second path"
    );
    assert!(deliveries.iter().all(|d| d.signature_valid
        && d.callback_id == deliveries[0].callback_id
        && d.event.kind == CallbackType::RefundSucceeded));
    let refund = f.app.simulator.refund(&created.refund_id).expect("exists");
    assert_eq!(refund.callbacks.len(), 1);
    assert_eq!(refund.callbacks[0].attempts, 4);
}

#[tokio::test]
async fn drop_callbacks_decides_refunds_but_delivers_nothing() {
    let f = refundable(1000).await;
    f.set_chaos(Chaos {
        drop_callbacks: true,
        ..Chaos::default()
    });

    let succeeding = f.accepted("rfn-1", 250).await;
    let failing = f.accepted("rfn-2", 113).await;

    let decided = |r: &Refund| r.state.status != RefundStatus::Processing;
    let succeeded = f.app.wait_for_refund(&succeeding.refund_id, decided).await;
    let failed = f.app.wait_for_refund(&failing.refund_id, decided).await;
    assert_eq!(succeeded.state.status, RefundStatus::Succeeded);
    assert_eq!(failed.state.status, RefundStatus::Failed);
    let deliveries = f.refunds.after_quiet(Duration::from_millis(300)).await;
    assert!(deliveries.is_empty(), "{deliveries:#?}");
    assert!(succeeded.callbacks.is_empty() && failed.callbacks.is_empty());
    assert_eq!(f.payment_now().refunded_cents, 250);
}

#[tokio::test]
async fn a_lost_refund_answer_is_503_and_the_retry_gets_the_accepted_refund() {
    let f = refundable(1000).await;
    f.set_chaos(Chaos {
        lose_create_answer: true,
        ..Chaos::default()
    });
    let body = f.body("rfn-1", 250);

    let (lost, error) = status_and_body(f.app.post_refund(Some("rfn-1"), &body).await).await;
    let retry = f.app.post_refund(Some("rfn-1"), &body).await;

    assert_eq!(lost, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert_eq!(error_code(&error), "UNAVAILABLE");
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let refund: RefundState = retry.json().await.expect("a RefundState");
    f.app
        .wait_for_refund(&refund.refund_id, |r| {
            r.state.status == RefundStatus::Succeeded
        })
        .await;
    f.refunds.wait_for(1).await;
    let deliveries = f.refunds.after_quiet(Duration::from_millis(300)).await;
    assert_eq!(deliveries.len(), 1, "one refund: {deliveries:#?}");
    assert_eq!(f.payment_now().refunded_cents, 250);
}

#[tokio::test]
async fn a_refund_is_found_by_id_and_by_refund_no_and_each_query_is_counted() {
    let f = refundable(1000).await;

    let (missing_id, not_found) = status_and_body(f.app.get_refund("rf_missing").await).await;
    let (missing_no, not_found_no) =
        status_and_body(f.app.get_refund_by_reference("rfn-1").await).await;
    let created = f.accepted("rfn-1", 250).await;
    let decided = f
        .app
        .wait_for_refund(&created.refund_id, |r| {
            r.callbacks.iter().any(|c| c.delivered)
        })
        .await;
    let (by_id, raw_by_id) = status_and_body(f.app.get_refund(&created.refund_id).await).await;
    let (by_no, raw_by_no) = status_and_body(f.app.get_refund_by_reference("rfn-1").await).await;
    let inspected = f.app.simulator.refund(&created.refund_id).expect("exists");

    for (status, body) in [(missing_id, not_found), (missing_no, not_found_no)] {
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(error_code(&body), "REFUND_NOT_FOUND");
    }
    assert_eq!((by_id, by_no), (StatusCode::OK, StatusCode::OK));
    assert_eq!(decided.queries, 0, "looking from the side counts nothing");
    assert_eq!(raw_by_id["queries"], 1);
    assert_eq!(raw_by_no["queries"], 2);
    assert_eq!(inspected.queries, 2);
    assert_eq!(raw_by_no["callbacks"][0]["type"], "refund.succeeded");
    let state: RefundState = serde_json::from_value(raw_by_no).expect("reads as RefundState");
    assert_eq!(
        state,
        RefundState {
            status: RefundStatus::Succeeded,
            ..created
        }
    );
    assert_eq!(inspected.state, state);
}

#[tokio::test]
async fn refunds_are_created_and_queried_in_process_as_the_routes_do() {
    let f = refundable(1000).await;
    let request = CreateRefund {
        payment_id: f.payment.payment_id.clone(),
        refund_no: "rfn-1".into(),
        amount_cents: 250,
        currency: "EUR".parse().expect("currency"),
        notify_url: f.refunds.url.clone(),
    };

    let (first, first_replayed) = f
        .app
        .simulator
        .create_refund("rfn-1", request.clone())
        .await
        .expect("created");
    let (again, again_replayed) = f
        .app
        .simulator
        .create_refund("rfn-1", request.clone())
        .await
        .expect("replayed");
    let reused = f
        .app
        .simulator
        .create_refund(
            "rfn-1",
            CreateRefund {
                amount_cents: 1,
                ..request.clone()
            },
        )
        .await;
    let too_much = f
        .app
        .simulator
        .create_refund(
            "rfn-2",
            CreateRefund {
                refund_no: "rfn-2".into(),
                amount_cents: 751,
                ..request
            },
        )
        .await;
    let queried = f.app.simulator.refund_by_reference("rfn-1").await;
    let missing = f.app.simulator.refund_by_reference("rfn-2").await;

    assert!(!first_replayed && again_replayed);
    assert_eq!(first.state.refund_id, again.state.refund_id);
    assert_eq!(reused, Err(SimError::IdempotencyKeyReused));
    assert_eq!(
        too_much,
        Err(SimError::RefundExceedsPayment {
            payment_id: f.payment.payment_id.clone(),
            refundable_cents: 750,
        })
    );
    let queried = queried.expect("found");
    assert_eq!(
        (queried.state.refund_id, queried.queries),
        (first.state.refund_id.clone(), 1)
    );
    assert!(matches!(missing, Err(SimError::RefundNotFound(_))));
    assert_eq!(
        f.app
            .simulator
            .refund(&first.state.refund_id)
            .map(|r| r.queries),
        Some(1)
    );
    let deliveries = f.refunds.wait_for(1).await;
    assert_eq!(
        deliveries[0].event.data.refund_id.as_deref(),
        Some(&*first.state.refund_id)
    );
}
