//! Reloading while the bank has not answered yet never pays twice.

use crate::helpers::{Options, spawn_app_with};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloading_while_the_payment_is_in_flight_still_charges_once() {
    // Arrange: the platform's callback comes 2 s after the payment is accepted.
    let app = spawn_app_with(Options {
        callback_delay_ms: 2_000,
        ..Options::default()
    })
    .await;
    let order = app.create_order(4_200).await;
    app.open_pay_page(&order.order_no).await;
    app.click("pay-button").await;
    app.eventually("the payment attempt to exist", || async {
        (app.attempts(&order.order_no).await == 1).then_some(())
    })
    .await;
    assert_eq!(
        app.db_status(&order.order_no).await,
        "PENDING",
        "reload must come before the callback"
    );

    // Act: reload; press "Pay now" again if the reloaded page offers it.
    app.client().refresh().await.expect("reload");
    let offered = app
        .eventually("the reloaded page to settle", || async {
            if app.attr("status", "data-status").await.as_deref() == Some("PAID") {
                return Some(false);
            }
            let button = app
                .client()
                .find(fantoccini::Locator::Id("pay-button"))
                .await
                .ok()?;
            button.is_enabled().await.ok()?.then_some(true)
        })
        .await;
    if offered {
        app.click("pay-button").await;
    }

    // Assert: the page shows the true state, and there was one charge.
    app.wait_for_status("PAID").await;
    assert!(app.is_present("receipt").await);
    app.assert_charged_once(&order).await;
    // One token per page load, never more.
    assert!(app.tokens_issued(&order.order_no).await <= 2);
    // Nothing more happens later.
    tokio::time::sleep(Duration::from_millis(500)).await;
    app.assert_charged_once(&order).await;
    app.finish().await;
}
