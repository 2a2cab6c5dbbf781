//! After signing out, a payment page left in the history cannot pay: its next
//! request is refused (401) and it goes to the sign-in page.

use crate::helpers::spawn_app;
use fantoccini::Locator;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_signing_out_the_old_payment_page_cannot_pay_and_goes_to_sign_in() {
    // Arrange: Ada's payment page holds a token, ready to pay.
    let app = spawn_app().await;
    let order = app.create_order(4_400).await;
    app.open_pay_page(&order.order_no).await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);

    // Act 1: "Sign out" in the header.
    app.click("signout").await;

    // Assert 1: the sign-in page, and the session is gone on the server.
    app.wait_for_path("/signin").await;
    let (status, _) = app.fetch_in_browser("/api/me").await;
    assert_eq!(status, 401, "signed out");

    // Act 2: "Back" to the old payment page. Chromium may restore it as it was
    // (back/forward cache, token in hand) or load it afresh; press "Pay now"
    // if it is offered.
    app.client().back().await.expect("history back");
    let pay_path = format!("/pay/{}", order.order_no);
    let sign_in_path = format!("/signin?next=%2Fpay%2F{}", order.order_no);
    let offered = app
        .eventually("the old page to settle", || async {
            if app.current_path().await == sign_in_path {
                return Some(false);
            }
            let button = app.client().find(Locator::Id("pay-button")).await.ok()?;
            button.is_enabled().await.ok()?.then_some(true)
        })
        .await;
    if offered {
        eprintln!("the old payment page came back from the back/forward cache: pressing Pay now");
        assert_eq!(app.current_path().await, pay_path);
        app.click("pay-button").await;
    } else {
        eprintln!("the old payment page was loaded afresh and found no session");
    }

    // Assert 2: refused, sent to sign in (coming back to this order), nothing charged.
    app.wait_for_path(&sign_in_path).await;
    app.assert_nothing_charged(&order).await;
    assert_eq!(app.attempts(&order.order_no).await, 0);
    assert_eq!(
        app.tokens_issued(&order.order_no).await,
        1,
        "no token without a session"
    );
    app.finish().await;
}
