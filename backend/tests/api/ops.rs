//! The operator console's API: sign-in with the admin token for a session,
//! nothing without that session (a shopper's is not one), a session that ends
//! with the admin token it was obtained with and at its absolute lifetime, a
//! sign-in of either kind that keeps nothing of the session before it, the
//! anomalies queue and its one-time resolutions, an order's timeline, search,
//! activity, the books' balances.

use crate::helpers::{
    ADMIN_TOKEN, MERCHANT_KEY, PASSWORD, TestApp, browser_client, post_refund, spawn_app,
    spawn_app_with, spawn_app_without_callbacks, success_body,
};
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A cookie-keeping client signed in to the console as `name`.
async fn operator(app: &TestApp, name: &str) -> reqwest::Client {
    let client = browser_client();
    sign_in_operator(app, &client, ADMIN_TOKEN, name).await;
    client
}

/// Signs `client` in to the console as `name` with `admin_token`; the value
/// of the session cookie it was given.
async fn sign_in_operator(
    app: &TestApp,
    client: &reqwest::Client,
    admin_token: &str,
    name: &str,
) -> String {
    let response = client
        .post(app.url("/api/ops/session"))
        .json(&json!({"admin_token": admin_token, "name": name}))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = session_cookie(&response);
    assert_eq!(
        response.json::<Value>().await.expect("JSON")["operator"],
        name
    );
    cookie
}

/// The value of the session cookie an answer sets.
fn session_cookie(response: &reqwest::Response) -> String {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix("checkout_session="))
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_owned()
}

/// A client without a cookie jar, presenting `cookie` as the session cookie:
/// a copied cookie replayed.
async fn with_cookie(app: &TestApp, cookie: &str, path: &str) -> StatusCode {
    reqwest::Client::new()
        .get(app.url(path))
        .header("cookie", format!("checkout_session={cookie}"))
        .send()
        .await
        .expect("answered")
        .status()
}

/// The console's read routes, with one anomaly's.
fn console_paths(anomaly_id: i64) -> Vec<String> {
    vec![
        "/api/ops/me".to_owned(),
        "/api/ops/anomalies".to_owned(),
        format!("/api/ops/anomalies/{anomaly_id}"),
        "/api/ops/activity".to_owned(),
    ]
}

/// Who resolved the anomaly; `None` while it is open.
async fn resolved_by(app: &TestApp, anomaly_id: i64) -> Option<String> {
    sqlx::query_scalar("SELECT resolved_by FROM anomalies WHERE anomaly_id = $1")
        .bind(anomaly_id)
        .fetch_one(&app.db)
        .await
        .expect("the anomaly")
}

/// Checks that `client` is no operator: every console route answers 401
/// `UNAUTHENTICATED`, and a resolution is refused, leaving the anomaly open.
async fn assert_no_operator(client: &reqwest::Client, app: &TestApp, anomaly_id: i64, who: &str) {
    for path in console_paths(anomaly_id) {
        let (status, body) = get(client, app, &path).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{who}: {path}");
        assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{who}: {path}");
    }
    let (status, body) = resolve(client, app, anomaly_id, "not allowed").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{who}: resolve");
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{who}: resolve");
    assert_eq!(resolved_by(app, anomaly_id).await, None, "{who}");
}

async fn get(client: &reqwest::Client, app: &TestApp, path: &str) -> (StatusCode, Value) {
    let response = client.get(app.url(path)).send().await.expect("answered");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn resolve(
    client: &reqwest::Client,
    app: &TestApp,
    anomaly_id: i64,
    note: &str,
) -> (StatusCode, Value) {
    let response = client
        .post(app.url(&format!("/api/ops/anomalies/{anomaly_id}/resolve")))
        .json(&json!({ "note": note }))
        .send()
        .await
        .expect("answered");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A paid order that then got a conflicting callback: one CALLBACK_CONFLICT anomaly.
async fn order_with_an_anomaly(app: &TestApp) -> (String, String, i64) {
    let (_, order, payment) = app.handed_over_order(10_000, 1_250).await;
    let body = success_body(&payment);
    assert_eq!(
        app.post_callback("cb_first", &body).await.status(),
        StatusCode::OK
    );
    for _ in 0..3 {
        assert_eq!(
            app.post_callback("cb_first", &body).await.status(),
            StatusCode::OK
        );
    }
    let other = body.replace("2026-12-02T10:00:00Z", "2026-12-02T10:00:01Z");
    assert_eq!(
        app.post_callback("cb_first", &other).await.status(),
        StatusCode::CONFLICT
    );
    let anomaly_id: i64 =
        sqlx::query_scalar("SELECT anomaly_id FROM anomalies WHERE order_no = $1")
            .bind(&order.order_no)
            .fetch_one(&app.db)
            .await
            .expect("the anomaly");
    (order.order_no, payment.payment_id.to_string(), anomaly_id)
}

#[tokio::test]
async fn the_console_api_answers_nobody_without_an_operator_session() {
    let app = spawn_app_without_callbacks().await;
    let (order_no, _, anomaly_id) = order_with_an_anomaly(&app).await;
    // Anonymous, and a signed-in shopper: neither is an operator.
    let shopper_account = app.create_account(1_000, "EUR").await;
    let shopper = app.client_of(&shopper_account).await;
    let before = app.snapshot().await;
    for client in [browser_client(), shopper.clone()] {
        for path in [
            "/api/ops/me".to_owned(),
            "/api/ops/anomalies".to_owned(),
            format!("/api/ops/anomalies/{anomaly_id}"),
            format!("/api/ops/orders/{order_no}/timeline"),
            format!("/api/ops/search?q={order_no}"),
            "/api/ops/activity".to_owned(),
            "/api/ops/reconciliations/2026-12-01".to_owned(),
            "/api/ops/books".to_owned(),
            "/api/ops/merchants".to_owned(),
        ] {
            let (status, body) = get(&client, &app, &path).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
            assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{path}");
        }
        let (status, _) = resolve(&client, &app, anomaly_id, "not allowed").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    // The shopper's own API still works for them.
    let (status, _) = get(&shopper, &app, "/api/me").await;
    assert_eq!(status, StatusCode::OK);

    // A wrong token: 401, no session; the admin token as a bearer is not a session either.
    let client = browser_client();
    let wrong = client
        .post(app.url("/api/ops/session"))
        .json(&json!({"admin_token": "not-the-admin-token-0000000000000", "name": "mallory"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        wrong.json::<Value>().await.expect("JSON")["error"]["code"],
        "INVALID_CREDENTIALS"
    );
    let (status, _) = get(&client, &app, "/api/ops/me").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let bearer = app
        .http
        .get(app.url("/api/ops/anomalies"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("answered");
    assert_eq!(bearer.status(), StatusCode::UNAUTHORIZED);

    // An operator's session is not a shopper's.
    let ops = operator(&app, "ada").await;
    let (status, _) = get(&ops, &app, "/api/me").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Nothing changed, and the anomaly is still open.
    assert_eq!(app.snapshot().await, before);
    let open: Option<String> =
        sqlx::query_scalar("SELECT resolved_by FROM anomalies WHERE anomaly_id = $1")
            .bind(anomaly_id)
            .fetch_one(&app.db)
            .await
            .expect("the anomaly");
    assert_eq!(open, None);
}

#[tokio::test]
async fn operator_sign_in_refuses_bad_names_and_is_rate_limited_per_address() {
    let app = spawn_app_without_callbacks().await;
    let client = browser_client();
    for name in ["", "   ", &"x".repeat(65), "line\nbreak"] {
        let response = client
            .post(app.url("/api/ops/session"))
            .json(&json!({"admin_token": ADMIN_TOKEN, "name": name}))
            .send()
            .await
            .expect("answered");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{name:?}");
    }
    let (status, _) = get(&client, &app, "/api/ops/me").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Wrong tokens from one address end in 429, even for the right one then.
    let mut limited = false;
    for _ in 0..30 {
        let response = client
            .post(app.url("/api/ops/session"))
            .json(&json!({"admin_token": "wrong-token-wrong-token-wrong-token", "name": "m"}))
            .send()
            .await
            .expect("answered");
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = true;
            break;
        }
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    assert!(limited, "wrong admin tokens were never rate limited");
    let right = client
        .post(app.url("/api/ops/session"))
        .json(&json!({"admin_token": ADMIN_TOKEN, "name": "ada"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(right.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn an_anomaly_is_resolved_once_with_who_when_and_a_note_and_never_deleted() {
    let app = spawn_app_without_callbacks().await;
    let (order_no, _, anomaly_id) = order_with_an_anomaly(&app).await;
    let ops = operator(&app, "Ada Lovelace").await;

    let (status, queue) = get(&ops, &app, "/api/ops/anomalies").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(queue.as_array().expect("a list").len(), 1);
    assert_eq!(queue[0]["kind"], "CALLBACK_CONFLICT");
    assert_eq!(queue[0]["order_no"], order_no.as_str());
    assert_eq!(queue[0]["resolved_at"], Value::Null);
    let (_, by_kind) = get(&ops, &app, "/api/ops/anomalies?kind=LATE_SUCCESS").await;
    assert_eq!(by_kind, json!([]));
    for bad in [
        "/api/ops/anomalies?kind=NOT_A_KIND",
        "/api/ops/anomalies?state=closed",
        "/api/ops/anomalies?limit=0",
        "/api/ops/anomalies?limit=501",
    ] {
        let (status, body) = get(&ops, &app, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST", "{bad}");
    }
    let (status, _) = get(&ops, &app, "/api/ops/anomalies/999999").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Bad notes and unknown anomalies change nothing.
    for note in ["", "   ", &"n".repeat(2001)] {
        let (status, _) = resolve(&ops, &app, anomaly_id, note).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }
    let (status, _) = resolve(&ops, &app, 999_999, "no such").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A cross-site form post is refused before anything is read.
    let forged = ops
        .post(app.url(&format!("/api/ops/anomalies/{anomaly_id}/resolve")))
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"note": "forged"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let (_, still_open) = get(&ops, &app, &format!("/api/ops/anomalies/{anomaly_id}")).await;
    assert_eq!(still_open["resolved_at"], Value::Null);

    let (status, resolved) = resolve(
        &ops,
        &app,
        anomaly_id,
        "  Platform resent with a new timestamp; nothing charged twice.  ",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resolved["resolved_by"], "Ada Lovelace");
    assert_eq!(
        resolved["resolution_note"],
        "Platform resent with a new timestamp; nothing charged twice."
    );
    assert!(resolved["resolved_at"].is_string());

    // Once only: a second resolution is refused and the first stays as it was.
    let second = operator(&app, "Bob").await;
    let (status, body) = resolve(&second, &app, anomaly_id, "overwrite").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "ANOMALY_ALREADY_RESOLVED");
    let (_, again) = get(&ops, &app, &format!("/api/ops/anomalies/{anomaly_id}")).await;
    assert_eq!(again, resolved);

    // The queue moves it from open to resolved.
    let (_, open) = get(&ops, &app, "/api/ops/anomalies").await;
    assert_eq!(open, json!([]));
    let (_, done) = get(&ops, &app, "/api/ops/anomalies?state=resolved").await;
    assert_eq!(done[0]["anomaly_id"], anomaly_id);
    let (_, all) = get(&ops, &app, "/api/ops/anomalies?state=all").await;
    assert_eq!(all.as_array().expect("a list").len(), 1);

    // The database itself refuses to rewrite or delete it, whoever asks.
    let rewrite =
        sqlx::query("UPDATE anomalies SET resolution_note = 'changed' WHERE anomaly_id = $1")
            .bind(anomaly_id)
            .execute(&app.db)
            .await;
    assert!(rewrite.is_err(), "a resolution was rewritten");
    let delete = sqlx::query("DELETE FROM anomalies WHERE anomaly_id = $1")
        .bind(anomaly_id)
        .execute(&app.db)
        .await;
    assert!(delete.is_err(), "an anomaly was deleted");
    assert_eq!(app.count("anomalies").await, 1);
}

#[tokio::test]
async fn an_orders_timeline_shows_everything_in_time_order_and_search_finds_it() {
    let app = spawn_app_without_callbacks().await;
    let (order_no, payment_id, _) = order_with_an_anomaly(&app).await;
    let refund = post_refund(
        &app,
        &order_no,
        Some("refund-1"),
        &json!({"amount_cents": 250, "reason": "one cup broken"}),
    )
    .await;
    assert_eq!(refund.status(), StatusCode::ACCEPTED);
    let ops = operator(&app, "ada").await;

    let (status, timeline) = get(&ops, &app, &format!("/api/ops/orders/{order_no}/timeline")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(timeline["order"]["status"], "PAID");
    assert_eq!(timeline["order"]["amount_cents"], 1_250);
    let events = timeline["events"].as_array().expect("events");
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["kind"].as_str().expect("a kind"))
        .collect();
    for kind in [
        "order_placed",
        "token_issued",
        "attempt_created",
        "attempt_submitted",
        "delivery",
        "ledger",
        "refund",
        "anomaly",
        "order_final",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    // The money in the books, as debit/credit pairs: the hold, the charge posting it.
    let transfers: Vec<&str> = events
        .iter()
        .filter(|e| e["details"]["transfer_id"].is_string())
        .map(|e| e["title"].as_str().expect("a title"))
        .collect();
    assert_eq!(transfers.len(), 2, "{transfers:?}");
    assert!(
        transfers[0].starts_with("transfer HOLD: debit WALLET ")
            && transfers[1].starts_with("transfer CHARGE: debit WALLET ")
            && transfers
                .iter()
                .all(|t| t.contains(", credit MERCHANT The shop: ")),
        "{transfers:?}"
    );
    // Every delivery with our answer: one applied, three duplicates, one conflict.
    let deliveries: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "delivery")
        .map(|e| e["details"]["outcome"].as_str().expect("an outcome"))
        .collect();
    assert_eq!(
        deliveries,
        [
            "CHARGED",
            "DUPLICATE",
            "DUPLICATE",
            "DUPLICATE",
            "CALLBACK_CONFLICT"
        ]
    );
    // In time order, the order placed first.
    let times: Vec<&str> = events
        .iter()
        .map(|e| e["at"].as_str().expect("a time"))
        .collect();
    let parsed: Vec<time::OffsetDateTime> = times
        .iter()
        .map(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
                .expect("RFC 3339")
        })
        .collect();
    assert!(parsed.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(kinds[0], "order_placed");

    // Search: by number, callback id, payment id and email; nothing else.
    let email: String = sqlx::query_scalar(
        "SELECT s.email FROM orders o JOIN shoppers s USING (shopper_id) WHERE o.order_no = $1",
    )
    .bind(&order_no)
    .fetch_one(&app.db)
    .await
    .expect("the email");
    for (q, matched_by) in [
        (order_no.clone(), "order_no"),
        ("cb_first".to_owned(), "callback_id"),
        (payment_id.clone(), "payment_id"),
        (email.to_uppercase(), "shopper_email"),
    ] {
        let (status, hits) = get(&ops, &app, &format!("/api/ops/search?q={q}")).await;
        assert_eq!(status, StatusCode::OK, "{q}");
        assert_eq!(hits.as_array().expect("hits").len(), 1, "{q}: {hits}");
        assert_eq!(hits[0]["order"]["order_no"], order_no.as_str(), "{q}");
        assert_eq!(hits[0]["matched_by"], matched_by, "{q}");
    }
    let (_, none) = get(&ops, &app, "/api/ops/search?q=nothing-like-it").await;
    assert_eq!(none, json!([]));
    let (status, _) = get(&ops, &app, "/api/ops/search?q=").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = get(&ops, &app, "/api/ops/orders/ORD-NOPE/timeline").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "ORDER_NOT_FOUND");
}

#[tokio::test]
async fn activity_counts_the_last_hour_per_minute() {
    let app = spawn_app_without_callbacks().await;
    let ops = operator(&app, "ada").await;
    let (status, before) = get(&ops, &app, "/api/ops/activity").await;
    assert_eq!(status, StatusCode::OK);
    let minutes = before["minutes"].as_array().expect("minutes");
    assert_eq!(minutes.len(), 60);
    let total = |activity: &Value, field: &str| -> i64 {
        activity["minutes"]
            .as_array()
            .expect("minutes")
            .iter()
            .map(|m| m[field].as_i64().expect("a count"))
            .sum()
    };
    assert_eq!(total(&before, "deliveries"), 0);

    order_with_an_anomaly(&app).await;
    let (_, after) = get(&ops, &app, "/api/ops/activity").await;
    assert_eq!(total(&after, "deliveries"), 5);
    assert_eq!(total(&after, "duplicates"), 3);
    assert_eq!(total(&after, "pays"), 1);
}

#[tokio::test]
async fn the_books_show_each_accounts_balance_and_the_wallets_summed() {
    let app = spawn_app().await;
    let ops = operator(&app, "ada").await;
    let (status, empty) = get(&ops, &app, "/api/ops/books").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(empty["accounts"], serde_json::json!([]));

    let first = app.create_account(10_000, "EUR").await;
    app.create_shopper(5_000, "EUR").await;
    app.create_shopper(700, "GBP").await;
    let order = app.create_order(&first, 2_500).await;
    app.pay_by_until_final(&order.order_no, "wallet").await;

    let (_, books) = get(&ops, &app, "/api/ops/books").await;
    let lines: Vec<String> = books["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .map(|line| {
            format!(
                "{} {} {} x{}: -{} +{} held {} = {}",
                line["currency"].as_str().expect("currency"),
                line["kind"].as_str().expect("kind"),
                line["owner"].as_str().expect("owner"),
                line["accounts"],
                line["debits_posted_cents"],
                line["credits_posted_cents"],
                line["debits_pending_cents"],
                line["balance_cents"],
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            "EUR MERCHANT The shop x1: -0 +2500 held 0 = 2500",
            "EUR FUNDING checkout x1: -15000 +0 held 0 = -15000",
            "EUR WALLET shoppers x2: -2500 +15000 held 0 = 12500",
            "GBP FUNDING checkout x1: -700 +0 held 0 = -700",
            "GBP WALLET shoppers x1: -0 +700 held 0 = 700",
        ]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_console_lists_merchants_by_key_prefix_and_filters_anomalies_and_orders_by_merchant() {
    let app = spawn_app_without_callbacks().await;
    let (order_no, _, anomaly_id) = order_with_an_anomaly(&app).await;
    let partner: Value = reqwest::Client::new()
        .post(app.url("/api/admin/merchants"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Partner", "return_origins": ["https://partner.example"]}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let ops = operator(&app, "ada").await;

    let (status, merchants) = get(&ops, &app, "/api/ops/merchants").await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = merchants
        .as_array()
        .expect("list")
        .iter()
        .map(|m| m["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["The shop", "Partner"]);
    assert_eq!(merchants[1]["keys"][0]["prefix"], partner["key_prefix"]);
    let text = merchants.to_string();
    assert!(
        !text.contains(partner["api_key"].as_str().expect("key")) && !text.contains(MERCHANT_KEY),
        "no key in the console: {text}"
    );

    // The order with the anomaly is the shop's: the partner's filter shows nothing.
    let shop = "00000000-0000-0000-0000-000000000001";
    let partner_id = partner["merchant_id"].as_str().expect("id");
    let (_, of_shop) = get(
        &ops,
        &app,
        &format!("/api/ops/anomalies?state=all&merchant_id={shop}"),
    )
    .await;
    assert!(
        of_shop
            .as_array()
            .expect("list")
            .iter()
            .any(|a| a["anomaly_id"] == anomaly_id),
        "{of_shop}"
    );
    let (_, of_partner) = get(
        &ops,
        &app,
        &format!("/api/ops/anomalies?state=all&merchant_id={partner_id}"),
    )
    .await;
    assert_eq!(of_partner, json!([]));
    let (status, _) = get(&ops, &app, "/api/ops/anomalies?merchant_id=not-a-uuid").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // The search too: a merchant alone lists its orders; with a text, only its matches.
    let found = |hits: &Value| -> Vec<String> {
        hits.as_array()
            .expect("hits")
            .iter()
            .map(|h| {
                format!(
                    "{} {}",
                    h["order"]["order_no"].as_str().expect("no"),
                    h["matched_by"].as_str().expect("by")
                )
            })
            .collect()
    };
    let (_, of_shop) = get(&ops, &app, &format!("/api/ops/search?merchant_id={shop}")).await;
    assert_eq!(found(&of_shop), [format!("{order_no} merchant")]);
    let (_, of_partner) = get(
        &ops,
        &app,
        &format!("/api/ops/search?merchant_id={partner_id}"),
    )
    .await;
    assert_eq!(of_partner, json!([]));
    let (_, narrowed) = get(
        &ops,
        &app,
        &format!("/api/ops/search?q={order_no}&merchant_id={partner_id}"),
    )
    .await;
    assert_eq!(narrowed, json!([]));
    let (_, by_number) = get(
        &ops,
        &app,
        &format!("/api/ops/search?q={order_no}&merchant_id={shop}"),
    )
    .await;
    assert_eq!(found(&by_number), [format!("{order_no} order_no")]);
    for bad in [
        "/api/ops/search",
        "/api/ops/search?q=",
        "/api/ops/search?merchant_id=nope",
    ] {
        let (status, _) = get(&ops, &app, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

/// Another admin token, as after rotating a leaked one.
const ROTATED_ADMIN_TOKEN: &str = "rotated-admin-token-of-32-characters-or-more";

#[tokio::test]
async fn rotating_the_admin_token_ends_every_operator_session_made_with_the_old_one() {
    let app = spawn_app_without_callbacks().await;
    let (_, _, anomaly_id) = order_with_an_anomaly(&app).await;
    let ops = operator(&app, "ada").await;
    // The session keeps a fingerprint of the token, never the token.
    let rows: Vec<Vec<u8>> = sqlx::query_scalar("SELECT data FROM tower_sessions.session")
        .fetch_all(&app.db)
        .await
        .expect("session rows");
    assert!(!rows.is_empty());
    for data in rows {
        assert!(
            !data
                .windows(ADMIN_TOKEN.len())
                .any(|w| w == ADMIN_TOKEN.as_bytes()),
            "the admin token is in a session row"
        );
    }
    // A restart with the same token signs nobody out.
    let mut app = app.restart().await;
    assert_eq!(get(&ops, &app, "/api/ops/me").await.0, StatusCode::OK);

    // Act: the backend restarts with another token.
    app.config.admin_token = Some(SecretString::from(ROTATED_ADMIN_TOKEN));
    let mut app = app.restart().await;
    let before = app.snapshot().await;

    // Assert: the session made with the old token is no operator's, and the old token signs nobody in.
    assert_no_operator(&ops, &app, anomaly_id, "a session of the old token").await;
    let old_token = browser_client()
        .post(app.url("/api/ops/session"))
        .json(&json!({"admin_token": ADMIN_TOKEN, "name": "mallory"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(old_token.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.snapshot().await, before);
    // The new token works, until it is taken away: no ADMIN_TOKEN, no console,
    // and no operator session lives on.
    let rotated = browser_client();
    sign_in_operator(&app, &rotated, ROTATED_ADMIN_TOKEN, "ada").await;
    assert_eq!(get(&rotated, &app, "/api/ops/me").await.0, StatusCode::OK);
    app.config.admin_token = None;
    let app = app.restart().await;
    assert_no_operator(
        &rotated,
        &app,
        anomaly_id,
        "a session with no token configured",
    )
    .await;
    assert_no_operator(&ops, &app, anomaly_id, "a session of the old token").await;
    let none = browser_client()
        .post(app.url("/api/ops/session"))
        .json(&json!({"admin_token": ROTATED_ADMIN_TOKEN, "name": "ada"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(none.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn an_operator_session_ends_at_its_absolute_lifetime_however_busy() {
    // 3 s of lifetime and 16 s of idle time (saved again every 2 s): only the
    // lifetime can end a session used every half second.
    let app = spawn_app_with(|c| {
        c.ops_session_max_secs = 3;
        c.session_idle_secs = 16;
        c.sandbox_drop_callbacks = true;
    })
    .await;
    let (_, _, anomaly_id) = order_with_an_anomaly(&app).await;
    let ops = operator(&app, "ada").await;
    let signed_in = Instant::now();
    // The lifetime counts whole seconds from sign-in: up to 1 s less than 3 s.
    while signed_in.elapsed() < Duration::from_millis(1_800) {
        let (status, _) = get(&ops, &app, "/api/ops/anomalies").await;
        assert_eq!(
            status,
            StatusCode::OK,
            "in use {:?} after sign-in",
            signed_in.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    tokio::time::sleep(Duration::from_millis(3_200).saturating_sub(signed_in.elapsed())).await;
    let before = app.snapshot().await;
    assert_no_operator(&ops, &app, anomaly_id, "a session past its lifetime").await;
    assert_eq!(app.snapshot().await, before);
    // Signing in again starts a new lifetime.
    sign_in_operator(&app, &ops, ADMIN_TOKEN, "ada").await;
    assert_eq!(get(&ops, &app, "/api/ops/me").await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_sign_in_of_either_kind_keeps_nothing_of_the_session_it_was_made_in() {
    let app = spawn_app_without_callbacks().await;
    let (_, _, anomaly_id) = order_with_an_anomaly(&app).await;
    app.put_product("mug", "Stoneware mug", 1_250, "EUR").await;
    let shopper = app.create_shopper(10_000, "EUR").await;
    let signed_in_as_shopper = json!({"email": shopper.email, "password": PASSWORD});

    // An operator's browser signs in as a shopper.
    let browser = browser_client();
    let operator_cookie = sign_in_operator(&app, &browser, ADMIN_TOKEN, "ada").await;
    assert_eq!(get(&browser, &app, "/api/ops/me").await.0, StatusCode::OK);
    let response = app.post_session(&browser, &signed_in_as_shopper).await;
    assert_eq!(response.status(), StatusCode::OK);
    let shopper_cookie = session_cookie(&response);
    let before = app.snapshot().await;

    // The shopper's session holds no operator rights, nor does the operator's old cookie.
    assert_no_operator(
        &browser,
        &app,
        anomaly_id,
        "a shopper signed in over an operator",
    )
    .await;
    assert_eq!(
        with_cookie(&app, &operator_cookie, "/api/ops/me").await,
        StatusCode::UNAUTHORIZED,
        "the operator's cookie from before the sign-in"
    );
    let (status, me) = get(&browser, &app, "/api/me").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["shopper_id"], json!(shopper.shopper_id));
    assert_eq!(app.snapshot().await, before);

    // And the other way round: the shopper's browser signs in to the console.
    sign_in_operator(&app, &browser, ADMIN_TOKEN, "ada").await;
    for path in ["/api/me", "/api/orders"] {
        let (status, body) = get(&browser, &app, path).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "an operator over a shopper: {path}"
        );
        assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{path}");
        assert_eq!(
            with_cookie(&app, &shopper_cookie, path).await,
            StatusCode::UNAUTHORIZED,
            "the shopper's cookie from before the sign-in: {path}"
        );
    }
    let order = browser
        .post(app.url("/api/orders"))
        .header("idempotency-key", uuid::Uuid::new_v4().to_string())
        .json(&json!({"sku": "mug", "quantity": 1}))
        .send()
        .await
        .expect("answered");
    assert_eq!(order.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.snapshot().await, before);
}
