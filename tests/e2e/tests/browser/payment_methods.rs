//! Choosing how to pay, in the sandbox, which offers both methods: the wallet
//! (the default: the page shows the balance, and the payment deducts it) or
//! the sandbox's simulated platform (no balance shown, the wallet untouched).

use crate::helpers::spawn_app;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_is_the_default_choice_and_its_payment_shows_and_deducts_the_balance() {
    let app = spawn_app().await;
    let order = app.create_order(1_800).await;
    app.open_pay_page(&order.order_no).await;

    // "Pay with": the wallet checked, the platform offered beside it.
    app.eventually("the choice of method", || async {
        app.is_present("methods").await.then_some(())
    })
    .await;
    assert_eq!(app.is_checked("method-wallet").await, Some(true));
    assert_eq!(app.is_checked("method-platform").await, Some(false));
    let choice = app.text("methods").await.unwrap_or_default();
    assert!(
        choice.contains("Wallet balance") && choice.contains("Simulated payment platform"),
        "the methods are named: {choice:?}"
    );
    assert!(!app.is_present("method").await, "the radios say what pays");
    assert_eq!(app.text("balance").await.as_deref(), Some("1,000.00 EUR"));

    app.click("pay-button").await;

    app.wait_for_status("PAID").await;
    assert!(!app.is_present("methods").await, "no choice once paid");
    assert_eq!(app.text("method").await.as_deref(), Some("Wallet balance"));
    app.eventually("the balance to show the charge", || async {
        (app.text("balance").await.as_deref() == Some("982.00 EUR")).then_some(())
    })
    .await;
    app.assert_charged_once(&order).await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paying_through_the_platform_shows_no_balance_and_leaves_the_wallet_alone() {
    let app = spawn_app().await;
    let (opening, before) = app.balances().await;
    let order = app.create_order(1_800).await;
    app.open_pay_page(&order.order_no).await;
    app.eventually("the choice of method", || async {
        app.is_present("method-platform").await.then_some(())
    })
    .await;
    assert!(app.is_present("balance").await, "the wallet, by default");

    // Ada chooses the platform: the balance line goes.
    app.click("method-platform").await;
    app.eventually("the balance line to go", || async {
        (!app.is_present("balance").await).then_some(())
    })
    .await;
    assert_eq!(app.is_checked("method-platform").await, Some(true));
    assert_eq!(app.is_checked("method-wallet").await, Some(false));
    app.screenshot("pay-methods").await;

    app.click("pay-button").await;

    // Paid through the platform: named, no choice, no balance, and the wallet untouched.
    app.wait_for_status("PAID").await;
    assert!(app.is_present("receipt").await);
    assert!(!app.is_present("methods").await, "no choice once paid");
    assert_eq!(
        app.text("method").await.as_deref(),
        Some("Simulated payment platform")
    );
    assert!(!app.is_present("balance").await, "no balance line");
    app.assert_paid_by_platform_once(&order).await;
    assert_eq!(app.balances().await, (opening, before), "Ada's wallet");
    assert_eq!(app.pay_requests_sent().await, 1);

    // A reload shows the order's own method, still without a balance.
    app.client().refresh().await.expect("reload");
    app.wait_for_status("PAID").await;
    app.eventually("the line naming what paid", || async {
        app.text("method").await
    })
    .await;
    assert_eq!(
        app.text("method").await.as_deref(),
        Some("Simulated payment platform")
    );
    assert!(!app.is_present("methods").await);
    assert!(!app.is_present("balance").await, "no balance line");
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);
    app.finish().await;
}
