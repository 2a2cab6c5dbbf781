//! Signing in: a pay link opened signed out comes back to its order after the
//! sign-in page; a wrong password is refused plainly; `next` never leaves the site.

use crate::helpers::{ADA, Options, spawn_app_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pay_link_opened_signed_out_goes_through_sign_in_and_back_then_pays_once() {
    // Arrange: an order for Ada; the browser has no session.
    let app = spawn_app_with(Options::signed_out()).await;
    let order = app.create_order(2_750).await;
    let pay_path = format!("/pay/{}", order.order_no);

    // Act 1: open the pay link.
    app.goto(&pay_path).await;

    // Assert 1: the page sent the shopper to sign in, remembering where they were.
    let sign_in_path = format!("/signin?next=%2Fpay%2F{}", order.order_no);
    app.wait_for_path(&sign_in_path).await;
    assert_eq!(
        app.tokens_issued(&order.order_no).await,
        0,
        "no token signed out"
    );

    // Act 2: the sandbox lists the demo shoppers; the first one's button fills the form.
    app.eventually("the demo shoppers' credentials", || async {
        app.is_present("demo-shopper-1").await.then_some(())
    })
    .await;
    let listed = app.text("demo-shoppers").await.unwrap_or_default();
    assert!(
        listed.contains(ADA.email) && listed.contains(ADA.password),
        "{listed}"
    );
    app.screenshot("signin").await;
    app.click("demo-shopper-1").await;
    assert_eq!(app.value_of("signin-email").await, ADA.email);
    assert_eq!(app.value_of("signin-password").await, ADA.password);
    app.click("signin-submit").await;

    // Assert 2: back on the payment page, which now pays, once.
    app.wait_for_path(&pay_path).await;
    app.wait_for_pay_button().await;
    assert_eq!(app.text("amount").await.as_deref(), Some("27.50 EUR"));
    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    assert!(app.is_present("receipt").await);
    app.assert_charged_once(&order).await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_refused_with_a_plain_message_and_signs_nobody_in() {
    let app = spawn_app_with(Options::signed_out()).await;
    app.goto("/signin?next=%2F").await;
    app.type_into("signin-email", ADA.email).await;
    app.type_into("signin-password", "not-the-password").await;

    app.click("signin-submit").await;

    app.eventually("the invalid-credentials notice", || async {
        (app.attr("message", "data-notice").await.as_deref() == Some("invalid-credentials"))
            .then_some(())
    })
    .await;
    let message = app.text("message").await.unwrap_or_default();
    assert_eq!(message, "The email or the password is wrong.");
    assert_eq!(app.current_path().await, "/signin?next=%2F");
    let (status, _) = app.fetch_in_browser("/api/me").await;
    assert_eq!(status, 401, "nobody is signed in");
    app.screenshot("signin-wrong-password").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_next_pointing_at_another_site_is_ignored_and_the_shopper_stays_on_this_one() {
    let app = spawn_app_with(Options::signed_out()).await;
    for next in [
        "//evil.example",
        "https://evil.example",
        "%2F%2Fevil.example",
        "/%5Cevil.example",
        "https:%2F%2Fevil.example",
    ] {
        app.goto(&format!("/signin?next={next}")).await;
        app.type_into("signin-email", ADA.email).await;
        app.type_into("signin-password", ADA.password).await;

        app.click("signin-submit").await;

        // The shop of this site, whoever wrote the link.
        app.wait_for_path("/").await;
        let url = app.client().current_url().await.expect("a URL");
        assert_eq!(url.host_str(), Some("127.0.0.1"), "next={next}: {url}");
        assert_eq!(url.port(), app_port(&app), "next={next}: {url}");
    }
    app.finish().await;
}

fn app_port(app: &crate::helpers::TestApp) -> Option<u16> {
    url::Url::parse(&app.address).ok().and_then(|u| u.port())
}
