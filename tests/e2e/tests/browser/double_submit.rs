//! The same pay request twice at once, on a slow network: the page shows what
//! is true (PAID), never that nothing was charged.
//!
//! A page re-sending after a network drop, or a proxy repeating a request,
//! puts two submits of one token on the wire together; the backend charges
//! once and must answer the second with the first's answer. And whatever a
//! pay request is answered, the page says "nothing was charged" only when the
//! order, read from the backend, shows no payment.

use crate::helpers::{TestApp, spawn_app};

/// Records every text the payment page's notice shows (`window.__notices`),
/// so a notice shown for a moment is seen too.
const WATCH_NOTICES: &str = "
    window.__notices = [];
    const record = () => {
        const message = document.getElementById('message');
        const text = message ? message.textContent : '';
        if (text && window.__notices[window.__notices.length - 1] !== text) {
            window.__notices.push(text);
        }
    };
    new MutationObserver(record).observe(document.body, {subtree: true, childList: true, characterData: true});
    return null;";

/// Wraps `fetch` so that every pay request goes out twice at once (a
/// duplicated submit of one token), and the page is given the answer of the
/// submit that did not win: a replay, or whatever else the backend said.
const DUPLICATE_PAY_REQUESTS: &str = "
    window.__payAnswers = [];
    const realFetch = window.fetch.bind(window);
    window.fetch = async (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input), location.href);
        if (!url.pathname.endsWith('/pay')) return realFetch(input, init);
        const copy = () => (input instanceof Request ? input.clone() : input);
        const [a, b] = await Promise.all([realFetch(copy(), init), realFetch(copy(), init)]);
        const fresh = (r) => r.status === 202 && !r.headers.get('idempotent-replayed');
        window.__payAnswers.push([a.status, b.status]);
        return fresh(b) ? a : b;
    };
    return null;";

/// Wraps `fetch` so that the first pay request reaches the backend but the
/// page is told `409 TOKEN_INVALID` (an answer that does not speak of the
/// payment the request made).
const MISLEADING_FIRST_ANSWER: &str = "
    const realFetch = window.fetch.bind(window);
    let first = true;
    window.fetch = async (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input), location.href);
        if (!url.pathname.endsWith('/pay') || !first) return realFetch(input, init);
        first = false;
        await realFetch(input, init);
        const body = {error: {code: 'TOKEN_INVALID', message: 'request token is unknown, expired or already used'}};
        return new Response(JSON.stringify(body), {status: 409, headers: {'content-type': 'application/json'}});
    };
    return null;";

/// The notices the page showed, none of which may say nothing was charged.
async fn assert_never_said_nothing_was_charged(app: &TestApp) {
    let notices = app.js("return window.__notices;").await;
    let notices: Vec<String> = serde_json::from_value(notices).expect("a list of texts");
    assert!(
        notices
            .iter()
            .all(|text| !text.to_lowercase().contains("nothing was charged")),
        "the page said nothing was charged for an order it paid: {notices:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicated_submit_on_a_slow_network_shows_paid_and_never_nothing_was_charged() {
    let app = spawn_app().await;
    let order = app.create_order(1_000).await;
    app.open_pay_page(&order.order_no).await;
    app.js(WATCH_NOTICES).await;
    app.js(DUPLICATE_PAY_REQUESTS).await;
    app.set_latency(300).await;

    app.double_click("pay-button").await;

    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    let answers = app.js("return window.__payAnswers;").await;
    assert_eq!(
        answers,
        serde_json::json!([[202, 202]]),
        "both submits of the token were answered 202 (the second a replay)"
    );
    assert_never_said_nothing_was_charged(&app).await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);
    app.screenshot("double_submit_paid").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_for_a_request_that_paid_is_checked_against_the_order_and_shows_paid() {
    let app = spawn_app().await;
    let order = app.create_order(1_000).await;
    app.open_pay_page(&order.order_no).await;
    app.js(WATCH_NOTICES).await;
    app.js(MISLEADING_FIRST_ANSWER).await;
    app.set_latency(300).await;

    app.double_click("pay-button").await;

    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert_never_said_nothing_was_charged(&app).await;
    assert_eq!(
        app.tokens_issued(&order.order_no).await,
        1,
        "no fresh token for an order already being paid"
    );
    app.finish().await;
}
