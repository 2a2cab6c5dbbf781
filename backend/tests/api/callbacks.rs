//! `POST /api/payments/callback`: signed results, applied exactly once, and
//! only when they name the payment the order handed to the platform.

use crate::helpers::{
    Payment, TestApp, callback_body, error_code, new_callback_id, spawn_app_without_callbacks,
    success_body,
};
use api_types::{AttemptStatus, OrderStatus};
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;

async fn ack(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, response.json().await.expect("json"))
}

#[tokio::test]
async fn a_success_callback_charges_once_marks_paid_and_answers_success() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;

    let (status, body) = ack(app.post_success(&payment).await).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        serde_json::json!({"code": "SUCCESS", "duplicate": false})
    );
    let order = app.order(&order.order_no).await;
    assert_eq!(order.status, OrderStatus::Paid);
    assert!(order.paid_at.is_some());
    assert_eq!(order.payment_status, Some(AttemptStatus::Succeeded));
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.held(&account).await, 0, "the success captured the hold");
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(app.count("callback_deliveries").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_same_callback_again_is_a_duplicate_that_changes_nothing() {
    let app = spawn_app_without_callbacks().await;
    let (account, _, payment) = app.handed_over_order(10_000, 2_500).await;
    let (id, body) = (new_callback_id(), success_body(&payment));
    app.post_callback(&id, &body).await;
    let before = app.snapshot().await;

    let (status, answer) = ack(app.post_callback(&id, &body).await).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        answer,
        serde_json::json!({"code": "SUCCESS", "duplicate": true})
    );
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(
        app.count("callback_deliveries").await,
        2,
        "both deliveries are logged"
    );
}

async fn assert_refused_unsigned(
    app: &TestApp,
    body: &str,
    id: &str,
    timestamp: &str,
    signature: &str,
) {
    let response = app
        .post_callback_with_headers(body, id, timestamp, signature)
        .await;
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "signature {signature:?} ts {timestamp}"
    );
    assert_eq!(error_code(response).await, "SIGNATURE_INVALID");
}

#[tokio::test]
async fn callbacks_with_a_bad_or_missing_signature_or_stale_timestamp_are_401_and_write_nothing() {
    let app = spawn_app_without_callbacks().await;
    // A real payment, so a forgery that got through would charge.
    let (_, _, payment) = app.handed_over_order(10_000, 2_500).await;
    let before = app.snapshot().await;
    let (id, body) = (new_callback_id(), success_body(&payment));
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let good = app
        .webhook
        .sign(&id, now, body.as_bytes())
        .expect("signs")
        .signature;
    let other_key = callback_signing::CallbackSecret::generate();

    // Wrong secret, tampered body, empty v1 signature, garbage, wrong version.
    let foreign = other_key
        .sign(&id, now, body.as_bytes())
        .expect("signs")
        .signature;
    assert_refused_unsigned(&app, &body, &id, &now.to_string(), &foreign).await;
    assert_refused_unsigned(
        &app,
        &body.replace("2500", "1"),
        &id,
        &now.to_string(),
        &good,
    )
    .await;
    assert_refused_unsigned(&app, &body, &id, &now.to_string(), "v1,").await;
    assert_refused_unsigned(&app, &body, &id, &now.to_string(), "garbage").await;
    assert_refused_unsigned(
        &app,
        &body,
        &id,
        &now.to_string(),
        &good.replace("v1,", "v2,"),
    )
    .await;
    // Signed with another id than the header says.
    assert_refused_unsigned(&app, &body, "evt_other", &now.to_string(), &good).await;
    // Timestamps more than 5 minutes old or ahead, correctly signed for them.
    // Ten seconds past the tolerance, from a fresh clock reading, so a slow
    // machine cannot carry a "future" timestamp back inside the window.
    for skew in [-310, 310, -3_600] {
        let ts = time::OffsetDateTime::now_utc().unix_timestamp() + skew;
        let signature = app
            .webhook
            .sign(&id, ts, body.as_bytes())
            .expect("signs")
            .signature;
        assert_refused_unsigned(&app, &body, &id, &ts.to_string(), &signature).await;
    }
    assert_refused_unsigned(&app, &body, &id, "yesterday", &good).await;
    // No signature headers at all.
    let bare = app
        .http
        .post(app.url("/api/payments/callback"))
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .expect("sent");
    assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);

    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("callback_deliveries").await, 0);
    assert_eq!(app.count("anomalies").await, 0);
}

#[tokio::test]
async fn a_callback_signed_within_the_tolerance_is_accepted() {
    let app = spawn_app_without_callbacks().await;
    let (_, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let (id, body) = (new_callback_id(), success_body(&payment));
    let ts = time::OffsetDateTime::now_utc().unix_timestamp() - 240;
    let signature = app
        .webhook
        .sign(&id, ts, body.as_bytes())
        .expect("signs")
        .signature;

    let response = app
        .post_callback_with_headers(&body, &id, &ts.to_string(), &signature)
        .await;

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
}

#[tokio::test]
async fn a_signed_callback_with_a_malformed_body_is_400_and_changes_nothing() {
    let app = spawn_app_without_callbacks().await;
    let (_, _, payment) = app.handed_over_order(10_000, 2_500).await;
    let before = app.snapshot().await;

    for body in [
        "{not json".to_owned(),
        success_body(&payment).replace("payment.succeeded", "payment.refunded"),
        success_body(&payment).replace("\"amount_cents\":2500", "\"amount_cents\":\"2500\""),
        "{}".to_owned(),
    ] {
        let response = app.post_callback(&new_callback_id(), &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(error_code(response).await, "BAD_REQUEST");
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_callback_for_an_unknown_order_is_404_and_changes_nothing() {
    let app = spawn_app_without_callbacks().await;
    let (_, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let before = app.snapshot().await;
    let body = success_body(&payment).replace(&order.order_no, "ord_unknown");

    let response = app.post_callback(&new_callback_id(), &body).await;

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(response).await, "ORDER_NOT_FOUND");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_callback_with_the_wrong_amount_or_currency_is_422_charges_nothing_and_is_flagged() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let before = app.snapshot().await;

    let wrong_amount = app
        .post_callback(
            &new_callback_id(),
            &callback_body("payment.succeeded", &payment, 2_499, "EUR"),
        )
        .await;
    let wrong_currency = app
        .post_callback(
            &new_callback_id(),
            &callback_body("payment.succeeded", &payment, 2_500, "USD"),
        )
        .await;

    assert_eq!(wrong_amount.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(wrong_amount).await, "AMOUNT_MISMATCH");
    assert_eq!(wrong_currency.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 2_500, "the hold is kept");
    assert_eq!(
        app.anomalies(&order.order_no).await,
        ["AMOUNT_MISMATCH", "AMOUNT_MISMATCH"]
    );
}

#[tokio::test]
async fn a_callback_body_over_64_kib_is_413_and_changes_nothing() {
    let app = spawn_app_without_callbacks().await;
    let (_, _, payment) = app.handed_over_order(10_000, 2_500).await;
    let before = app.snapshot().await;
    let body = success_body(&payment).replace(
        "\"data\"",
        &format!("\"pad\":\"{}\",\"data\"", "x".repeat(65 * 1024)),
    );

    let response = app.post_callback(&new_callback_id(), &body).await;

    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(response).await, "PAYLOAD_TOO_LARGE");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_failure_callback_moves_pending_to_failed_and_a_later_success_charges_nothing() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;

    let failed = app
        .post_callback(
            &new_callback_id(),
            &callback_body("payment.failed", &payment, 2_500, "EUR"),
        )
        .await;
    assert_eq!(failed.status(), StatusCode::OK);
    let after_failure = app.order(&order.order_no).await;
    assert_eq!(after_failure.status, OrderStatus::Failed);
    assert_eq!(
        after_failure.failure_reason.as_deref(),
        Some("PAYMENT_FAILED")
    );
    assert_eq!(after_failure.payment_status, Some(AttemptStatus::Failed));
    assert_eq!(app.held(&account).await, 0, "the failure released the hold");

    let late_success = app.post_success(&payment).await;

    assert_eq!(
        late_success.status(),
        StatusCode::OK,
        "200 so the platform stops retrying"
    );
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Failed);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 0);
    app.assert_given_back_once(
        &order,
        &payment.platform_payment_id,
        &["SUCCESS_AFTER_FAILED"],
    )
    .await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_success_naming_another_payment_for_a_paid_order_charges_nothing_and_is_flagged() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;
    app.post_success(&payment).await;

    let other = Payment::unsolicited(&order);
    let second = app.post_success(&other).await;

    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.count("payment_ledger").await, 1);
    // The sandbox never had that payment: it refuses the refund, a person looks.
    let refund = app
        .assert_given_back_once(
            &order,
            &other.platform_payment_id,
            &["SECOND_SUCCESS_FOR_PAID_ORDER"],
        )
        .await;
    assert_eq!(refund.status, "FAILED");
    assert_eq!(app.balance(&account).await, 7_500, "nothing credited");
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_same_payment_s_success_under_a_second_callback_id_charges_once_and_is_no_news() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let body = success_body(&payment);

    let first = ack(app.post_callback(&new_callback_id(), &body).await).await;
    let second = ack(app.post_callback(&new_callback_id(), &body).await).await;

    let applied = serde_json::json!({"code": "SUCCESS", "duplicate": false});
    assert_eq!(first, (StatusCode::OK, applied.clone()));
    assert_eq!(second, (StatusCode::OK, applied));
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 1);
    assert!(app.anomalies(&order.order_no).await.is_empty());
    assert_eq!(
        app.delivery_outcomes(&order.order_no).await,
        ["CHARGED", "IGNORED_ORDER_FINAL"]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_same_callback_id_with_a_different_body_is_409_and_only_flagged() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let id = new_callback_id();
    app.post_callback(&id, &success_body(&payment)).await;
    let before = app.snapshot().await;

    let other = Payment {
        platform_payment_id: "pay_another".into(),
        ..payment.clone()
    };
    let reused = app.post_callback(&id, &success_body(&other)).await;

    assert_eq!(reused.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(reused).await, "CALLBACK_CONFLICT");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.anomalies(&order.order_no).await, ["CALLBACK_CONFLICT"]);
}

/// A charge can no longer meet a balance too low for it: the pay holds the
/// amount, so an order whose money is gone is refused when paid, before
/// anything is handed to the platform.
#[tokio::test]
async fn a_pay_after_a_charge_left_too_little_is_422_and_hands_nothing_over() {
    let app = spawn_app_without_callbacks().await;
    let (account, first) = app.account_with_order(3_000, 2_000).await;
    let second = app.create_order(&account, 2_000).await;
    let payment = app.hand_over(&first).await;
    app.post_success(&payment).await;
    let token = app.request_token(&second.order_no).await;
    let before = app.snapshot().await;

    let response = app.pay(&second.order_no, token).await;

    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(response).await, "INSUFFICIENT_FUNDS");
    assert_eq!(app.snapshot().await, before);
    let second = app.order(&second.order_no).await;
    assert_eq!(second.status, OrderStatus::Pending);
    assert_eq!(second.payment_status, None);
    assert_eq!(app.balance(&account).await, 1_000);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_attempts").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn concurrent_callbacks_for_many_orders_of_one_account_never_overdraw_it() {
    let app = spawn_app_without_callbacks().await;
    let account = app.create_account(10_000, "EUR").await;
    let mut payments = Vec::new();
    for _ in 0..10 {
        let order = app.create_order(&account, 1_000).await;
        payments.push(app.hand_over(&order).await);
    }
    // The balance is all held: these orders cannot be paid, only be named by
    // callbacks the checkout never asked for.
    let mut unpaid = Vec::new();
    for _ in 0..20 {
        let order = app.create_order(&account, 1_000).await;
        let token = app.request_token(&order.order_no).await;
        let refused = app.pay(&order.order_no, token).await;
        assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
        unpaid.push(Payment::unsolicited(&order));
    }

    // Each real payment twice (under two callback ids) and every unpaid order once, all at once.
    let deliveries = payments
        .iter()
        .chain(&payments)
        .chain(&unpaid)
        .map(|payment| app.post_callback_owned(new_callback_id(), success_body(payment)));
    let responses = join_all(deliveries).await;

    assert!(responses.iter().all(|status| *status == StatusCode::OK));
    let report = app.assert_invariants().await;
    assert_eq!(report.paid, 10, "exactly the orders that were paid");
    assert_eq!(report.pending, 20);
    assert_eq!(report.charges, 10);
    assert_eq!(app.balance(&account).await, 0);
    assert_eq!(app.held(&account).await, 0);
    for payment in &unpaid {
        app.assert_given_back_once(
            &payment.order,
            &payment.platform_payment_id,
            &["UNSOLICITED_PAYMENT"],
        )
        .await;
    }
    app.assert_invariants().await;
}

// ---- callback integrity: a success charges only the payment we handed over ----

/// A body without `merchant_reference`, as a platform that does not echo it sends.
fn without_merchant_reference(body: &str) -> String {
    let mut body: Value = serde_json::from_str(body).expect("json");
    body["data"]
        .as_object_mut()
        .expect("data")
        .remove("merchant_reference");
    body.to_string()
}

#[tokio::test]
async fn a_success_for_an_order_never_paid_charges_nothing_leaves_it_pending_and_is_flagged() {
    let app = spawn_app_without_callbacks().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;

    let unsolicited = Payment::unsolicited(&order);
    let (status, body) = ack(app.post_success(&unsolicited).await).await;

    assert_eq!(status, StatusCode::OK, "200 so the platform stops retrying");
    assert_eq!(
        body,
        serde_json::json!({"code": "SUCCESS", "duplicate": false})
    );
    let order = app.order(&order.order_no).await;
    assert_eq!(order.status, OrderStatus::Pending);
    assert_eq!(order.payment_status, None);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 0);
    assert_eq!(app.count("payment_attempts").await, 0);
    app.assert_given_back_once(
        &order,
        &unsolicited.platform_payment_id,
        &["UNSOLICITED_PAYMENT"],
    )
    .await;
    assert_eq!(
        app.delivery_outcomes(&order.order_no).await,
        ["IGNORED_UNSOLICITED"]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_success_naming_another_payment_charges_nothing_and_the_real_one_still_charges_once() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let [unsolicited, other_reference, other_platform_id] = payment.impostors();
    let before = app.snapshot().await;

    for body in [
        success_body(&unsolicited),
        success_body(&other_reference),
        success_body(&other_platform_id),
        without_merchant_reference(&success_body(&other_platform_id)),
    ] {
        let response = app.post_callback(&new_callback_id(), &body).await;
        assert_eq!(response.status(), StatusCode::OK, "{body}");
    }

    let pending = app.order(&order.order_no).await;
    assert_eq!(pending.status, OrderStatus::Pending);
    assert_eq!(pending.payment_status, Some(AttemptStatus::Submitted));
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 2_500, "the order keeps its hold");
    assert_eq!(app.count("payment_ledger").await, 0);
    // The payment the platform never had is given back (the sandbox refuses);
    // the order's own payment under a wrong reference is not: it may still be charged.
    app.assert_given_back_once(
        &order,
        &unsolicited.platform_payment_id,
        &["PAYMENT_REFERENCE_MISMATCH"; 4],
    )
    .await;
    assert_eq!(
        app.delivery_outcomes(&order.order_no).await,
        ["IGNORED_REFERENCE_MISMATCH"; 4]
    );
    // Only the audit of the four deliveries was added.
    let mut after = app.snapshot().await;
    after.0.retain(|row| !row.starts_with("callback "));
    assert_eq!(after, before);
    app.assert_invariants().await;

    let real = app.post_success(&payment).await;

    assert_eq!(real.status(), StatusCode::OK);
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.count("payment_ledger").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_failure_naming_another_payment_leaves_the_order_pending_with_its_hold() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;
    let [unsolicited, other_reference, other_platform_id] = payment.impostors();

    for other in [&unsolicited, &other_reference, &other_platform_id] {
        let response = app
            .post_callback(
                &new_callback_id(),
                &callback_body("payment.failed", other, 2_500, "EUR"),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    let pending = app.order(&order.order_no).await;
    assert_eq!(pending.status, OrderStatus::Pending);
    assert_eq!(pending.failure_reason, None);
    assert_eq!(pending.payment_status, Some(AttemptStatus::Submitted));
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 2_500, "the order keeps its hold");
    assert_eq!(app.count("payment_ledger").await, 0);
    assert!(app.anomalies(&order.order_no).await.is_empty());
    app.assert_invariants().await;

    let real = app.post_success(&payment).await;

    assert_eq!(real.status(), StatusCode::OK);
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(app.balance(&account).await, 7_500);
}

#[tokio::test]
async fn a_failure_for_a_paid_order_is_flagged_only_when_it_names_its_payment() {
    let app = spawn_app_without_callbacks().await;
    let (account, order, payment) = app.handed_over_order(10_000, 2_500).await;
    app.post_success(&payment).await;

    for named in [&Payment::unsolicited(&order), &payment] {
        let response = app
            .post_callback(
                &new_callback_id(),
                &callback_body("payment.failed", named, 2_500, "EUR"),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(app.anomalies(&order.order_no).await, ["FAILURE_AFTER_PAID"]);
    app.assert_invariants().await;
}
