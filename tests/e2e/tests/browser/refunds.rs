//! Refunds on the receipt: the merchant gives part, then the rest, of a paid
//! order back through its API; the shopper's payment page lists each refund
//! with its amount and status and, once everything is given back, says the
//! order is refunded.

use crate::helpers::spawn_app;
use api_types::RefundStatus;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_receipt_lists_the_merchants_refunds_and_a_full_refund_reads_refunded() {
    // Arrange: Ada pays a 25.00 EUR order on the page.
    let app = spawn_app().await;
    let order = app.create_order(2_500).await;
    app.open_pay_page(&order.order_no).await;
    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert!(app.refund_lines().await.is_empty(), "no refunds yet");
    assert!(!app.is_present("refunds").await, "no empty refund list");
    let (opening, _) = app.balances().await;

    // Act: the merchant gives 7.50 EUR back; the sandbox settles it.
    let part = app
        .refund(&order.order_no, 750, "One cup arrived broken")
        .await;
    assert_eq!(part.status, RefundStatus::Pending);
    app.wait_for_refund(&order.order_no, &part.refund_no, RefundStatus::Succeeded)
        .await;
    app.client().refresh().await.expect("reload");

    // Assert: still paid, with one refund line, and the balance credited once.
    app.wait_for_status("PAID").await;
    let lines = app
        .eventually("one refund line", || async {
            let lines = app.refund_lines().await;
            (!lines.is_empty()).then_some(lines)
        })
        .await;
    assert_eq!(lines, vec![line("7.50 EUR")], "no note: the merchant asked");
    assert_eq!(
        app.text("receipt-title").await.as_deref(),
        Some("Payment received")
    );
    app.screenshot("receipt-partial-refund").await;
    app.eventually("the balance to show the refund", || async {
        (app.text("balance").await.as_deref() == Some("982.50 EUR")).then_some(())
    })
    .await;
    assert_eq!(
        app.balances().await,
        (opening, opening - 2_500 + 750),
        "charged once, credited once"
    );

    // Act: the merchant gives the rest back.
    let rest = app.refund(&order.order_no, 1_750, "Order cancelled").await;
    app.wait_for_refund(&order.order_no, &rest.refund_no, RefundStatus::Succeeded)
        .await;
    app.client().refresh().await.expect("reload");

    // Assert: the order reads refunded, both refunds are listed oldest first,
    // and the balance is whole again.
    app.wait_for_status("REFUNDED").await;
    assert_eq!(app.text("receipt-title").await.as_deref(), Some("Refunded"));
    let lines = app
        .eventually("two refund lines", || async {
            let lines = app.refund_lines().await;
            (lines.len() == 2).then_some(lines)
        })
        .await;
    assert_eq!(lines, vec![line("7.50 EUR"), line("17.50 EUR")]);
    assert!(!app.is_present("pay-button").await, "nothing to pay");
    app.eventually("the balance to be whole again", || async {
        (app.text("balance").await.as_deref() == Some("1,000.00 EUR")).then_some(())
    })
    .await;
    assert_eq!(app.db_status(&order.order_no).await, "REFUNDED");
    assert_eq!(app.balances().await, (opening, opening));
    app.screenshot("receipt-refunds").await;
    app.finish().await;
}

/// A settled refund of the merchant's as its line reads: amount, "Refunded",
/// `data-status`, no note.
fn line(amount: &str) -> (String, String, String, String) {
    (
        amount.into(),
        "Refunded".into(),
        "SUCCEEDED".into(),
        String::new(),
    )
}
