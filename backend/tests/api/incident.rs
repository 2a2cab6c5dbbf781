//! The incident that started this project, replayed as a test.

use crate::helpers::{new_callback_id, spawn_app_with, success_body};
use futures::future::join_all;
use reqwest::StatusCode;
use std::time::Duration;
use testkit::OwnedRedis;

/// Interval between the platform's retries; the incident had 7-10 s, tests shorten it.
fn retry_interval() -> Duration {
    let millis = std::env::var("INCIDENT_RETRY_INTERVAL_MS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(100);
    Duration::from_millis(millis)
}

#[tokio::test]
async fn the_incident_replayed_charges_once_and_answers_200_every_time() {
    let redis = OwnedRedis::start().await.expect("own redis-server");
    let app = spawn_app_with(|c| {
        c.redis_url = redis.url().into();
        c.sandbox_drop_callbacks = true;
    })
    .await;
    let (account, _, payment) = app.handed_over_order(100_000, 4_999).await;
    let (id, body) = (new_callback_id(), success_body(&payment));

    // 1. The same signed callback 100 times at once.
    let burst = join_all((0..100).map(|_| app.post_callback(&id, &body))).await;
    let mut statuses: Vec<StatusCode> = burst.iter().map(|r| r.status()).collect();

    // 2. Ten retries, as the platform keeps retrying.
    for _ in 0..10 {
        tokio::time::sleep(retry_interval()).await;
        statuses.push(app.post_callback(&id, &body).await.status());
    }

    // 3. The backend restarts (new process state) and Redis loses everything, then one more retry.
    let app = app.restart().await;
    redis.flush().await.expect("flushes");
    statuses.push(app.post_callback(&id, &body).await.status());

    assert_eq!(statuses.len(), 111);
    assert!(
        statuses.iter().all(|s| *s == StatusCode::OK),
        "{statuses:?}"
    );
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(app.balance(&account).await, 100_000 - 4_999);
    assert_eq!(app.count("callback_deliveries").await, 111);
    let applied: i64 =
        sqlx::query_scalar("SELECT count(*) FROM callback_deliveries WHERE outcome = 'CHARGED'")
            .fetch_one(&app.db)
            .await
            .expect("count");
    assert_eq!(applied, 1);
    // In the books: the hold made at pay, posted once by the one charge.
    assert_eq!(
        app.transfers_of(&payment.order.order_no).await,
        [
            "HOLD WALLET -> MERCHANT 4999",
            "CHARGE WALLET -> MERCHANT 4999 posts hold"
        ]
    );
    app.assert_invariants().await;
}
