use crate::helpers::{
    error_code, new_callback_id, spawn_app, spawn_app_without_callbacks, success_body,
};
use api_types::api::RequestToken;
use reqwest::StatusCode;
use time::OffsetDateTime;

#[tokio::test]
async fn request_token_is_a_uuid_v4_stored_in_redis_with_its_ttl_and_binding() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 1_234).await;

    let response = app.post_request_token(&order.order_no).await;

    assert_eq!(response.status(), StatusCode::CREATED);
    let token: RequestToken = response.json().await.expect("json");
    assert_eq!(token.request_token.get_version_num(), 4);
    let ttl = (token.expires_at - OffsetDateTime::now_utc()).whole_seconds();
    assert!((890..=900).contains(&ttl), "expires in {ttl} s");

    let client = redis::Client::open(app.config.redis_url.expose()).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("redis");
    let key = format!(
        "{}token:{}",
        app.config.redis_key_prefix, token.request_token
    );
    let value: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .expect("stored");
    let binding: serde_json::Value = serde_json::from_str(&value).expect("json binding");
    assert_eq!(binding["order_no"], order.order_no.as_str());
    assert_eq!(binding["amount_cents"], 1_234);
    assert_eq!(binding["currency"], "EUR");
    let redis_ttl: i64 = redis::cmd("TTL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .expect("ttl");
    assert!((890..=900).contains(&redis_ttl), "redis TTL {redis_ttl}");
    assert_eq!(app.count("request_tokens_issued").await, 1);
}

#[tokio::test]
async fn request_token_for_an_unknown_order_is_404_and_changes_nothing() {
    let app = spawn_app().await;
    app.create_account(1_000, "EUR").await;
    let before = app.snapshot().await;

    let response = app.post_request_token("ord_unknown").await;

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(response).await, "ORDER_NOT_FOUND");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn request_token_for_a_paid_order_is_409_order_not_payable() {
    let app = spawn_app_without_callbacks().await;
    let (_, order) = app.account_with_order(10_000, 1_000).await;
    let payment = app.hand_over(&order).await;
    let paid = app
        .post_callback(&new_callback_id(), &success_body(&payment))
        .await;
    assert_eq!(paid.status(), StatusCode::OK);
    let before = app.snapshot().await;

    let response = app.post_request_token(&order.order_no).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "ORDER_NOT_PAYABLE");
    assert_eq!(app.snapshot().await, before);
}
