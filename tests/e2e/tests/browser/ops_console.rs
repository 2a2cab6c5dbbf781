//! The operator console (`/ops/`): unreachable without an operator session,
//! signed into with the admin token; the anomalies queue after a small chaos
//! storm (a callback id reused with another body, a second success naming
//! another payment), one anomaly resolved with a note; the timeline of an
//! order that had duplicate deliveries and a refund; the activity chart drawn
//! and refreshing by itself; the books' balances.

use crate::helpers::{ADMIN_TOKEN, TestApp, spawn_app};
use api_types::RefundStatus;
use fantoccini::Locator;
use serde_json::{Value, json};
use uuid::Uuid;

/// The operator's name in these tests.
const OPERATOR: &str = "Grace on call";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_is_unreachable_without_an_operator_session_and_signs_in_with_the_admin_token()
{
    // Arrange: a browser signed in as a shopper (a shopper's session is not an operator's).
    let app = spawn_app().await;

    // Act + Assert: the console shows only its sign-in form, and its API refuses.
    app.goto("/ops/anomalies").await;
    wait_for(&app, "ops-signin-form").await;
    assert!(!app.is_present("queue").await, "no queue before signing in");
    assert!(!app.is_present("operator-name").await);
    for path in ["/api/ops/me", "/api/ops/anomalies", "/api/ops/activity"] {
        let (status, body) = app.fetch_in_browser(path).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{path}: {body}");
    }
    app.screenshot("ops-console-signin").await;

    // A wrong token is refused with a plain message, and nothing opens.
    app.type_into("ops-name", OPERATOR).await;
    app.type_into("ops-token", "not-the-admin-token").await;
    app.click("ops-signin-button").await;
    let error = wait_for_text(&app, "ops-signin-error").await;
    assert!(error.contains("not the backend's"), "{error}");
    assert_eq!(app.fetch_in_browser("/api/ops/me").await.0, 401);

    // The right token signs in: the console shows who is signed in and the queue.
    sign_in_operator(&app).await;
    assert_eq!(app.current_path().await, "/ops/anomalies");
    let (status, me) = app.fetch_in_browser("/api/ops/me").await;
    assert_eq!((status, me), (200, json!({ "operator": OPERATOR })));
    wait_for(&app, "queue-empty").await;
    assert!(
        !app.current_path().await.contains(ADMIN_TOKEN),
        "the token is never in a URL"
    );
    let stored = app
        .js("return JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie;")
        .await;
    assert!(
        !stored.as_str().unwrap_or_default().contains(ADMIN_TOKEN),
        "the token is kept nowhere in the browser: {stored}"
    );

    // The reconciliation view opens on today, not reconciled yet.
    app.click("tab-reconciliation").await;
    let none = wait_for_text(&app, "recon-none").await;
    assert!(none.contains("has not been reconciled yet"), "{none}");

    // Signing out closes the console again.
    app.click("signout").await;
    wait_for(&app, "ops-signin-form").await;
    assert_eq!(app.fetch_in_browser("/api/ops/me").await.0, 401);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_chaos_storm_the_queue_lists_the_anomalies_and_one_is_resolved_with_a_note() {
    // Arrange: a paid order, then a storm of bad callbacks about it.
    let app = spawn_app().await;
    let storm = chaos_storm(&app).await;
    sign_in_operator(&app).await;

    // Assert: the open queue lists both anomalies of the order, newest first.
    let kinds = app
        .eventually("the storm's anomalies in the queue", || async {
            let kinds = queue_rows(&app).await;
            (kinds.len() >= 2).then_some(kinds)
        })
        .await;
    let kinds: Vec<&str> = kinds.iter().map(|(_, kind, _)| kind.as_str()).collect();
    assert!(kinds.contains(&"CALLBACK_CONFLICT"), "{kinds:?}");
    assert!(
        kinds.iter().any(|k| [
            "SECOND_SUCCESS_FOR_PAID_ORDER",
            "PAYMENT_REFERENCE_MISMATCH"
        ]
        .contains(k)),
        "{kinds:?}"
    );

    let (newest, _, _) = app
        .eventually("the queue's rows", || async {
            queue_rows(&app).await.first().cloned()
        })
        .await;
    app.click(&format!("open-anomaly-{newest}")).await;
    wait_for_text(&app, "anomaly-facts").await;
    app.screenshot("ops-console-queue").await;

    // The kind filter narrows the queue.
    select(&app, "filter-kind", "CALLBACK_CONFLICT").await;
    let conflicts = app
        .eventually("only the conflict", || async {
            let rows = queue_rows(&app).await;
            (rows.len() == 1 && rows[0].1 == "CALLBACK_CONFLICT").then_some(rows)
        })
        .await;
    let (conflict_id, _, _) = conflicts[0].clone();

    // Act: open it, read its facts, resolve it with a note.
    app.click(&format!("open-anomaly-{conflict_id}")).await;
    let title = wait_for_text(&app, "anomaly-title").await;
    assert!(title.contains(&format!("#{conflict_id}")), "{title}");
    let facts = wait_for_text(&app, "anomaly-facts").await;
    assert!(facts.contains('{'), "the facts as JSON: {facts}");
    assert_eq!(
        app.text("anomaly-order").await.as_deref(),
        Some(storm.order_no.as_str())
    );
    app.screenshot("ops-console-anomaly").await;
    app.click("resolve-button").await;
    let refusal = wait_for_text(&app, "resolve-error").await;
    assert!(
        refusal.contains("Write what you found"),
        "an empty note is refused: {refusal}"
    );
    let note = "Platform re-sent evt with another amount; ours stands. Checked the bill.";
    app.type_into("resolve-note", note).await;
    app.click("resolve-button").await;

    // Assert: who, when and the note are shown, and kept by the backend.
    let by = wait_for_text(&app, "resolved-by").await;
    assert_eq!(by, OPERATOR);
    assert!(wait_for_text(&app, "resolved-at").await.ends_with("UTC"));
    assert_eq!(app.text("resolution-note").await.as_deref(), Some(note));
    app.screenshot("ops-console-resolved").await;
    let (status, kept) = app
        .fetch_in_browser(&format!("/api/ops/anomalies/{conflict_id}"))
        .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["resolved_by"], OPERATOR);
    assert_eq!(kept["resolution_note"], note);

    // It left the open queue, and stays listed under "Resolved".
    app.eventually("the conflict out of the open queue", || async {
        queue_rows(&app).await.is_empty().then_some(())
    })
    .await;
    select(&app, "filter-state", "resolved").await;
    app.eventually("the conflict under Resolved", || async {
        let rows = queue_rows(&app).await;
        (rows.len() == 1 && rows[0].0 == conflict_id && rows[0].2 == "true").then_some(())
    })
    .await;
    let resolved: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM anomalies WHERE anomaly_id = $1 AND resolved_at IS NOT NULL",
    )
    .bind(conflict_id)
    .fetch_one(&app.db)
    .await
    .expect("the anomaly row");
    assert_eq!(resolved, 1, "resolved, not deleted");

    // The books: the merchant was credited the order's amount once.
    app.click("tab-books").await;
    let merchant = app
        .eventually("the merchant's line in the books", || async {
            let cell = app
                .js("const c = document.querySelector('#books-accounts tr[data-kind=\"MERCHANT\"] .balance'); return c ? c.textContent : null;")
                .await;
            cell.as_str().map(str::to_owned)
        })
        .await;
    assert_eq!(merchant, "25.00 EUR");
    app.screenshot("ops-console-books").await;

    // The merchants: the shop, its MERCHANT_API_KEY by prefix only; the queue narrowed to it.
    app.click("tab-merchants").await;
    let key = app
        .eventually("the shop's key in the merchants view", || async {
            let prefix = app
                .js("const k = document.querySelector('.merchant tr[data-prefix]'); return k ? k.dataset.prefix + ' ' + k.dataset.state : null;")
                .await;
            prefix.as_str().map(str::to_owned)
        })
        .await;
    assert!(key.starts_with("env_") && key.ends_with(" active"), "{key}");
    let shown = app.js("return document.body.innerText;").await;
    assert!(
        !shown
            .as_str()
            .unwrap_or_default()
            .contains(crate::helpers::MERCHANT_API_KEY),
        "no key in the console"
    );
    app.screenshot("ops-console-merchants").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_of_an_order_with_duplicates_and_a_refund_reads_in_time_order() {
    // Arrange: a paid order with duplicate deliveries, a conflict, and a refund.
    let app = spawn_app().await;
    let storm = chaos_storm(&app).await;
    let refund = app
        .refund(&storm.order_no, 500, "One cup arrived broken")
        .await;
    app.wait_for_refund(&storm.order_no, &refund.refund_no, RefundStatus::Succeeded)
        .await;
    sign_in_operator(&app).await;

    // Act: find the order by its number.
    app.click("tab-orders").await;
    app.type_into("search-q", &storm.order_no).await;
    app.click("search-button").await;
    app.eventually("the order among the hits", || async {
        let hits = app
            .js("return [...document.querySelectorAll('.search-hit')].map((h) => h.dataset.orderNo);")
            .await;
        hits.as_array()?
            .iter()
            .any(|hit| hit == storm.order_no.as_str())
            .then_some(())
    })
    .await;
    app.client()
        .find(Locator::Css(&format!(
            ".search-hit[data-order-no='{}'] a",
            storm.order_no
        )))
        .await
        .expect("a link to the timeline")
        .click()
        .await
        .expect("the link opens");

    // Assert: the timeline lists the deliveries (with the duplicates), the
    // anomalies and the refund, oldest first.
    let events = app
        .eventually("the timeline", || async {
            let events = timeline_events(&app).await;
            (!events.is_empty()).then_some(events)
        })
        .await;
    let count = |kind: &str| events.iter().filter(|(k, _, _)| k == kind).count();
    assert!(
        count("delivery") >= 4,
        "the sandbox's and the storm's: {events:#?}"
    );
    assert!(count("anomaly") >= 2, "{events:#?}");
    assert!(count("refund") >= 1, "{events:#?}");
    assert!(count("ledger") >= 1, "{events:#?}");
    let duplicates = events
        .iter()
        .filter(|(kind, title, _)| kind == "delivery" && title.to_uppercase().contains("DUPLICATE"))
        .count();
    assert!(
        duplicates >= 1,
        "a duplicate delivery is named: {events:#?}"
    );
    let times: Vec<&String> = events.iter().map(|(_, _, at)| at).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "oldest first");
    assert_eq!(
        app.attr("order-summary", "data-status").await.as_deref(),
        Some("PAID")
    );
    app.js("document.getElementById('timeline-events').scrollIntoView();")
        .await;
    app.screenshot("ops-console-timeline").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_activity_chart_is_drawn_and_refreshes_itself_after_new_deliveries() {
    // Arrange: a paid order, so the hour has deliveries and a pay.
    let app = spawn_app().await;
    let storm = chaos_storm(&app).await;
    sign_in_operator(&app).await;
    app.click("tab-activity").await;

    // Assert: both charts are drawn, with the storm's deliveries counted.
    let before = app
        .eventually("the deliveries chart", || async {
            app.attr("chart-deliveries", "data-total-a")
                .await?
                .parse::<i64>()
                .ok()
        })
        .await;
    assert!(
        before >= 4,
        "the sandbox's and the storm's deliveries: {before}"
    );
    assert!(app.is_present("chart-pays").await);
    let bars = app
        .js("return document.querySelectorAll('#chart-deliveries rect.bar').length;")
        .await;
    assert_eq!(bars, 120, "60 minutes, two series");
    let pays: i64 = app
        .attr("chart-pays", "data-total-a")
        .await
        .and_then(|total| total.parse().ok())
        .unwrap_or_default();
    assert!(pays >= 1, "the order's pay");
    let duplicates: i64 = app
        .attr("chart-deliveries", "data-total-b")
        .await
        .and_then(|total| total.parse().ok())
        .unwrap_or_default();
    assert!(duplicates >= 1, "the storm's duplicate");
    app.screenshot("ops-console-activity").await;

    // Act: three more deliveries arrive (the same success, re-sent).
    for _ in 0..3 {
        app.post_callback(&new_callback_id(), &storm.success).await;
    }

    // Assert: the chart picks them up by itself (no reload), within a refresh or two.
    let refreshes_before = refreshes(&app).await;
    let after = app
        .eventually("the chart to count the new deliveries", || async {
            let total: i64 = app
                .attr("chart-deliveries", "data-total-a")
                .await?
                .parse()
                .ok()?;
            (total >= before + 3).then_some(total)
        })
        .await;
    assert!(after >= before + 3);
    assert!(
        refreshes(&app).await > refreshes_before,
        "refreshed by itself"
    );
    app.screenshot("ops-console-activity-updated").await;
    app.finish().await;
}

/// What [`chaos_storm`] did.
struct Storm {
    /// The order it was about.
    order_no: String,
    /// The success body the sandbox would send for the order's payment.
    success: Value,
}

/// Pays an order on the page (the sandbox delivers its success), then plays a
/// misbehaving platform: the same success under a new callback id, twice under
/// one id (a duplicate), that id again with another amount (a conflict), and a
/// success naming another payment (a second success).
async fn chaos_storm(app: &TestApp) -> Storm {
    let order = app.create_order(2_500).await;
    app.open_pay_page(&order.order_no).await;
    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    let (payment_id, platform_payment_id): (Uuid, String) = sqlx::query_as(
        "SELECT payment_id, platform_payment_id FROM payment_attempts
         WHERE order_no = $1 AND platform_payment_id IS NOT NULL",
    )
    .bind(&order.order_no)
    .fetch_one(&app.db)
    .await
    .expect("the order's payment attempt");
    let body = |amount: i64, platform_id: &str, reference: Option<Uuid>| {
        json!({
            "type": "payment.succeeded",
            "timestamp": "2026-12-02T10:00:00Z",
            "data": {
                "order_no": order.order_no,
                "amount_cents": amount,
                "currency": order.currency.as_str(),
                "payment_id": platform_id,
                "merchant_reference": reference,
            }
        })
    };
    let success = body(2_500, &platform_payment_id, Some(payment_id));
    let reused = new_callback_id();
    let (first, _) = app.post_callback(&reused, &success).await;
    let (again, _) = app.post_callback(&reused, &success).await;
    assert_eq!(
        (first, again),
        (200, 200),
        "a re-sent success is acknowledged"
    );
    let (conflict, answer) = app
        .post_callback(
            &reused,
            &body(9_900, &platform_payment_id, Some(payment_id)),
        )
        .await;
    assert_eq!(conflict, 409, "{answer}");
    let (second, answer) = app
        .post_callback(&new_callback_id(), &body(2_500, "pay_someone_else", None))
        .await;
    assert!(second < 500, "{second}: {answer}");
    app.assert_charged_once(&order).await;
    Storm {
        order_no: order.order_no,
        success,
    }
}

/// A fresh callback id.
fn new_callback_id() -> String {
    format!("evt_{}", Uuid::new_v4().simple())
}

/// Signs in at `/ops/anomalies` with the admin token and waits for the console.
async fn sign_in_operator(app: &TestApp) {
    app.goto("/ops/anomalies").await;
    app.type_into("ops-name", OPERATOR).await;
    app.type_into("ops-token", ADMIN_TOKEN).await;
    app.click("ops-signin-button").await;
    let who = wait_for_text(app, "operator-name").await;
    assert!(who.contains(OPERATOR), "{who}");
}

/// Waits until the element with this id is on the page.
async fn wait_for(app: &TestApp, id: &str) {
    app.eventually(&format!("#{id}"), || async {
        app.is_present(id).await.then_some(())
    })
    .await;
}

/// Waits for the element with this id and returns its (non-empty) text.
async fn wait_for_text(app: &TestApp, id: &str) -> String {
    app.eventually(&format!("text in #{id}"), || async {
        app.text(id).await.filter(|text| !text.is_empty())
    })
    .await
}

/// Picks `value` in the select with this id.
async fn select(app: &TestApp, id: &str, value: &str) {
    app.client()
        .find(Locator::Id(id))
        .await
        .unwrap_or_else(|err| panic!("#{id}: {err}"))
        .select_by_value(value)
        .await
        .unwrap_or_else(|err| panic!("#{id} = {value}: {err}"));
}

/// The queue's rows: anomaly id, kind and whether it is resolved.
async fn queue_rows(app: &TestApp) -> Vec<(i64, String, String)> {
    let rows = app
        .js(
            "return [...document.querySelectorAll('tr.anomaly-row')].map((r) =>
               [Number(r.dataset.anomalyId), r.dataset.kind, r.dataset.resolved]);",
        )
        .await;
    serde_json::from_value(rows).unwrap_or_default()
}

/// The timeline's events: kind, title and time as shown.
async fn timeline_events(app: &TestApp) -> Vec<(String, String, String)> {
    let events = app
        .js(
            "return [...document.querySelectorAll('#timeline-events .event')].map((e) =>
               [e.dataset.kind, e.querySelector('.event-title').textContent,
                e.querySelector('.event-time').textContent]);",
        )
        .await;
    serde_json::from_value(events).unwrap_or_default()
}

/// How often the activity view has read the activity.
async fn refreshes(app: &TestApp) -> u64 {
    app.attr("activity-refreshes", "data-count")
        .await
        .and_then(|count| count.parse().ok())
        .unwrap_or_default()
}
