//! The Content-Security-Policy: every page answer carries it, and no page of
//! the app breaks it (no inline style, no inline script but the hashed loader).

use crate::helpers::spawn_app;
use reqwest::header::CONTENT_SECURITY_POLICY;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_carries_the_csp_and_no_page_violates_it() {
    let app = spawn_app().await;
    let order = app.create_order(5_500).await;
    let pay_path = format!("/pay/{}", order.order_no);

    // The header, on every route the page is served for.
    for path in ["/", "/signin", pay_path.as_str(), "/no-such-page"] {
        let answer = app
            .http
            .get(format!("{}{path}", app.address))
            .send()
            .await
            .expect("the page answers");
        let csp = answer
            .headers()
            .get(CONTENT_SECURITY_POLICY)
            .unwrap_or_else(|| panic!("{path} has a Content-Security-Policy"))
            .to_str()
            .expect("ASCII")
            .to_owned();
        assert!(
            csp.contains("script-src 'self' 'wasm-unsafe-eval' 'sha256-"),
            "{path}: {csp}"
        );
        assert!(csp.contains("style-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("connect-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
    }

    // Every page, in every state the test reaches, reports no violation.
    app.goto("/").await;
    app.eventually("the shop", || async {
        app.is_present("buy-mug").await.then_some(())
    })
    .await;
    app.assert_no_csp_violations().await;
    app.open_pay_page(&order.order_no).await;
    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    app.eventually("the receipt", || async {
        app.is_present("payment-id").await.then_some(())
    })
    .await;
    app.assert_no_csp_violations().await;
    app.goto("/no-such-page").await;
    app.eventually("the not-found page", || async {
        app.is_present("not-found-title").await.then_some(())
    })
    .await;
    app.assert_no_csp_violations().await;
    app.goto("/signin").await;
    app.eventually("the demo shoppers", || async {
        app.is_present("demo-shopper-1").await.then_some(())
    })
    .await;
    app.click("demo-shopper-1").await;
    app.assert_no_csp_violations().await;

    // The recorder does see a violation: an inline style attribute is refused.
    app.js("document.getElementById('main').setAttribute('style', 'color: red'); return null;")
        .await;
    let violations = app
        .eventually("the recorder to see the inline style", || async {
            let seen = app.csp_violations().await;
            (!seen.is_empty()).then_some(seen)
        })
        .await;
    assert_eq!(
        violations[0]["directive"], "style-src-attr",
        "{violations:?}"
    );
    app.goto("/signin").await;
    app.finish().await;
}
