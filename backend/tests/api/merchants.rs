//! Merchants as first-class users: accounts made by the operator, each with
//! its own keys (shown once, kept as keyed hashes, rotated with an overlap,
//! revoked at once), each seeing, listing and refunding only its own orders,
//! each with its own idempotency keys, references and account in the books.

use crate::helpers::{ADMIN_TOKEN, MERCHANT_KEY, MERCHANT_KEY_SECRET, TestApp, spawn_app};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// A merchant made through the admin API, with the key it was given.
#[derive(Clone)]
struct Shop {
    merchant_id: String,
    key: String,
    prefix: String,
}

/// An admin API call: (status, body; `null` without one).
async fn admin(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new()
        .request(method, app.url(path))
        .bearer_auth(ADMIN_TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("answered");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn create_merchant(app: &TestApp, name: &str) -> Shop {
    let (status, body) = admin(
        app,
        Method::POST,
        "/api/admin/merchants",
        Some(json!({"name": name, "return_origins": ["https://shop.example"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    Shop {
        merchant_id: body["merchant_id"].as_str().expect("id").to_owned(),
        key: body["api_key"].as_str().expect("key").to_owned(),
        prefix: body["key_prefix"].as_str().expect("prefix").to_owned(),
    }
}

/// A merchant API call with `key` (and an `Idempotency-Key` when given).
async fn call(
    app: &TestApp,
    key: &str,
    method: Method,
    path: &str,
    idempotency_key: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new()
        .request(method, app.url(path))
        .bearer_auth(key);
    if let Some(idempotency_key) = idempotency_key {
        request = request.header("idempotency-key", idempotency_key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("answered");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(app: &TestApp, key: &str, path: &str) -> (StatusCode, Value) {
    call(app, key, Method::GET, path, None, None).await
}

/// Places an order for the shopper through the merchant's key.
async fn place(
    app: &TestApp,
    key: &str,
    idempotency_key: &str,
    shopper_id: Uuid,
    amount_cents: i64,
    reference: Option<&str>,
) -> (StatusCode, Value) {
    let mut body = json!({
        "shopper_id": shopper_id,
        "amount_cents": amount_cents,
        "currency": "EUR",
        "description": "a partner's sale",
    });
    if let Some(reference) = reference {
        body["merchant_reference"] = json!(reference);
    }
    call(
        app,
        key,
        Method::POST,
        "/api/merchant/orders",
        Some(idempotency_key),
        Some(body),
    )
    .await
}

fn order_nos(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|order| order["order_no"].as_str().expect("order_no").to_owned())
        .collect()
}

#[tokio::test]
async fn each_merchant_reads_lists_and_refunds_only_its_own_orders() {
    let app = spawn_app().await;
    let shopper = app.create_account(100_000, "EUR").await;
    let north = create_merchant(&app, "North Shop").await;
    let south = create_merchant(&app, "South Shop").await;

    // The same idempotency key and the same reference, one per merchant: two orders.
    let key = Uuid::new_v4().to_string();
    let (status, a) = place(
        &app,
        &north.key,
        &key,
        shopper.shopper_id,
        2_500,
        Some("INV-1"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{a}");
    let (status, b) = place(
        &app,
        &south.key,
        &key,
        shopper.shopper_id,
        4_000,
        Some("INV-1"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{b}");
    let (a_no, b_no) = (
        a["order_no"].as_str().expect("no").to_owned(),
        b["order_no"].as_str().expect("no").to_owned(),
    );
    assert_ne!(a_no, b_no);
    for order_no in [&a_no, &b_no] {
        assert_eq!(
            app.pay_by_until_final(order_no, "platform").await.status,
            api_types::OrderStatus::Paid
        );
    }

    // Each reads its own, with its reference.
    let (status, read) = get(&app, &north.key, &format!("/api/merchant/orders/{a_no}")).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["merchant_reference"], "INV-1");
    assert_eq!(read["status"], "PAID");
    assert_eq!(read["refunds"], json!([]));

    // Every attempt on the other's order answers as a missing one, and changes nothing.
    let before = app.snapshot().await;
    let missing = "ord_00000000000000000000000000000000";
    let (_, not_there) = get(&app, &south.key, &format!("/api/merchant/orders/{missing}")).await;
    for (method, path, body) in [
        (Method::GET, format!("/api/merchant/orders/{a_no}"), None),
        (
            Method::GET,
            format!("/api/merchant/orders/{a_no}/refunds"),
            None,
        ),
        (
            Method::POST,
            format!("/api/merchant/orders/{a_no}/refunds"),
            Some(json!({"amount_cents": 100, "reason": "not mine"})),
        ),
    ] {
        let (status, body) = call(
            &app,
            &south.key,
            method.clone(),
            &path,
            Some(&Uuid::new_v4().to_string()),
            body,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert_eq!(
            body, not_there,
            "{method} {path}: exactly as a missing order"
        );
    }
    let (status, body) = get(
        &app,
        &south.key,
        &format!("/api/merchant/orders?starting_after={a_no}"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(app.snapshot().await, before, "nothing changed");
    let refunds: i64 = sqlx::query_scalar("SELECT count(*) FROM refunds")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(refunds, 0, "no refund of another merchant's order");

    // Each lists its own only; the shop (MERCHANT_API_KEY) neither.
    let (_, north_list) = get(&app, &north.key, "/api/merchant/orders").await;
    assert_eq!(order_nos(&north_list), std::slice::from_ref(&a_no));
    assert_eq!(north_list["has_more"], false);
    let (_, south_list) = get(&app, &south.key, "/api/merchant/orders").await;
    assert_eq!(order_nos(&south_list), std::slice::from_ref(&b_no));
    let (_, shop_list) = get(&app, MERCHANT_KEY, "/api/merchant/orders").await;
    assert!(!order_nos(&shop_list).contains(&a_no));
    assert!(!order_nos(&shop_list).contains(&b_no));

    // North refunds part of its own; its order shows the refund once settled.
    let (status, refund) = call(
        &app,
        &north.key,
        Method::POST,
        &format!("/api/merchant/orders/{a_no}/refunds"),
        Some(&Uuid::new_v4().to_string()),
        Some(json!({"amount_cents": 500, "reason": "damaged"})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{refund}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let read = loop {
        let (_, read) = get(&app, &north.key, &format!("/api/merchant/orders/{a_no}")).await;
        if read["refunds"][0]["status"] == "SUCCEEDED" {
            break read;
        }
        assert!(Instant::now() < deadline, "the refund settles: {read}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(read["refunded_cents"], 500);

    // What the checkout owes each, from its own account in the books.
    let (_, balance) = get(&app, &north.key, "/api/merchant/balance").await;
    assert_eq!(
        balance,
        json!({"balances": [{"currency": "EUR", "balance_cents": 2_000, "credited_cents": 2_500, "debited_cents": 500}]})
    );
    let (_, balance) = get(&app, &south.key, "/api/merchant/balance").await;
    assert_eq!(balance["balances"][0]["balance_cents"], 4_000);
    let (_, entries) = get(&app, &north.key, "/api/merchant/balance/entries").await;
    let lines: Vec<String> = entries["data"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["kind"].as_str().expect("kind"),
                e["amount_cents"],
                e["order_no"].as_str().expect("order"),
                e["refund_no"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            format!(
                "REFUND -500 {a_no} {}",
                refund["refund_no"].as_str().expect("no")
            ),
            format!("CHARGE 2500 {a_no} -"),
        ]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_merchants_list_pages_newest_first_filters_and_refuses_bad_queries() {
    let app = spawn_app().await;
    let shopper = app.create_account(100_000, "EUR").await;
    let shop = create_merchant(&app, "Pager").await;
    let mut placed = Vec::new();
    for n in 0..5 {
        let (status, order) = place(
            &app,
            &shop.key,
            &Uuid::new_v4().to_string(),
            shopper.shopper_id,
            1_000 + n,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        placed.push(order["order_no"].as_str().expect("no").to_owned());
    }
    let newest_first: Vec<String> = placed.iter().rev().cloned().collect();

    // Pages of two: 2, 2, 1, each after the last one's number, none repeated.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let path = match &cursor {
            None => "/api/merchant/orders?limit=2".to_owned(),
            Some(after) => format!("/api/merchant/orders?limit=2&starting_after={after}"),
        };
        let (status, page) = get(&app, &shop.key, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let nos = order_nos(&page);
        pages.push((nos.len(), page["has_more"].as_bool().expect("has_more")));
        cursor = nos.last().cloned();
        seen.extend(nos);
        if page["has_more"] == false {
            break;
        }
    }
    assert_eq!(pages, [(2, true), (2, true), (1, false)]);
    assert_eq!(seen, newest_first);

    // Filters: by status, by creation time.
    assert_eq!(
        app.pay_by_until_final(&placed[1], "platform").await.status,
        api_types::OrderStatus::Paid
    );
    let (_, paid) = get(&app, &shop.key, "/api/merchant/orders?status=PAID").await;
    assert_eq!(order_nos(&paid), [placed[1].clone()]);
    let (_, later) = get(
        &app,
        &shop.key,
        "/api/merchant/orders?created_after=2999-01-01T00:00:00Z",
    )
    .await;
    assert_eq!(later["data"], json!([]));

    // Bad queries: a clear 400, nothing else.
    let before = app.snapshot().await;
    for query in [
        "limit=0",
        "limit=101",
        "limit=many",
        "status=SHIPPED",
        "created_after=yesterday",
        "starting_after=ord_00000000000000000000000000000000",
        "colour=blue",
    ] {
        let (status, body) = get(&app, &shop.key, &format!("/api/merchant/orders?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error"]["code"], "BAD_REQUEST", "{query}");
    }
    for query in ["limit=0", "starting_after=charge:evt_not_mine"] {
        let (status, _) = get(
            &app,
            &shop.key,
            &format!("/api/merchant/balance/entries?{query}"),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_merchant_reference_names_one_order_of_its_merchant() {
    let app = spawn_app().await;
    let shopper = app.create_account(100_000, "EUR").await;
    let shop = create_merchant(&app, "Referrer").await;
    let (status, first) = place(
        &app,
        &shop.key,
        &Uuid::new_v4().to_string(),
        shopper.shopper_id,
        1_000,
        Some("order-42"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let before = app.snapshot().await;
    let (status, body) = place(
        &app,
        &shop.key,
        &Uuid::new_v4().to_string(),
        shopper.shopper_id,
        1_000,
        Some("order-42"),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "MERCHANT_REFERENCE_IN_USE");
    for bad in ["", " padded", "tab\there", &"x".repeat(65)] {
        let (status, body) = place(
            &app,
            &shop.key,
            &Uuid::new_v4().to_string(),
            shopper.shopper_id,
            1_000,
            Some(bad),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {body}");
    }
    assert_eq!(app.snapshot().await, before, "nothing changed");
    // A merchant's own numbering may have spaces inside: "Order 1234".
    let (status, spaced) = place(
        &app,
        &shop.key,
        &Uuid::new_v4().to_string(),
        shopper.shopper_id,
        1_000,
        Some("Order 1234"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{spaced}");
    let order_no = spaced["order_no"].as_str().expect("no");
    let (_, read) = get(&app, &shop.key, &format!("/api/merchant/orders/{order_no}")).await;
    assert_eq!(read["merchant_reference"], "Order 1234");
}

#[tokio::test]
async fn a_key_rotated_under_load_fails_no_request_and_the_old_one_ends_with_its_overlap() {
    let app = Arc::new(spawn_app().await);
    let shopper = app.create_account(100_000, "EUR").await;
    let shop = create_merchant(&app, "Rotator").await;
    let shopper_id = shopper.shopper_id;
    let current = Arc::new(tokio::sync::RwLock::new(shop.key.clone()));
    let stop = Arc::new(AtomicBool::new(false));

    // Four clients placing orders without pause, each with the key it holds now.
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (app, current, stop) = (app.clone(), current.clone(), stop.clone());
            tokio::spawn(async move {
                let mut placed = 0_u32;
                while !stop.load(Ordering::Relaxed) {
                    let key = current.read().await.clone();
                    let (status, body) = place(
                        &app,
                        &key,
                        &Uuid::new_v4().to_string(),
                        shopper_id,
                        100,
                        None,
                    )
                    .await;
                    assert_eq!(status, StatusCode::CREATED, "a request failed: {body}");
                    placed += 1;
                }
                placed
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Rotate with a 5 s overlap; the clients move to the new key 2 s later.
    let rotated_at = Instant::now();
    let (status, rotated) = admin(
        &app,
        Method::POST,
        &format!("/api/admin/merchants/{}/keys", shop.merchant_id),
        Some(json!({"expire_old_after_secs": 5})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{rotated}");
    let new_key = rotated["api_key"].as_str().expect("key").to_owned();
    assert_ne!(new_key, shop.key);
    tokio::time::sleep(Duration::from_secs(2)).await;
    *current.write().await = new_key.clone();
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for client in clients {
        total += client.await.expect("no request failed");
    }
    assert!(total > 20, "the clients kept placing orders: {total}");

    // The old key works until its overlap ends, then is refused.
    let (status, _) = get(&app, &shop.key, "/api/merchant/orders?limit=1").await;
    assert_eq!(status, StatusCode::OK, "within the overlap");
    tokio::time::sleep(
        Duration::from_secs(5).saturating_sub(rotated_at.elapsed()) + Duration::from_millis(300),
    )
    .await;
    let (status, body) = get(&app, &shop.key, "/api/merchant/orders?limit=1").await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "after the overlap: {body}"
    );

    // A revoked key is refused at once.
    let (status, _) = get(&app, &new_key, "/api/merchant/orders?limit=1").await;
    assert_eq!(status, StatusCode::OK);
    let new_prefix = rotated["key_prefix"].as_str().expect("prefix");
    let (status, _) = admin(
        &app,
        Method::DELETE,
        &format!(
            "/api/admin/merchants/{}/keys/{new_prefix}",
            shop.merchant_id
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = get(&app, &new_key, "/api/merchant/orders?limit=1").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "revoked");

    // The list says so: both keys inactive, each with its dates; no key shown.
    let (_, merchants) = admin(&app, Method::GET, "/api/admin/merchants", None).await;
    let text = merchants.to_string();
    assert!(
        !text.contains(&shop.key) && !text.contains(&new_key),
        "{text}"
    );
    let mine = merchants
        .as_array()
        .expect("list")
        .iter()
        .find(|m| m["merchant_id"] == shop.merchant_id.as_str())
        .expect("listed")
        .clone();
    let keys: Vec<(String, bool, bool, bool)> = mine["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| {
            (
                k["prefix"].as_str().expect("prefix").to_owned(),
                k["active"].as_bool().expect("active"),
                k["expires_at"].is_string(),
                k["revoked_at"].is_string(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            (shop.prefix.clone(), false, true, false),
            (new_prefix.to_owned(), false, false, true)
        ]
    );
    assert!(mine["keys"][0]["last_used_at"].is_string(), "{mine}");
}

#[tokio::test]
async fn a_key_is_shown_once_and_kept_only_as_a_keyed_hash() {
    let app = spawn_app().await;
    let shop = create_merchant(&app, "Hasher").await;
    assert!(
        shop.key.starts_with(&format!("{}_", shop.prefix)),
        "{}",
        shop.prefix
    );
    assert!(shop.prefix.starts_with("mk_") && shop.prefix.len() == 11);

    // The database holds the HMAC under MERCHANT_KEY_SECRET, and no form of the key that authenticates.
    let stored: Vec<u8> =
        sqlx::query_scalar("SELECT key_hash FROM merchant_keys WHERE prefix = $1")
            .bind(&shop.prefix)
            .fetch_one(&app.db)
            .await
            .expect("the key's row");
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(MERCHANT_KEY_SECRET.as_bytes())
        .expect("HMAC key");
    mac.update(shop.key.as_bytes());
    assert_eq!(stored, mac.finalize().into_bytes().to_vec());
    let everywhere: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM merchant_keys k, merchants m
         WHERE position($1 in k::text) > 0 OR position($1 in m::text) > 0
            OR k.key_hash = sha256(convert_to($1, 'UTF8'))",
    )
    .bind(&shop.key)
    .fetch_one(&app.db)
    .await
    .expect("search");
    assert_eq!(everywhere, 0);
    // Presenting the stored hash (or the prefix) is no key.
    for not_a_key in [hex::encode(&stored), shop.prefix.clone()] {
        let (status, _) = get(&app, &not_a_key, "/api/merchant/orders").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn bad_merchant_requests_get_a_clear_error_and_change_nothing() {
    let app = spawn_app().await;
    let shop = create_merchant(&app, "Careful").await;
    let before = app.snapshot().await;
    for body in [
        json!({"name": ""}),
        json!({"name": "x".repeat(101)}),
        json!({"name": "Tab\tShop"}),
        json!({"name": "Plain", "return_origins": ["http://shop.example"]}),
        json!({"name": "Path", "return_origins": ["https://shop.example/back"]}),
        json!({"name": "Js", "return_origins": ["javascript:alert(1)"]}),
        json!({"name": "Extra", "colour": "blue"}),
    ] {
        let (status, answer) = admin(
            &app,
            Method::POST,
            "/api/admin/merchants",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "BAD_REQUEST", "{body}");
    }
    let unknown = Uuid::new_v4();
    for (method, path, body, expected) in [
        (
            Method::POST,
            format!("/api/admin/merchants/{unknown}/keys"),
            Some(json!({"expire_old_after_secs": 5})),
            StatusCode::NOT_FOUND,
        ),
        (
            Method::POST,
            "/api/admin/merchants/not-a-uuid/keys".to_owned(),
            Some(json!({"expire_old_after_secs": 5})),
            StatusCode::NOT_FOUND,
        ),
        (
            Method::POST,
            format!("/api/admin/merchants/{}/keys", shop.merchant_id),
            Some(json!({"expire_old_after_secs": 604_801})),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            format!("/api/admin/merchants/{}/keys", shop.merchant_id),
            Some(json!({"expire_old_after_secs": -1})),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::DELETE,
            format!("/api/admin/merchants/{}/keys/mk_00000000", shop.merchant_id),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            Method::DELETE,
            format!("/api/admin/merchants/{unknown}/keys/{}", shop.prefix),
            None,
            StatusCode::NOT_FOUND,
        ),
    ] {
        let (status, answer) = admin(&app, method.clone(), &path, body).await;
        assert_eq!(status, expected, "{method} {path}: {answer}");
    }
    // Without the admin token, nothing at all.
    let response = reqwest::Client::new()
        .post(app.url("/api/admin/merchants"))
        .bearer_auth(&shop.key)
        .json(&json!({"name": "Sneaky"}))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.snapshot().await, before, "nothing changed");
    // The key still works.
    assert_eq!(
        get(&app, &shop.key, "/api/merchant/balance").await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn merchant_api_key_is_a_key_of_the_shop_and_stops_working_once_unset() {
    let app = spawn_app().await;
    let shopper = app.create_account(10_000, "EUR").await;
    // An order from the catalogue is the shop's: MERCHANT_API_KEY reads it.
    app.put_product("mug", "Mug", 1_200, "EUR").await;
    let response = app.post_order(&json!({"sku": "mug", "quantity": 1})).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.expect("json");
    let order_no = body["order_no"].as_str().expect("no");
    let (status, read) = get(
        &app,
        MERCHANT_KEY,
        &format!("/api/merchant/orders/{order_no}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["merchant_reference"], Value::Null);
    let shop_order = app.create_order(&shopper, 1_500).await;
    let (status, _) = get(
        &app,
        MERCHANT_KEY,
        &format!("/api/merchant/orders/{}", shop_order.order_no),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, merchants) = admin(&app, Method::GET, "/api/admin/merchants", None).await;
    assert_eq!(
        merchants[0]["merchant_id"],
        "00000000-0000-0000-0000-000000000001"
    );
    assert_eq!(merchants[0]["keys"][0]["source"], "env");
    assert!(
        merchants[0]["keys"][0]["prefix"]
            .as_str()
            .is_some_and(|p| p.starts_with("env_")),
        "{merchants}"
    );

    // Started again without it: the key is refused, and listed as revoked.
    let app = app
        .restart_with(|config| config.merchant_api_key = None)
        .await;
    let (status, _) = get(&app, MERCHANT_KEY, "/api/merchant/orders").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, merchants) = admin(&app, Method::GET, "/api/admin/merchants", None).await;
    assert_eq!(merchants[0]["keys"][0]["active"], false);
    assert!(merchants[0]["keys"][0]["revoked_at"].is_string());
}

#[tokio::test]
async fn only_urls_of_the_merchants_own_origins_lead_the_shopper_back() {
    let app = spawn_app().await;
    let shopper = app.create_account(100_000, "EUR").await;
    let shop = create_merchant(&app, "Way Back").await;
    let order_with = |return_url: &str, cancel_url: Option<&str>| {
        let mut body = json!({
            "shopper_id": shopper.shopper_id,
            "amount_cents": 1_000,
            "currency": "EUR",
            "description": "a sale with a way back",
            "return_url": return_url,
        });
        if let Some(cancel_url) = cancel_url {
            body["cancel_url"] = json!(cancel_url);
        }
        body
    };

    let before = app.snapshot().await;
    for (return_url, cancel_url) in [
        ("https://evil.example/back", None),
        ("https://shop.example.evil.example/back", None),
        ("https://shop.example@evil.example/back", None),
        ("http://shop.example/back", None),
        ("javascript:alert(1)", None),
        ("/back", None),
        (
            "https://shop.example/back",
            Some("https://evil.example/cart"),
        ),
    ] {
        let (status, body) = call(
            &app,
            &shop.key,
            Method::POST,
            "/api/merchant/orders",
            Some(&Uuid::new_v4().to_string()),
            Some(order_with(return_url, cancel_url)),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{return_url}: {body}"
        );
        assert_eq!(
            body["error"]["code"], "RETURN_URL_NOT_ALLOWED",
            "{return_url}"
        );
    }
    assert_eq!(app.snapshot().await, before, "nothing changed");

    // One of its origins, written any way a browser reads the same: kept as the browser will follow it.
    let (status, order) = call(
        &app,
        &shop.key,
        Method::POST,
        "/api/merchant/orders",
        Some(&Uuid::new_v4().to_string()),
        Some(order_with(
            "https://SHOP.example:443/back?cart=7",
            Some("https://shop.example/cart"),
        )),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{order}");
    assert_eq!(order["return_url"], "https://shop.example/back?cart=7");
    // The shopper's page reads where to go back to, and to whom.
    let order_no = order["order_no"].as_str().expect("no");
    let seen: Value = app
        .get(&format!("/api/orders/{order_no}"))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(seen["merchant_name"], "Way Back");
    assert_eq!(seen["return_url"], "https://shop.example/back?cart=7");
    assert_eq!(seen["cancel_url"], "https://shop.example/cart");
    // An order without URLs carries none.
    let plain = app.create_order(&shopper, 500).await;
    let seen: Value = app
        .get(&format!("/api/orders/{}", plain.order_no))
        .await
        .json()
        .await
        .expect("json");
    assert!(
        seen.get("return_url").is_none() && seen.get("merchant_name").is_none(),
        "{seen}"
    );
}
