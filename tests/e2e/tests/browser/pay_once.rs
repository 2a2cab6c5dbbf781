//! The happy path: shop, payment page, one press, one charge, a receipt.

use crate::helpers::{ADA, spawn_app};
use api_types::api::Product;
use fantoccini::Locator;
use fantoccini::key::Key;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buying_then_paying_once_charges_once_and_shows_the_receipt() {
    // Arrange: Ada is signed in; the shop shows her balance and the catalogue,
    // and "Buy" opens the new order's payment page.
    let app = spawn_app().await;
    let catalogue: Vec<Product> = app
        .http
        .get(format!("{}/api/products", app.address))
        .send()
        .await
        .expect("GET /api/products")
        .json()
        .await
        .expect("the catalogue");
    let mug = catalogue
        .iter()
        .find(|p| p.sku == "mug")
        .expect("the demo catalogue sells a mug");
    assert_eq!(mug.price_cents, 1_250, "the demo mug's price");
    app.goto("/").await;
    app.eventually("the shop's Buy button for the mug", || async {
        app.is_present("buy-mug").await.then_some(())
    })
    .await;
    assert_eq!(app.text("shopper-email").await.as_deref(), Some(ADA.email));
    assert_eq!(app.text("balance").await.as_deref(), Some("1,000.00 EUR"));
    assert!(app.is_present("no-orders").await, "no orders yet");
    // The backend runs PLATFORM=sandbox: the page says so, since no money moves.
    let badge = app
        .eventually("the sandbox badge", || async {
            app.text("sandbox-badge").await
        })
        .await;
    assert_eq!(badge.to_lowercase(), "sandbox");
    app.screenshot("shop").await;
    app.click("buy-mug").await;
    app.wait_for_pay_button().await;
    let url = app.client().current_url().await.expect("a URL");
    let order_no = url
        .path()
        .strip_prefix("/pay/")
        .expect("the shop navigated to /pay/{order_no}")
        .to_owned();
    let order = app.order_in_browser(&order_no).await;
    assert_eq!(
        order.amount_cents, mug.price_cents,
        "priced from the catalogue"
    );
    assert_eq!(order.account_id, app.account_id, "on Ada's account");
    assert_eq!(
        app.text("description").await.as_deref(),
        Some("Stoneware mug")
    );

    // The page load asked for exactly one token and shows amount, status and balance.
    assert_eq!(
        app.tokens_issued(&order_no).await,
        1,
        "tokens per page load"
    );
    assert_eq!(app.text("amount").await.as_deref(), Some("12.50 EUR"));
    assert_eq!(
        app.attr("status", "data-status").await.as_deref(),
        Some("PENDING")
    );
    assert_eq!(app.text("balance").await.as_deref(), Some("1,000.00 EUR"));
    app.screenshot("pay-before").await;

    // Act
    app.click("pay-button").await;

    // Assert: the page shows PAID with a receipt, and the balance went down once.
    app.wait_for_status("PAID").await;
    let payment_id = app
        .text("payment-id")
        .await
        .expect("the receipt shows the payment id");
    assert!(!payment_id.is_empty());
    assert!(app.is_present("paid-at").await, "the receipt shows when");
    assert!(
        !app.is_present("pay-button").await,
        "no pay button on a paid order"
    );
    app.eventually("the balance to show the charge", || async {
        (app.text("balance").await.as_deref() == Some("987.50 EUR")).then_some(())
    })
    .await;
    app.screenshot("pay-after").await;
    app.assert_charged_once(&order).await;
    assert_eq!(app.pay_requests_sent().await, 1);
    assert_eq!(
        app.tokens_issued(&order_no).await,
        1,
        "no token after paying"
    );

    // A narrow phone screen shows the same page.
    app.client()
        .set_window_size(360, 780)
        .await
        .expect("the window can be resized");
    app.screenshot("pay-after-360px").await;

    // Reloading a paid order shows its final state, no pay button, and asks for no token.
    app.client().refresh().await.expect("reload");
    app.wait_for_status("PAID").await;
    assert!(app.is_present("receipt").await);
    assert!(!app.is_present("pay-button").await);
    assert_eq!(app.tokens_issued(&order_no).await, 1);
    app.assert_charged_once(&order).await;

    // The shop lists the paid order, and the balance is down by the price, once.
    app.client()
        .set_window_size(1280, 900)
        .await
        .expect("the window can be resized");
    app.goto("/").await;
    app.eventually("the shop to list the paid order", || async {
        app.is_present("orders").await.then_some(())
    })
    .await;
    assert_eq!(app.text("balance").await.as_deref(), Some("987.50 EUR"));
    let listed = app
        .client()
        .find_all(Locator::Css("#orders .order"))
        .await
        .expect("the order list");
    assert_eq!(listed.len(), 1, "one order placed by one press");
    let (opening, current) = app.balances().await;
    assert_eq!(opening - current, mug.price_cents, "charged the price once");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pay_button_works_from_the_keyboard() {
    let app = spawn_app().await;
    let order = app.create_order(2_500).await;
    app.open_pay_page(&order.order_no).await;

    // Tab order reaches the button; Enter presses it.
    let button = app
        .client()
        .find(Locator::Id("pay-button"))
        .await
        .expect("the pay button");
    app.js("document.getElementById('pay-button').focus(); return null;")
        .await;
    button
        .send_keys(&char::from(Key::Enter).to_string())
        .await
        .expect("keys reach the button");

    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    app.finish().await;
}
