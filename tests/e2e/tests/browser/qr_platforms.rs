//! Paying by QR code: the backend speaks a real platform's protocol
//! (`PLATFORM=wechatpay`, `PLATFORM=alipay`) to a platform-sim process, the
//! page shows the platform's code while the payment waits for the shopper,
//! and the platform's signed notification charges the order once. The
//! platform is the only payment method there: the page names it, offers no
//! choice and shows no balance, and the wallet is never touched.

use crate::helpers::{Options, TestPlatform, spawn_app_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wechat_pay_shows_its_qr_code_and_charges_once() {
    pays_by_qr_code_once(TestPlatform::Wechatpay, "wechatpay", "WeChat Pay").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alipay_shows_its_qr_code_and_charges_once() {
    // Alipay then sends TRADE_FINISHED for the same trade: still one charge.
    pays_by_qr_code_once(TestPlatform::Alipay, "alipay", "Alipay").await;
}

async fn pays_by_qr_code_once(platform: TestPlatform, name: &str, expected_method: &str) {
    // platform-sim "scans" and pays 4 s after the hand-over.
    let app = spawn_app_with(Options {
        platform,
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
    // The platform pays: the page says so, with nothing to choose and no balance.
    let method = app
        .eventually("the line naming what pays", || async {
            app.text("method").await
        })
        .await;
    assert_eq!(method, expected_method);
    assert!(!app.is_present("methods").await, "no choice of method");
    assert!(!app.is_present("balance").await, "no balance line");

    app.click("pay-button").await;

    // While the platform waits for the shopper, the page shows its payment link as a QR code.
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
        app.text("progress").await.as_deref(),
        Some("Scan the QR code to pay\u{2026}"),
        "the page says what to do with the code"
    );
    assert_eq!(
        app.attr("status", "data-status").await.as_deref(),
        Some("PENDING")
    );
    app.screenshot(&format!("{name}-qr")).await;

    // platform-sim pays and notifies, signed; the page shows the receipt.
    app.wait_for_status("PAID").await;
    assert!(app.is_present("receipt").await);
    assert!(
        !app.is_present("payment-code").await,
        "no code once the order is paid"
    );
    assert_eq!(app.text("method").await.as_deref(), Some(expected_method));
    assert!(
        !app.is_present("balance").await,
        "no balance line on the receipt"
    );
    app.screenshot(&format!("{name}-paid")).await;
    app.assert_paid_by_platform_once(&order).await;
    app.finish().await;
}
