//! The OpenAPI description at `/api/openapi.json`: generated from the code,
//! OpenAPI 3.1, and every operation it lists is a route that answers.

use crate::helpers::spawn_app;
use reqwest::{Method, StatusCode};
use serde_json::Value;

async fn document(app: &crate::helpers::TestApp) -> Value {
    let response = app.get("/api/openapi.json").await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("JSON")
}

#[tokio::test]
async fn the_description_is_openapi_3_1_with_every_route_error_body_and_security_scheme() {
    let app = spawn_app().await;

    let doc = document(&app).await;

    assert!(
        doc["openapi"]
            .as_str()
            .unwrap_or_default()
            .starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let expected = [
        ("get", "/healthz"),
        ("get", "/readyz"),
        ("get", "/metrics"),
        ("post", "/api/session"),
        ("delete", "/api/session"),
        ("get", "/api/me"),
        ("get", "/api/products"),
        ("post", "/api/orders"),
        ("get", "/api/orders"),
        ("get", "/api/orders/{order_no}"),
        ("post", "/api/orders/{order_no}/request-token"),
        ("post", "/api/orders/{order_no}/pay"),
        ("get", "/api/orders/{order_no}/refunds"),
        ("get", "/api/orders/{order_no}/payment-code.svg"),
        ("post", "/api/merchant/orders"),
        ("get", "/api/merchant/orders"),
        ("get", "/api/merchant/orders/{order_no}"),
        ("get", "/api/merchant/balance"),
        ("get", "/api/merchant/balance/entries"),
        ("post", "/api/merchant/orders/{order_no}/refunds"),
        ("get", "/api/merchant/orders/{order_no}/refunds"),
        ("post", "/api/admin/orders/{order_no}/refunds"),
        ("get", "/api/admin/orders/{order_no}/refunds"),
        ("post", "/api/admin/shoppers"),
        ("put", "/api/admin/products/{sku}"),
        ("get", "/api/admin/accounts/{account_id}"),
        ("get", "/api/admin/callbacks/{callback_id}"),
        ("get", "/api/admin/anomalies"),
        ("get", "/api/admin/reconciliations/{date}"),
        ("post", "/api/admin/merchants"),
        ("get", "/api/admin/merchants"),
        ("post", "/api/admin/merchants/{merchant_id}/keys"),
        ("delete", "/api/admin/merchants/{merchant_id}/keys/{prefix}"),
        ("post", "/api/ops/session"),
        ("delete", "/api/ops/session"),
        ("get", "/api/ops/me"),
        ("get", "/api/ops/anomalies"),
        ("get", "/api/ops/anomalies/{anomaly_id}"),
        ("post", "/api/ops/anomalies/{anomaly_id}/resolve"),
        ("get", "/api/ops/orders/{order_no}/timeline"),
        ("get", "/api/ops/search"),
        ("get", "/api/ops/activity"),
        ("get", "/api/ops/reconciliations/{date}"),
        ("get", "/api/ops/books"),
        ("get", "/api/ops/merchants"),
        ("post", "/api/payments/callback"),
        ("post", "/api/payments/callback/wechatpay"),
        ("post", "/api/payments/callback/alipay"),
        ("get", "/api/platform"),
        ("get", "/api/openapi.json"),
    ];
    let paths = doc["paths"].as_object().expect("paths");
    let listed: usize = paths
        .values()
        .map(|item| item.as_object().map_or(0, |o| o.len()))
        .sum();
    assert_eq!(
        listed,
        expected.len(),
        "operations: {:?}",
        paths.keys().collect::<Vec<_>>()
    );
    for (method, path) in expected {
        let operation = &doc["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is not described");
        assert!(
            operation["responses"]
                .as_object()
                .is_some_and(|r| !r.is_empty()),
            "{method} {path}"
        );
    }
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    for scheme in [
        "session",
        "admin_token",
        "merchant_key",
        "webhook_signature",
    ] {
        assert!(
            doc["components"]["securitySchemes"][scheme].is_object(),
            "{scheme}"
        );
    }
    assert_eq!(
        doc["paths"]["/api/orders"]["post"]["security"][0]["session"],
        serde_json::json!([])
    );
    // Every merchant operation takes the merchant's own key, which the scheme says is per merchant.
    for (path, item) in doc["paths"].as_object().expect("paths") {
        if path.starts_with("/api/merchant/") {
            for (method, operation) in item.as_object().expect("operations") {
                assert_eq!(
                    operation["security"][0]["merchant_key"],
                    serde_json::json!([]),
                    "{method} {path}"
                );
            }
        }
    }
    let merchant_scheme = doc["components"]["securitySchemes"]["merchant_key"]["description"]
        .as_str()
        .expect("described");
    assert!(
        merchant_scheme.contains("one merchant per key"),
        "{merchant_scheme}"
    );
    let order = &doc["components"]["schemas"]["Order"]["properties"];
    for field in ["order_no", "amount_cents", "currency", "status", "pay_url"] {
        assert!(order[field].is_object(), "Order.{field}");
    }
}

#[tokio::test]
async fn every_named_set_is_described_by_its_wire_spellings() {
    let app = spawn_app().await;
    let doc = document(&app).await;

    let described = |name: &str| -> Vec<String> {
        let values = doc["components"]["schemas"][name]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} is described as an enum: {doc:#}"));
        values
            .iter()
            .map(|v| v.as_str().expect("text").to_owned())
            .collect()
    };
    fn spellings<T: Copy>(all: &[T], as_str: fn(T) -> &'static str) -> Vec<String> {
        all.iter().map(|&v| as_str(v).to_owned()).collect()
    }
    assert_eq!(
        described("PaymentMethod"),
        spellings(
            api_types::PaymentMethod::ALL,
            api_types::PaymentMethod::as_str
        )
    );
    assert_eq!(
        described("RefundStatus"),
        spellings(
            api_types::RefundStatus::ALL,
            api_types::RefundStatus::as_str
        )
    );
    assert_eq!(
        described("OrderStatus"),
        spellings(&api_types::OrderStatus::ALL, api_types::OrderStatus::as_str)
    );
}

#[tokio::test]
async fn every_described_operation_is_a_route_that_answers() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let client = reqwest::Client::new();

    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("operations").keys() {
            let url = app.url(
                &path
                    .replace("{order_no}", "ord_00000000000000000000000000000000")
                    .replace("{sku}", "mug")
                    .replace("{account_id}", "00000000-0000-0000-0000-000000000000")
                    .replace("{callback_id}", "evt_1"),
            );
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let response = client
                .request(method.clone(), &url)
                .send()
                .await
                .expect("sent");
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            // An unrouted path or method is our generic NOT_FOUND (or axum's 405).
            let unrouted = status == StatusCode::METHOD_NOT_ALLOWED
                || (status == StatusCode::NOT_FOUND && body["error"]["code"] == "NOT_FOUND");
            assert!(
                !unrouted,
                "{method} {path} is described but not routed ({status} {body})"
            );
        }
    }
}
