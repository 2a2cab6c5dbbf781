//! The token store (Redis) is down: a clear message, no charge, and paying
//! works again once it is back.

use crate::helpers::{Options, OwnedRedis, TestApp, spawn_app_with};
use api_types::api::Health;

async fn spawn_app_with_own_redis(redis: &OwnedRedis) -> TestApp {
    spawn_app_with(Options {
        redis_url: Some(redis.url()),
        ..Options::default()
    })
    .await
}

/// Waits until the backend reaches Redis again (its connection reconnects lazily).
async fn wait_until_backend_sees_redis(app: &TestApp) {
    app.eventually("the backend to reach Redis again", || async {
        let health: Health = app
            .http
            .get(format!("{}/healthz", app.address))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (health.redis == "ok").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_the_page_says_so_charges_nothing_and_pays_once_it_is_back() {
    // Arrange: Redis is down before the page loads.
    let mut redis = OwnedRedis::start().await.expect("redis-server starts");
    let app = spawn_app_with_own_redis(&redis).await;
    let order = app.create_order(1_999).await;
    redis.stop();

    // Act
    app.goto(&format!("/pay/{}", order.order_no)).await;

    // Assert: a clear message and a retry button, no pay button, nothing issued or charged.
    app.wait_for_notice("service-unavailable").await;
    let message = app.text("message").await.unwrap_or_default();
    assert!(message.contains("temporarily unavailable"), "{message}");
    assert!(app.is_present("retry-button").await);
    assert!(!app.is_present("pay-button").await);
    app.screenshot("redis-down").await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 0);
    app.assert_nothing_charged(&order).await;

    // Redis comes back (empty, same port): "Try again", then "Pay now" pays once.
    redis.resume().await.expect("redis-server starts again");
    wait_until_backend_sees_redis(&app).await;
    app.click("retry-button").await;
    app.wait_for_pay_button().await;
    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 1);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_failing_at_pay_time_charges_nothing_and_the_page_recovers() {
    // Arrange: the page holds a token, then Redis dies.
    let mut redis = OwnedRedis::start().await.expect("redis-server starts");
    let app = spawn_app_with_own_redis(&redis).await;
    let order = app.create_order(2_222).await;
    app.open_pay_page(&order.order_no).await;
    redis.stop();

    // Act: pay while the token store is down.
    app.click("pay-button").await;

    // Assert: 503 -> a clear message and "Try again"; nothing charged.
    app.wait_for_notice("service-unavailable").await;
    assert!(app.is_present("retry-button").await);
    app.assert_nothing_charged(&order).await;

    // Redis restarts empty, so the old token is gone: "Try again" re-sends it,
    // the backend answers TOKEN_INVALID, the page gets a fresh token and says so.
    redis.resume().await.expect("redis-server starts again");
    wait_until_backend_sees_redis(&app).await;
    app.click("retry-button").await;
    app.wait_for_notice("token-renewed").await;
    app.wait_for_pay_button().await;
    app.click("pay-button").await;
    app.wait_for_status("PAID").await;
    app.assert_charged_once(&order).await;
    assert_eq!(app.tokens_issued(&order.order_no).await, 2);
    app.finish().await;
}
