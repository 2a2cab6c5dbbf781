//! Redis is a helper, never the guarantee: with it down or emptied, nothing is charged twice.

use crate::helpers::{error_code, new_callback_id, spawn_app_with, success_body};
use api_types::OrderStatus;
use reqwest::StatusCode;
use testkit::OwnedRedis;

#[tokio::test]
async fn callbacks_are_exactly_once_with_redis_stopped() {
    let mut redis = OwnedRedis::start().await.expect("own redis-server");
    let app = spawn_app_with(|c| {
        c.redis_url = redis.url().into();
        c.sandbox_drop_callbacks = true;
    })
    .await;
    let (account, _, payment) = app.handed_over_order(10_000, 2_500).await;
    redis.stop();
    let (id, body) = (new_callback_id(), success_body(&payment));

    let first = app.post_callback(&id, &body).await;
    let second = app.post_callback(&id, &body).await;

    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(app.balance(&account).await, 7_500);
    assert_eq!(app.count("payment_ledger").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn request_tokens_and_new_submits_answer_503_with_retry_after_while_redis_is_down() {
    let mut redis = OwnedRedis::start().await.expect("own redis-server");
    let app = spawn_app_with(|c| c.redis_url = redis.url().into()).await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;
    let token = app.request_token(&order.order_no).await;
    redis.stop();
    let before = app.snapshot().await;

    let issue = app.post_request_token(&order.order_no).await;
    let submit = app.pay(&order.order_no, token).await;

    assert_eq!(issue.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(issue.headers().contains_key("retry-after"));
    assert_eq!(error_code(issue).await, "TOKEN_STORE_UNAVAILABLE");
    assert_eq!(submit.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(submit.headers().contains_key("retry-after"));
    assert_eq!(error_code(submit).await, "TOKEN_STORE_UNAVAILABLE");
    assert_eq!(
        app.snapshot().await,
        before,
        "never an attempt without a consumed token"
    );

    // Redis comes back empty: the old token is gone, a new one pays.
    redis.resume().await.expect("restarts");
    // The app's connection to Redis comes back on its own; on a busy machine
    // that takes a moment, and until then an answer is an honest 503.
    app.wait_until_healthy().await;
    let stale = app.pay(&order.order_no, token).await;
    assert_eq!(stale.status(), StatusCode::CONFLICT);
    let fresh = app.request_token(&order.order_no).await;
    assert_eq!(
        app.pay(&order.order_no, fresh).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        app.wait_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );
}

#[tokio::test]
async fn a_pay_replay_is_answered_from_the_database_when_redis_is_down_or_flushed() {
    let mut redis = OwnedRedis::start().await.expect("own redis-server");
    let app = spawn_app_with(|c| c.redis_url = redis.url().into()).await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let token = app.request_token(&order.order_no).await;
    let first = app.pay(&order.order_no, token).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first: serde_json::Value = first.json().await.expect("json");
    app.wait_until_final(&order.order_no).await;

    redis.flush().await.expect("flushes");
    let after_flush = app.pay(&order.order_no, token).await;
    redis.stop();
    let while_down = app.pay(&order.order_no, token).await;

    for replay in [after_flush, while_down] {
        assert_eq!(replay.status(), StatusCode::ACCEPTED);
        assert_eq!(replay.headers()["idempotent-replayed"], "true");
        let body: serde_json::Value = replay.json().await.expect("json");
        assert_eq!(body, first);
    }
    assert_eq!(app.count("payment_attempts").await, 1);
    assert_eq!(app.balance(&account).await, 7_500);
    app.assert_invariants().await;
}
