//! `GET /metrics`: the admin token on the main address; without a token only
//! on `METRICS_BIND_ADDR`, which serves nothing else. (The counts themselves
//! are checked against the database after a storm, on a backend process of
//! its own: `tests/faults/tests/metrics.rs`.)

use crate::helpers::{ADMIN_TOKEN, MERCHANT_KEY, spawn_app, spawn_app_with};
use reqwest::StatusCode;
use serde_json::Value;
use std::net::SocketAddr;

#[tokio::test]
async fn metrics_need_the_admin_token_on_the_main_address() {
    let app = spawn_app().await;

    let anonymous = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("answered");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let body: Value = anonymous.json().await.expect("a JSON body");
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    assert!(!body.to_string().contains("checkout_"), "{body}");

    let merchant_key = app
        .http
        .get(app.url("/metrics"))
        .bearer_auth(MERCHANT_KEY)
        .send()
        .await
        .expect("answered");
    assert_eq!(merchant_key.status(), StatusCode::UNAUTHORIZED);

    let admin = app
        .http
        .get(app.url("/metrics"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("answered");
    assert_eq!(admin.status(), StatusCode::OK);
    assert!(
        admin.headers()["content-type"]
            .to_str()
            .expect("an ASCII header")
            .starts_with("text/plain; version=0.0.4"),
    );
    let text = admin.text().await.expect("a text body");
    for series in [
        "# TYPE checkout_orders_pending gauge",
        "# TYPE checkout_anomalies_total counter",
        "checkout_payment_attempts_open{status=\"UNKNOWN\"}",
        "checkout_metrics_database_read 1",
    ] {
        assert!(text.contains(series), "{series} missing from:\n{text}");
    }
    // The admin token never shows in what it reads.
    assert!(!text.contains(ADMIN_TOKEN));
}

#[tokio::test]
async fn metrics_bind_addr_serves_metrics_without_a_token_and_nothing_else() {
    let port = testkit::free_port().expect("a free port");
    let app = spawn_app_with(|config| {
        config.metrics_bind_addr = Some(SocketAddr::from(([127, 0, 0, 1], port)));
    })
    .await;
    let side = format!("http://127.0.0.1:{port}");

    let metrics = app
        .http
        .get(format!("{side}/metrics"))
        .send()
        .await
        .expect("answered");
    assert_eq!(metrics.status(), StatusCode::OK);
    assert!(
        metrics
            .text()
            .await
            .expect("a text body")
            .contains("checkout_orders_pending")
    );
    for path in ["/api/products", "/healthz", "/api/admin/anomalies"] {
        let other = app
            .http
            .get(format!("{side}{path}"))
            .send()
            .await
            .expect("answered");
        assert_eq!(other.status(), StatusCode::NOT_FOUND, "{path}");
    }
    // The main address still wants the token.
    let main = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("answered");
    assert_eq!(main.status(), StatusCode::UNAUTHORIZED);
}
