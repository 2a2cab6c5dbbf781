//! One shopper cannot see, take a token for, or pay another shopper's order.

use crate::helpers::{ADA, BEN, Options, spawn_app_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_shopper_opening_the_pay_page_sees_order_not_found_and_nothing_changes() {
    // Arrange: an order of Ada's; Ben is signed in.
    let app = spawn_app_with(Options {
        signed_in_as: Some(BEN),
        ..Options::default()
    })
    .await;
    let order = app.create_order(3_300).await;
    let ben_before = app.balances_of(BEN).await;

    // Act
    app.goto(&format!("/pay/{}", order.order_no)).await;

    // Assert: the page says there is no such order (as for one that does not
    // exist), offers nothing to press, and nothing was issued or charged.
    app.wait_for_notice("order-not-found").await;
    let message = app.text("message").await.unwrap_or_default();
    assert!(message.contains("could not find this order"), "{message}");
    assert!(!app.is_present("pay-button").await);
    assert_eq!(app.text("amount").await.as_deref(), Some("\u{2026}"));
    app.screenshot("order-of-another-shopper").await;
    let (status, body) = app
        .fetch_in_browser(&format!("/api/orders/{}", order.order_no))
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "ORDER_NOT_FOUND");
    assert_eq!(app.tokens_issued(&order.order_no).await, 0);
    app.assert_nothing_charged(&order).await;
    assert_eq!(
        app.balances_of(BEN).await,
        ben_before,
        "Ben's balance untouched"
    );
    let (opening, current) = app.balances_of(ADA).await;
    assert_eq!(current, opening, "Ada's balance untouched");
    app.finish().await;
}
