use crate::helpers::{error_code, spawn_app, spawn_app_without_callbacks};
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

    let mut conn = app.redis().await;
    let key = app.token_key(token.request_token);
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
    let (_, order, payment) = app.handed_over_order(10_000, 1_000).await;
    let paid = app.post_success(&payment).await;
    assert_eq!(paid.status(), StatusCode::OK);
    let before = app.snapshot().await;

    let response = app.post_request_token(&order.order_no).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "ORDER_NOT_PAYABLE");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn concurrent_page_loads_each_get_a_token_recorded_before_its_answer() {
    // The token record is group-committed: tokens issued together share one
    // statement. Each answer must still mean its own row is committed.
    const LOADS: usize = 24;
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 1_000).await;

    let loads = (0..LOADS).map(|_| {
        let app = &app;
        let order_no = order.order_no.clone();
        async move {
            let response = app.post_request_token(&order_no).await;
            assert_eq!(response.status(), StatusCode::CREATED);
            let token: RequestToken = response.json().await.expect("json");
            // Read right after this answer, before the others finish.
            let recorded: Option<String> = sqlx::query_scalar(
                "SELECT order_no FROM request_tokens_issued WHERE request_token = $1",
            )
            .bind(token.request_token)
            .fetch_optional(&app.db)
            .await
            .expect("read the record");
            assert_eq!(
                recorded.as_deref(),
                Some(order_no.as_str()),
                "token answered before its record was committed"
            );
            token.request_token
        }
    });
    let tokens: std::collections::HashSet<_> =
        futures::future::join_all(loads).await.into_iter().collect();

    assert_eq!(tokens.len(), LOADS, "every page load got its own token");
    assert_eq!(app.count("request_tokens_issued").await, LOADS as i64);
}
