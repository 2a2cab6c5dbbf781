//! The daily bill: every payment and refund that succeeded on a UTC day,
//! once, with exact amounts; a bad date refused; the bill knobs make it disagree.

use crate::helpers::{Behaviour, Receiver, new_reference, refund_body, spawn_app};
use platform_sim::RefundStatus;
use platform_sim::bill::COLUMNS;
use reqwest::StatusCode;
use serde_json::json;
use time::OffsetDateTime;

/// `GET /v1/bills/{date}`: status, content type and the lines split into fields.
async fn bill(app: &crate::helpers::TestApp, date: &str) -> (StatusCode, String, Vec<Vec<String>>) {
    let response = app
        .http
        .get(format!("{}/v1/bills/{date}", app.address))
        .send()
        .await
        .expect("simulator answers");
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("body");
    let lines = text
        .lines()
        .map(|line| line.split(',').map(str::to_owned).collect())
        .collect();
    (status, content_type, lines)
}

fn today() -> String {
    OffsetDateTime::now_utc().date().to_string()
}

/// The data row whose `column` is `value`.
fn row<'a>(lines: &'a [Vec<String>], column: &str, value: &str) -> Option<&'a Vec<String>> {
    let at = COLUMNS.iter().position(|c| *c == column).expect("a column");
    lines.iter().skip(1).find(|line| line[at] == value)
}

fn field<'a>(line: &'a [String], column: &str) -> &'a str {
    &line[COLUMNS.iter().position(|c| *c == column).expect("a column")]
}

#[tokio::test]
async fn a_days_bill_lists_each_succeeded_payment_and_refund_once_with_exact_amounts() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    let first = app.paid(2_450, &receiver.url, &new_reference()).await;
    let second = app.paid(1_000, &receiver.url, &new_reference()).await;
    // Amounts ending in 13 minor units fail: never on the bill.
    let failed = app.pay(1_013, &receiver.url).await;
    let refund_no = format!("rfd_{}", uuid::Uuid::new_v4().simple());
    let refunded = app
        .post_refund(
            Some(&refund_no),
            &refund_body(&first.payment_id, &refund_no, 450, &receiver.url),
        )
        .await;
    assert_eq!(refunded.status(), StatusCode::CREATED);
    let refund: serde_json::Value = refunded.json().await.expect("refund");
    let refund_id = refund["refund_id"].as_str().expect("refund id").to_owned();
    app.wait_for_refund(&refund_id, |r| r.state.status == RefundStatus::Succeeded)
        .await;
    app.wait_for_payment(&failed.payment_id, |p| {
        p.status == platform_sim::PaymentStatus::Failed
    })
    .await;

    let (status, content_type, lines) = bill(&app, &today()).await;

    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/csv"), "{content_type}");
    assert_eq!(lines[0], COLUMNS.map(str::to_owned).to_vec());
    assert_eq!(lines.len(), 1 + 3, "{lines:?}");
    let paid = row(&lines, "transaction_id", &first.payment_id).expect("first payment listed");
    assert_eq!(field(paid, "trade_state"), "SUCCESS");
    assert_eq!(field(paid, "out_trade_no"), first.order_no);
    assert_eq!(field(paid, "currency"), "EUR");
    assert_eq!(field(paid, "amount"), "24.50");
    assert_eq!(field(paid, "fee"), "0.15");
    assert_eq!(field(paid, "rate"), "0.60%");
    assert_eq!(field(paid, "out_refund_no"), "");
    let other = row(&lines, "transaction_id", &second.payment_id).expect("second payment listed");
    assert_eq!(field(other, "amount"), "10.00");
    assert!(row(&lines, "transaction_id", &failed.payment_id).is_none());
    let back = row(&lines, "out_refund_no", &refund_no).expect("refund listed");
    assert_eq!(field(back, "trade_state"), "REFUND");
    assert_eq!(field(back, "transaction_id"), first.payment_id);
    assert_eq!(field(back, "refund_id"), refund_id);
    assert_eq!(field(back, "refund_amount"), "4.50");
    assert_eq!(field(back, "refund_state"), "SUCCESS");
    assert!(
        OffsetDateTime::parse(
            field(back, "trade_time"),
            &time::format_description::well_known::Rfc3339
        )
        .is_ok()
    );

    let yesterday = (OffsetDateTime::now_utc().date().previous_day())
        .expect("a day")
        .to_string();
    let (status, _, lines) = bill(&app, &yesterday).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(lines.len(), 1, "only the header: {lines:?}");
}

#[tokio::test]
async fn a_bill_date_that_is_not_a_calendar_day_is_refused_with_400() {
    let app = spawn_app(|_| {}).await;
    for bad in ["2026-02-30", "20261203", "yesterday", "2026-12-3"] {
        let (status, _, lines) = bill(&app, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(lines[0].join(",").contains("BAD_REQUEST"), "{lines:?}");
    }
}

#[tokio::test]
async fn the_bill_knobs_leave_a_row_out_or_change_its_amount_for_payments_made_under_them() {
    let app = spawn_app(|_| {}).await;
    let receiver = Receiver::start(&app.secret, Behaviour::accept_all()).await;
    assert_eq!(
        app.set_chaos(&json!({"bill_omit": true})).await.status(),
        StatusCode::OK
    );
    let omitted = app.paid(1_000, &receiver.url, &new_reference()).await;
    assert_eq!(
        app.set_chaos(&json!({"bill_amount_delta_cents": 100}))
            .await
            .status(),
        StatusCode::OK
    );
    let changed = app.paid(2_000, &receiver.url, &new_reference()).await;
    assert_eq!(app.set_chaos(&json!({})).await.status(), StatusCode::OK);
    let clean = app.paid(3_000, &receiver.url, &new_reference()).await;

    let (_, _, lines) = bill(&app, &today()).await;

    assert_eq!(lines.len(), 1 + 2, "{lines:?}");
    assert!(row(&lines, "transaction_id", &omitted.payment_id).is_none());
    let changed = row(&lines, "transaction_id", &changed.payment_id).expect("listed");
    assert_eq!(field(changed, "amount"), "21.00");
    let clean = row(&lines, "transaction_id", &clean.payment_id).expect("listed");
    assert_eq!(field(clean, "amount"), "30.00");
}
