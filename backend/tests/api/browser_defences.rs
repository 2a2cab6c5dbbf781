//! CSRF and the security headers: a request another site makes a shopper's
//! browser send is refused before it changes anything, and every answer tells
//! the browser to run only our own code.

use crate::helpers::{error_code, spawn_app, spawn_app_with};
use reqwest::StatusCode;

#[tokio::test]
async fn a_cross_site_form_post_with_a_valid_cookie_is_403_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 1_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;
    let pay = app.url(&format!("/api/orders/{}/pay", order.order_no));

    let attempts = [
        // What an auto-submitting form on evil.example sends.
        app.http
            .post(&pay)
            .header("origin", "https://evil.example")
            .header("sec-fetch-site", "cross-site")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("request_token={token}")),
        // A fetch() from a sibling subdomain.
        app.http
            .post(&pay)
            .header("sec-fetch-site", "same-site")
            .json(&serde_json::json!({"request_token": token})),
        // An older browser that sends Origin but no Fetch Metadata.
        app.http
            .post(&pay)
            .header("origin", "https://evil.example")
            .json(&serde_json::json!({"request_token": token})),
        app.http
            .post(app.url(&format!("/api/orders/{}/request-token", order.order_no)))
            .header("origin", "null"),
        app.http
            .delete(app.url("/api/session"))
            .header("sec-fetch-site", "cross-site"),
    ];
    for attempt in attempts {
        let response = attempt.send().await.expect("sent");
        let what = format!("{}", response.url());
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{what}");
        assert_eq!(error_code(response).await, "CSRF_REJECTED", "{what}");
    }

    assert_eq!(app.snapshot().await, before);
    assert!(app.token_ttl(token).await > 0);
    let me = app.get("/api/me").await;
    assert_eq!(me.status(), StatusCode::OK, "still signed in");
}

#[tokio::test]
async fn a_text_plain_post_with_a_valid_cookie_is_415_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 1_000).await;
    let token = app.request_token(&order.order_no).await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;
    let before = app.snapshot().await;

    let pay = app
        .http
        .post(app.url(&format!("/api/orders/{}/pay", order.order_no)))
        .header("content-type", "text/plain")
        .body(format!("{{\"request_token\":\"{token}\"}}"))
        .send()
        .await
        .expect("sent");
    let place = app
        .http
        .post(app.url("/api/orders"))
        .header("idempotency-key", "k-text")
        .header("content-type", "text/plain")
        .body("{\"sku\":\"mug\",\"quantity\":1}")
        .send()
        .await
        .expect("sent");

    for response in [pay, place] {
        assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(error_code(response).await, "UNSUPPORTED_MEDIA_TYPE");
    }
    assert_eq!(app.snapshot().await, before);
    assert!(app.token_ttl(token).await > 0);
}

#[tokio::test]
async fn the_same_origin_passes() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 1_000).await;

    let token = app
        .http
        .post(app.url(&format!("/api/orders/{}/request-token", order.order_no)))
        .header("origin", "http://127.0.0.1:3000")
        .send()
        .await
        .expect("sent");
    let again = app
        .http
        .post(app.url(&format!("/api/orders/{}/request-token", order.order_no)))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .expect("sent");

    assert_eq!(token.status(), StatusCode::CREATED);
    assert_eq!(again.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn every_answer_carries_the_security_headers_and_the_page_csp_allows_its_loader_by_hash() {
    let dir = std::env::temp_dir().join(format!("checkout-page-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let loader = "import init from '/app.js';await init();";
    std::fs::write(
        dir.join("index.html"),
        format!("<html><head><script type=\"module\">{loader}</script></head></html>"),
    )
    .expect("index");
    let app = spawn_app_with(|c| c.static_dir = Some(dir.clone())).await;

    let page = app.get("/pay/ord_x").await;
    let api = app.get("/api/products").await;
    let error = app.get("/api/nope").await;

    for (what, response) in [("page", &page), ("api", &api), ("api error", &error)] {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap_or_default().to_owned())
                .unwrap_or_else(|| panic!("{what}: no {name}"))
        };
        assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{what}");
        let csp = header("content-security-policy");
        assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{what}: {csp}");
        assert!(
            response
                .headers()
                .get("strict-transport-security")
                .is_none()
        );
    }
    for response in [&api, &error] {
        assert_eq!(response.headers()["cache-control"], "no-store");
    }
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(
        csp.contains("script-src 'self' 'wasm-unsafe-eval' 'sha256-"),
        "{csp}"
    );
    use base64::Engine;
    use sha2::Digest;
    let hash =
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(loader.as_bytes()));
    assert!(csp.contains(&format!("'sha256-{hash}'")), "{csp}");
    let _ = std::fs::remove_dir_all(&dir);
}
