//! The connection drops as "Pay now" is pressed: the page re-sends the same
//! token on its backoff schedule, and the payment goes through once.

use crate::helpers::spawn_app;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn going_offline_while_paying_retries_with_the_same_token_and_pays_once() {
    let app = spawn_app().await;
    let order = app.create_order(1_500).await;
    app.open_pay_page(&order.order_no).await;

    // Act: the network is gone when the shopper presses, and comes back shortly after.
    app.set_offline(true).await;
    app.click("pay-button").await;
    app.wait_for_notice("retrying").await;
    assert_eq!(
        app.attempts(&order.order_no).await,
        0,
        "nothing reached the backend"
    );
    app.set_offline(false).await;

    // Assert: one token for the whole page load, one attempt, one charge.
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);
    app.finish().await;
}
