//! Refunds, exactly once: the merchant's and the operator's refund API with
//! its idempotency rules, the refunded total never above the charge under real
//! concurrency, and refund callbacks delivered many times crediting once.

use crate::helpers::{
    ADMIN_TOKEN, MERCHANT_KEY, count, post_refund, refunds_of, spawn_app, spawn_app_paying_through,
    spawn_app_with, wait_until_refunds_settle,
};
use api_types::OrderStatus;
use api_types::api::Refund;
use futures::future::join_all;
use platform_sim::{Chaos, Redeliver};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn a_paid_order_refunded_in_part_then_in_full_is_credited_once_each_and_ends_refunded() {
    let app = spawn_app().await;
    let (account, order) = app.paid_order(10_000, 2_500).await;

    let first = app
        .refund(&order.order_no, 1_000, "one item returned")
        .await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first: Value = first.json().await.expect("body");
    assert_eq!(first["status"], "PENDING");
    assert_eq!(first["order_no"], order.order_no.as_str());
    assert_eq!(first["amount_cents"], 1_000);
    assert!(
        first["refund_no"]
            .as_str()
            .expect("refund_no")
            .starts_with("rfd_")
    );
    wait_until_refunds_settle(&app, &order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_500);
    let after_first = app.order(&order.order_no).await;
    assert_eq!(
        (after_first.status, after_first.refunded_cents),
        (OrderStatus::Paid, 1_000)
    );

    let refunds = app.refund_settled(&order.order_no, 1_500, "the rest").await;

    assert!(
        refunds
            .iter()
            .all(|r| r.status == api_types::RefundStatus::Succeeded),
        "{refunds:?}"
    );
    assert_eq!(app.balance(&account).await, 10_000);
    let refunded = app.order(&order.order_no).await;
    assert_eq!(
        (refunded.status, refunded.refunded_cents),
        (OrderStatus::Refunded, 2_500)
    );
    assert_eq!(app.ledger_rows(None, "REFUND").await, 2);
    // Nothing is left to refund.
    let more = app.refund(&order.order_no, 1, "again").await;
    assert_eq!(more.status(), StatusCode::CONFLICT);
    let body: Value = more.json().await.expect("body");
    assert_eq!(body["error"]["code"], "ORDER_NOT_REFUNDABLE");
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_key_replays_its_answer_refuses_another_body_and_is_required() {
    let app = spawn_app().await;
    let (account, order) = app.paid_order(10_000, 2_500).await;
    let key = Uuid::new_v4().to_string();
    let body = json!({"amount_cents": 500, "reason": "late delivery"});

    let first = post_refund(&app, &order.order_no, Some(&key), &body).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first: Value = first.json().await.expect("body");
    let again = post_refund(&app, &order.order_no, Some(&key), &body).await;
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let again: Value = again.json().await.expect("body");
    assert_eq!(again, first, "the first answer, byte for byte");
    wait_until_refunds_settle(&app, &order.order_no).await;
    let before = app.snapshot().await;

    let other_body = post_refund(
        &app,
        &order.order_no,
        Some(&key),
        &json!({"amount_cents": 600, "reason": "late delivery"}),
    )
    .await;
    assert_eq!(other_body.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let code: Value = other_body.json().await.expect("body");
    assert_eq!(code["error"]["code"], "IDEMPOTENCY_KEY_REUSED");
    let no_key = post_refund(&app, &order.order_no, None, &body).await;
    assert_eq!(no_key.status(), StatusCode::BAD_REQUEST);

    assert_eq!(app.snapshot().await, before, "nothing changed");
    assert_eq!(refunds_of(&app, &order.order_no).await.len(), 1);
    assert_eq!(app.balance(&account).await, 8_000);
    app.assert_invariants().await;
}

#[tokio::test]
async fn bad_refund_requests_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let (_, paid) = app.paid_order(10_000, 2_500).await;
    let unpaid = app
        .create_order(&app.create_account(1_000, "EUR").await, 700)
        .await;
    let before = app.snapshot().await;
    let cases: Vec<(&str, Value, StatusCode, &str)> = vec![
        (
            paid.order_no.as_str(),
            json!({"amount_cents": 2_501, "reason": "too much"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "REFUND_EXCEEDS_CHARGE",
        ),
        (
            unpaid.order_no.as_str(),
            json!({"amount_cents": 100, "reason": "not paid"}),
            StatusCode::CONFLICT,
            "ORDER_NOT_REFUNDABLE",
        ),
        (
            "ord_00000000000000000000000000000000",
            json!({"amount_cents": 100, "reason": "no such order"}),
            StatusCode::NOT_FOUND,
            "ORDER_NOT_FOUND",
        ),
        (
            paid.order_no.as_str(),
            json!({"amount_cents": 0, "reason": "zero"}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            paid.order_no.as_str(),
            json!({"amount_cents": 100, "reason": "  "}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
        (
            paid.order_no.as_str(),
            json!({"amount_cents": 100, "reason": "x", "currency": "USD"}),
            StatusCode::BAD_REQUEST,
            "BAD_REQUEST",
        ),
    ];
    for (order_no, body, status, code) in cases {
        let response = post_refund(&app, order_no, Some(&Uuid::new_v4().to_string()), &body).await;
        assert_eq!(response.status(), status, "{body}");
        let answer: Value = response.json().await.expect("body");
        assert_eq!(answer["error"]["code"], code, "{body}");
    }
    // Without the merchant key: refused before anything is read.
    let anonymous = app
        .http
        .post(app.url(&format!("/api/merchant/orders/{}/refunds", paid.order_no)))
        .header("idempotency-key", Uuid::new_v4().to_string())
        .json(&json!({"amount_cents": 100, "reason": "who?"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    assert_eq!(app.snapshot().await, before, "nothing changed");
    assert_eq!(count(&app, "SELECT count(*) FROM refunds").await, 0);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_of_i64_max_after_a_partial_refund_is_refused_and_changes_nothing() {
    // refund_reserved_cents + amount once overflowed in SQL: a 500 instead
    // of REFUND_EXCEEDS_CHARGE.
    let app = spawn_app().await;
    let (_, paid) = app.paid_order(10_000, 2_500).await;
    app.refund_settled(&paid.order_no, 1_000, "part").await;
    let before = app.snapshot().await;
    let refunds_before = count(&app, "SELECT count(*) FROM refunds").await;
    let reserved_before = count(&app, "SELECT refund_reserved_cents FROM orders").await;

    for amount in [i64::MAX, i64::MAX - 999, i64::MAX - 1_000, 1_501] {
        let response = app.refund(&paid.order_no, amount, "too much").await;
        assert_eq!(
            response.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{amount}"
        );
        let answer: Value = response.json().await.expect("body");
        assert_eq!(answer["error"]["code"], "REFUND_EXCEEDS_CHARGE", "{amount}");
    }

    assert_eq!(app.snapshot().await, before, "nothing changed");
    assert_eq!(
        count(&app, "SELECT count(*) FROM refunds").await,
        refunds_before
    );
    assert_eq!(
        count(&app, "SELECT refund_reserved_cents FROM orders").await,
        reserved_before
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_hundred_identical_refund_requests_at_once_make_one_refund_and_one_credit() {
    let app = spawn_app().await;
    let (account, order) = app.paid_order(10_000, 2_500).await;
    let key = Uuid::new_v4().to_string();
    let body = json!({"amount_cents": 2_500, "reason": "cancelled"});

    let answers =
        join_all((0..100).map(|_| post_refund(&app, &order.order_no, Some(&key), &body))).await;

    let mut statuses = std::collections::BTreeMap::new();
    for answer in &answers {
        *statuses.entry(answer.status().as_u16()).or_insert(0) += 1;
    }
    // Each got the refund (first or replayed) or was told the first is still running.
    assert!(
        statuses.keys().all(|s| *s == 202 || *s == 409),
        "{statuses:?}"
    );
    assert!(
        statuses.get(&202).copied().unwrap_or(0) >= 1,
        "{statuses:?}"
    );
    let refunds = wait_until_refunds_settle(&app, &order.order_no).await;
    assert_eq!(refunds.len(), 1, "one refund");
    assert_eq!(app.balance(&account).await, 10_000, "credited once");
    assert_eq!(app.ledger_rows(None, "REFUND").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_hundred_refunds_of_10_on_a_charge_of_100_accept_exactly_10() {
    // The platform's results come well after the burst: a refund settled
    // within it would make the order REFUNDED, and a late request would then
    // be refused as ORDER_NOT_REFUNDABLE (409) instead of over the amount (422).
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 3_000).await;
    let (account, order) = app.paid_order(1_000, 100).await;
    let body = json!({"amount_cents": 10, "reason": "part"});

    let answers = join_all((0..100).map(|_| {
        let key = Uuid::new_v4().to_string();
        let (app, order_no, body) = (&app, &order.order_no, &body);
        async move { post_refund(app, order_no, Some(&key), body).await }
    }))
    .await;

    let accepted = answers
        .iter()
        .filter(|a| a.status() == StatusCode::ACCEPTED)
        .count();
    let exceeded = answers
        .iter()
        .filter(|a| a.status() == StatusCode::UNPROCESSABLE_ENTITY)
        .count();
    assert_eq!((accepted, exceeded), (10, 90));
    let refunds = wait_until_refunds_settle(&app, &order.order_no).await;
    assert_eq!(refunds.len(), 10);
    let order = app.order(&order.order_no).await;
    assert_eq!(
        (order.status, order.refunded_cents),
        (OrderStatus::Refunded, 100)
    );
    assert_eq!(app.balance(&account).await, 1_000);
    // In the books: exactly 10 transfers back, from the merchant to the wallet.
    let back: Vec<(String, i64)> = sqlx::query_as(
        "SELECT c.kind, t.amount_cents FROM transfers t
         JOIN ledger_accounts d ON d.ledger_account_id = t.debit_account_id AND d.kind = 'MERCHANT'
         JOIN ledger_accounts c ON c.ledger_account_id = t.credit_account_id
         WHERE t.order_no = $1 AND t.kind = 'REFUND'",
    )
    .bind(&order.order_no)
    .fetch_all(&app.db)
    .await
    .expect("transfers");
    assert_eq!(back, vec![("WALLET".to_owned(), 10); 10]);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_the_platform_refuses_frees_its_amount_for_another() {
    let app = spawn_app().await;
    let (account, order) = app.paid_order(10_000, 2_500).await;
    // The sandbox refuses amounts ending in 13 minor units.
    let refunds = app
        .refund_settled(&order.order_no, 2_413, "refused by the platform")
        .await;
    assert_eq!(refunds[0].status, api_types::RefundStatus::Failed);
    assert_eq!(app.balance(&account).await, 7_500, "nothing credited");

    let full = app.refund(&order.order_no, 2_500, "all of it").await;
    assert_eq!(
        full.status(),
        StatusCode::ACCEPTED,
        "the failed amount was freed"
    );
    wait_until_refunds_settle(&app, &order.order_no).await;
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Refunded
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn refund_callbacks_in_copies_redelivered_and_repeated_under_new_ids_credit_once() {
    let (app, _simulator) = spawn_app_paying_through(
        Chaos {
            concurrent_copies: 5,
            second_success: true,
            redeliver_after_success: Some(Redeliver {
                count: 2,
                interval: Duration::from_millis(100),
            }),
            ..Chaos::default()
        },
        Duration::from_millis(50),
        |_| {},
    )
    .await;
    let (account, order) = app.paid_order(10_000, 2_500).await;

    app.refund_settled(&order.order_no, 1_000, "stormy refund")
        .await;
    // Let the copies, redeliveries and the second success land.
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    app.assert_wallet_untouched(&account).await;
    assert_eq!(app.ledger_rows(None, "REFUND").await, 1);
    assert!(
        count(
            &app,
            "SELECT count(*) FROM callback_deliveries WHERE event_type = 'refund.succeeded'"
        )
        .await
            > 5,
        "the storm reached us"
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_operator_refunds_under_the_admin_token_with_the_same_rules() {
    let app = spawn_app().await;
    let (account, order) = app.paid_order(10_000, 2_500).await;
    let path = format!("/api/admin/orders/{}/refunds", order.order_no);
    let response = app
        .http
        .post(app.url(&path))
        .bearer_auth(ADMIN_TOKEN)
        .header("idempotency-key", Uuid::new_v4().to_string())
        .json(&json!({"amount_cents": 2_500, "reason": "goodwill"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    wait_until_refunds_settle(&app, &order.order_no).await;
    let listed: Vec<Refund> = app
        .http
        .get(app.url(&path))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("refunds");
    assert_eq!(listed.len(), 1);
    assert_eq!(app.balance(&account).await, 10_000);
    // The merchant key does not open the operator's route.
    let wrong = app
        .http
        .get(app.url(&path))
        .bearer_auth(MERCHANT_KEY)
        .send()
        .await
        .expect("sent");
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_whose_callbacks_are_lost_is_settled_by_the_query_and_the_late_callback_changes_nothing()
 {
    let (app, simulator) = spawn_app_paying_through(
        Chaos {
            drop_callbacks: true,
            ..Chaos::default()
        },
        Duration::from_millis(50),
        |c| {
            c.query_after_secs = 1;
            c.query_every_secs = 1;
        },
    )
    .await;
    // The payment too is settled by the query: no callback ever comes.
    let (account, order) = app.paid_order(10_000, 2_500).await;
    let refunds = app
        .refund_settled(&order.order_no, 2_500, "all of it")
        .await;

    assert_eq!(refunds[0].status, api_types::RefundStatus::Succeeded);
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(
        app.order(&order.order_no).await.status,
        OrderStatus::Refunded
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM payment_ledger WHERE kind = 'REFUND' AND callback_id LIKE 'query:%'").await,
        1,
        "booked from the query's answer"
    );
    // The platform's callback turns up late: no news.
    let platform_payment: String = sqlx::query_scalar(
        "SELECT payment_id FROM payment_ledger WHERE order_no = $1 AND kind = 'CHARGE'",
    )
    .bind(&order.order_no)
    .fetch_one(&app.db)
    .await
    .expect("charge");
    let refund_id = simulator
        .refund_by_reference(&refunds[0].refund_no)
        .await
        .expect("the platform has it")
        .state
        .refund_id;
    let late = json!({
        "type": "refund.succeeded",
        "timestamp": "2026-12-03T10:00:00Z",
        "data": {
            "order_no": order.order_no,
            "amount_cents": 2_500,
            "currency": "EUR",
            "payment_id": platform_payment,
            "refund_no": refunds[0].refund_no,
            "refund_id": refund_id,
        }
    })
    .to_string();
    let answer = app
        .post_callback(&format!("evt_{}", Uuid::new_v4().simple()), &late)
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(app.balance(&account).await, 10_000, "credited once");
    assert_eq!(app.ledger_rows(None, "REFUND").await, 1);
    assert_eq!(count(&app, "SELECT count(*) FROM anomalies").await, 0);
    app.assert_invariants().await;
}
