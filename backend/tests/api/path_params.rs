//! Every route with a path parameter, read from the OpenAPI description so a
//! new route is covered the day it is added, with arbitrary text in each
//! parameter: U+0000 and other control characters, bytes that are not UTF-8
//! once percent-decoded, very long text, letters that change under case
//! folding. Each is validated by its type before any query: never a 5xx, and
//! nothing in the database changes.

use crate::helpers::{ADMIN_TOKEN, MERCHANT_KEY, TestApp, browser_client, spawn_app_with};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};

/// Cases of the property: each is one request.
const CASES: u32 = 400;

/// Parameters written as they travel, percent-encoded by hand: what no
/// `String` can hold (`%FF` is not UTF-8), and the shapes the attack run sent.
const RAW: &[&str] = &[
    "%00",
    "ord_%00",
    "ord_0123456789abcdef0123456789ab%00",
    "%00%00%00",
    "%0A",
    "%0D%0Aset-cookie:%20x",
    "%FF",
    "%C0%80",
    "%C4%B0",
    "%E2%80%AE",
    "..",
    "%2E%2E%2Fadmin",
    "%2F",
    "-1",
    "99999999999999999999999999",
    "2026-02-30",
];

/// One documented operation whose path has a parameter.
#[derive(Debug, Clone)]
struct Route {
    method: Method,
    path: String,
}

/// The operations of the OpenAPI description with `{...}` in their path.
async fn routes_with_path_parameters(app: &TestApp) -> Vec<Route> {
    let doc: Value = app
        .get("/api/openapi.json")
        .await
        .json()
        .await
        .expect("JSON");
    let mut routes = Vec::new();
    for (path, operations) in doc["paths"].as_object().expect("paths") {
        if !path.contains('{') {
            continue;
        }
        for method in operations.as_object().expect("operations").keys() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            routes.push(Route {
                method,
                path: path.clone(),
            });
        }
    }
    routes
}

/// The route's URL with every parameter replaced: `text` is percent-encoded
/// as a path segment, `raw` is put in as it is.
fn url_of(app: &TestApp, route: &Route, value: &Parameter) -> String {
    let mut url = Url::parse(&app.address).expect("base url");
    let mut raw_segments = Vec::new();
    {
        let mut segments = url.path_segments_mut().expect("a base");
        for segment in route.path.trim_start_matches('/').split('/') {
            if segment.starts_with('{') {
                match value {
                    Parameter::Text(text) => {
                        segments.push(text);
                    }
                    Parameter::Raw(raw) => {
                        // A marker replaced below: Url would encode the '%'.
                        segments.push("RAWPARAM");
                        raw_segments.push(*raw);
                    }
                }
            } else {
                segments.push(segment);
            }
        }
    }
    let mut text = url.to_string();
    for raw in raw_segments {
        text = text.replacen("RAWPARAM", raw, 1);
    }
    text
}

#[derive(Debug, Clone)]
enum Parameter {
    /// Any text, percent-encoded on the way.
    Text(String),
    /// Already percent-encoded.
    Raw(&'static str),
}

fn parameter() -> impl Strategy<Value = Parameter> {
    prop_oneof![
        2 => select(RAW).prop_map(Parameter::Raw),
        2 => any::<String>().prop_map(Parameter::Text),
        1 => "[\\x00-\\x1f]{1,4}".prop_map(Parameter::Text),
        1 => ".{0,3}\\x00.{0,3}".prop_map(Parameter::Text),
        1 => (1usize..20_000).prop_map(|n| Parameter::Text("a".repeat(n))),
        1 => "ord_[0-9a-f]{28}[\\x00İK]".prop_map(Parameter::Text),
    ]
}

/// A body the operation accepts, so that only its path can be wrong. The
/// product's price is not positive, so no SKU, however valid, adds one.
fn body_for(route: &Route) -> Value {
    if route.path.ends_with("/refunds") {
        json!({"amount_cents": 1, "reason": "path parameter test"})
    } else if route.path.starts_with("/api/admin/products/") {
        json!({"name": "x", "price_cents": 0, "currency": "EUR"})
    } else if route.path.ends_with("/resolve") {
        json!({"note": "path parameter test"})
    } else if route.path.ends_with("/pay") {
        json!({"request_token": uuid::Uuid::new_v4()})
    } else {
        json!({})
    }
}

#[test]
fn every_path_parameter_is_checked_by_type_before_any_query_and_changes_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let app = rt.block_on(spawn_app_with(|config| {
        config.limits = backend::http::limits::LimitsConfig::off();
    }));
    let (routes, operator, before) = rt.block_on(async {
        // Something to change: a paid order with its charge, a product.
        let (_, order) = app.account_with_order(10_000, 2_000).await;
        app.pay_until_final(&order.order_no).await;
        app.put_product("beans", "Coffee beans", 1_250, "EUR").await;
        let operator = browser_client();
        let signed_in = operator
            .post(app.url("/api/ops/session"))
            .json(&json!({"admin_token": ADMIN_TOKEN, "name": "path-tester"}))
            .send()
            .await
            .expect("answered");
        assert_eq!(signed_in.status(), StatusCode::OK);
        (
            routes_with_path_parameters(&app).await,
            operator,
            app.snapshot().await,
        )
    });
    for expected in [
        "/api/merchant/orders/{order_no}/refunds",
        "/api/admin/orders/{order_no}/refunds",
        "/api/admin/callbacks/{callback_id}",
        "/api/orders/{order_no}/pay",
    ] {
        assert!(
            routes.iter().any(|route| route.path == expected),
            "{expected} is not in the description: {routes:?}"
        );
    }

    let result = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
    .run(&(select(routes.clone()), parameter()), |(route, value)| {
        rt.block_on(async {
            let url = url_of(&app, &route, &value);
            let client = if route.path.starts_with("/api/ops/") {
                &operator
            } else {
                &app.http
            };
            let mut request = client
                .request(route.method.clone(), &url)
                .header("idempotency-key", uuid::Uuid::new_v4().to_string());
            if route.path.starts_with("/api/admin/") {
                request = request.bearer_auth(ADMIN_TOKEN);
            } else if route.path.starts_with("/api/merchant/") {
                request = request.bearer_auth(MERCHANT_KEY);
            }
            if route.method != Method::GET {
                request = request.json(&body_for(&route));
            }
            let response = request.send().await.expect("answered");
            let status = response.status();
            let answer = response.text().await.unwrap_or_default();
            prop_assert!(
                !status.is_server_error(),
                "{} {} answered {}: {}",
                route.method,
                url,
                status,
                answer
            );
            Ok::<(), TestCaseError>(())
        })
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    let after = rt.block_on(app.snapshot());
    assert_eq!(
        after, before,
        "a request with a malformed path parameter changed the database"
    );
    drop(app);
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
}

#[tokio::test]
async fn a_nul_in_a_refund_route_or_a_callback_id_is_refused_as_not_found_not_a_500() {
    let app = spawn_app_with(|_| {}).await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    app.pay_until_final(&order.order_no).await;
    let before = app.snapshot().await;

    for (method, path, key) in [
        (
            Method::GET,
            "/api/merchant/orders/ord_%00/refunds",
            MERCHANT_KEY,
        ),
        (
            Method::POST,
            "/api/merchant/orders/ord_%00/refunds",
            MERCHANT_KEY,
        ),
        (
            Method::GET,
            "/api/admin/orders/ord_%00/refunds",
            ADMIN_TOKEN,
        ),
        (
            Method::POST,
            "/api/admin/orders/ord_%00/refunds",
            ADMIN_TOKEN,
        ),
    ] {
        let response = app
            .http
            .request(method.clone(), app.url(path))
            .bearer_auth(key)
            .header("idempotency-key", uuid::Uuid::new_v4().to_string())
            .json(&json!({"amount_cents": 100, "reason": "test"}))
            .send()
            .await
            .expect("answered");
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{method} {path}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["error"]["code"], "ORDER_NOT_FOUND", "{method} {path}");
    }
    let response = app
        .http
        .get(app.url("/api/admin/callbacks/%00"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(app.snapshot().await, before);
}
