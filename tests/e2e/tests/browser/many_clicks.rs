//! Impatient shoppers: however often "Pay now" is pressed, one attempt, one charge.

use crate::helpers::spawn_app;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_click_on_pay_now_pays_once() {
    let app = spawn_app().await;
    let order = app.create_order(1_000).await;
    app.open_pay_page(&order.order_no).await;

    // Act: a real double click, as the browser's input system delivers it.
    app.double_click("pay-button").await;

    // Assert
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert_eq!(
        app.pay_requests_sent().await,
        1,
        "pay requests sent by the page"
    );
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_rapid_clicks_on_pay_now_pay_once() {
    let app = spawn_app().await;
    let order = app.create_order(1_000).await;
    app.open_pay_page(&order.order_no).await;

    // Act: five clicks in one task, before the page can re-render the button as disabled.
    app.js("const button = document.getElementById('pay-button');
         for (let i = 0; i < 5; i++) button.click();
         return null;")
        .await;

    // Assert
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert_eq!(
        app.pay_requests_sent().await,
        1,
        "pay requests sent by the page"
    );
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);
    app.finish().await;
}
