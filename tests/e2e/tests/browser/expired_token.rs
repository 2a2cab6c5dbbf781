//! A token that expired while the shopper hesitated: the page gets a fresh one.

use crate::helpers::{Options, spawn_app_with};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_replaced_and_the_payment_then_succeeds_once() {
    // Arrange: tokens live 2 s; the shopper waits 3 s before pressing.
    let app = spawn_app_with(Options {
        token_ttl_secs: 2,
        ..Options::default()
    })
    .await;
    let order = app.create_order(3_000).await;
    app.open_pay_page(&order.order_no).await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    // Act
    app.click("pay-button").await;

    // Assert: refused (409 TOKEN_INVALID), a fresh token, and a plain explanation.
    app.wait_for_notice("token-renewed").await;
    let message = app.text("message").await.unwrap_or_default();
    assert!(message.contains("nothing was charged"), "{message}");
    app.wait_for_pay_button().await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 2);
    app.assert_nothing_charged(&order).await;
    app.screenshot("expired-token").await;

    // Pressing again pays, once.
    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 2);
    app.finish().await;
}
