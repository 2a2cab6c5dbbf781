//! Paying by QR code: the backend speaks a real platform's protocol
//! (`PLATFORM=wechatpay`) to a platform-sim process, the page shows the
//! platform's code while the payment waits for the shopper, and the
//! platform's signed, encrypted notification charges the order once.

use crate::helpers::{Options, TestPlatform, spawn_app_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wechat_pay_shows_its_qr_code_and_charges_once() {
    // platform-sim "scans" and pays 4 s after the prepay.
    let app = spawn_app_with(Options {
        platform: TestPlatform::Wechatpay,
        callback_delay_ms: 4_000,
        ..Options::default()
    })
    .await;
    let order = app.create_order(2_450).await;
    app.open_pay_page(&order.order_no).await;
    app.wait_for_pay_button().await;
    assert_eq!(app.text("amount").await.as_deref(), Some("24.50 CNY"));
    // No money moves through platform-sim, but this is not the sandbox platform.
    assert!(!app.is_present("sandbox-badge").await);

    app.click("pay-button").await;

    // While WeChat Pay waits for the shopper, the page shows its code_url as a QR code.
    let width = app
        .eventually("the QR code to load", || async {
            let loaded = app
                .js("const img = document.getElementById('payment-code'); \
                     return img && img.complete ? img.naturalWidth : 0;")
                .await;
            loaded.as_u64().filter(|w| *w >= 200)
        })
        .await;
    assert!(width >= 200, "the code is drawn at least 200 px wide");
    assert_eq!(
        app.attr("status", "data-status").await.as_deref(),
        Some("PENDING")
    );
    app.screenshot("wechatpay-qr").await;

    // platform-sim pays, notifies (signed, encrypted), and the page shows the receipt.
    app.wait_for_status("PAID").await;
    assert!(app.is_present("receipt").await);
    assert!(
        !app.is_present("payment-code").await,
        "no code once the order is paid"
    );
    app.screenshot("wechatpay-paid").await;
    app.assert_charged_once(&order).await;
    app.finish().await;
}
