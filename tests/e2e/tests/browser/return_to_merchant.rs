//! The way back to the merchant's shop: a partner shop (a merchant with its
//! own key, its return origin a small test server here) places an order with
//! a `return_url`; the shopper pays and lands on that URL with `order_no` and
//! `PAID`. A `return_url` of another origin is refused when the order is
//! placed, and the page links to no other address.

use crate::helpers::{ADMIN_TOKEN, TestApp, spawn_app};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use uuid::Uuid;

/// A partner shop's web server: answers every request with a small page and
/// keeps each request's target (path and query).
struct PartnerSite {
    origin: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl PartnerSite {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let origin = format!("http://{}", listener.local_addr().expect("address"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let kept = kept.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0_u8; 8192];
                    let read = stream.read(&mut buffer).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buffer[..read]).into_owned();
                    if let Some(target) = head.split_whitespace().nth(1) {
                        kept.lock().expect("lock").push(target.to_owned());
                    }
                    let body = "<!doctype html><title>Partner Shop</title><h1 id=\"partner\">Thanks from Partner Shop</h1>";
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        Self { origin, seen }
    }
}

/// Makes the partner shop a merchant whose return origin is `origin`: its key.
async fn partner_merchant(app: &TestApp, origin: &str) -> String {
    let made: Value = app
        .http
        .post(format!("{}/api/admin/merchants", app.address))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Partner Shop", "return_origins": [origin]}))
        .send()
        .await
        .expect("answered")
        .json()
        .await
        .expect("json");
    made["api_key"].as_str().expect("a key").to_owned()
}

/// Places an order for the demo shopper through the partner's key.
async fn partner_order(app: &TestApp, key: &str, return_url: &str) -> (u16, Value) {
    let answer = app
        .http
        .post(format!("{}/api/merchant/orders", app.address))
        .bearer_auth(key)
        .header("idempotency-key", Uuid::new_v4().to_string())
        .json(&json!({
            "shopper_id": app.shopper_id,
            "amount_cents": 2_300,
            "currency": "EUR",
            "description": "Partner Shop: a teapot",
            "return_url": return_url,
        }))
        .send()
        .await
        .expect("answered");
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_paying_the_shopper_lands_on_the_merchants_return_url_with_the_result() {
    let app = spawn_app().await;
    let partner = PartnerSite::start().await;
    let key = partner_merchant(&app, &partner.origin).await;

    // A return URL of any other origin is refused when the order is placed.
    for forged in [
        "https://evil.example/steal".to_owned(),
        format!("{}.evil.example/", partner.origin),
        "javascript:alert(document.cookie)".to_owned(),
    ] {
        let (status, body) = partner_order(&app, &key, &forged).await;
        assert_eq!(status, 422, "{forged}: {body}");
        assert_eq!(body["error"]["code"], "RETURN_URL_NOT_ALLOWED", "{forged}");
    }

    let (status, order) =
        partner_order(&app, &key, &format!("{}/thanks?cart=7", partner.origin)).await;
    assert_eq!(status, 201, "{order}");
    let order_no = order["order_no"].as_str().expect("order_no").to_owned();
    app.open_pay_page(&order_no).await;
    app.wait_for_pay_button().await;

    // Every link the page offers stays on the checkout, but the merchant's own.
    let links = app
        .js("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);")
        .await;
    for link in links.as_array().expect("links") {
        let link = link.as_str().expect("a URL");
        assert!(
            link.starts_with(&app.address) || link.starts_with(&partner.origin),
            "the page links to {link}"
        );
    }

    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    let label = app.text("return-link").await.unwrap_or_default();
    assert_eq!(label, "Return to Partner Shop");
    app.screenshot("pay-return-to-merchant").await;

    // The page goes back by itself: the partner's page, with the order and its status.
    let landed = app
        .eventually("the partner's page", || async {
            let url = app.client().current_url().await.ok()?;
            url.as_str().starts_with(&partner.origin).then_some(url)
        })
        .await;
    assert_eq!(landed.path(), "/thanks");
    assert_eq!(
        landed.query(),
        Some(format!("cart=7&order_no={order_no}&status=PAID").as_str())
    );
    assert!(
        partner
            .seen
            .lock()
            .expect("lock")
            .contains(&format!("/thanks?cart=7&order_no={order_no}&status=PAID"))
    );
    let order: api_types::api::Order = serde_json::from_value(order).expect("an Order");
    app.assert_charged_once(&order).await;
    app.finish().await;
}
