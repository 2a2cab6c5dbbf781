use crate::helpers::{logged, spawn_app, spawn_app_with};
use reqwest::StatusCode;
use serde_json::{Value, json};
use testkit::OwnedRedis;

#[tokio::test]
async fn healthz_is_ok_when_database_and_redis_answer() {
    let app = spawn_app().await;

    let response = app
        .http
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body, json!({"database": "ok", "redis": "ok"}));
}

#[tokio::test]
async fn healthz_answers_503_naming_redis_when_redis_is_down() {
    let mut redis = OwnedRedis::start().await.expect("own redis-server");
    let app = spawn_app_with(|c| c.redis_url = redis.url().into()).await;
    redis.stop();

    let response = app
        .http
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body, json!({"database": "ok", "redis": "down"}));
}

#[tokio::test]
async fn unknown_api_paths_answer_404_in_the_error_shape() {
    let app = spawn_app().await;

    let response = app
        .http
        .get(app.url("/api/nope"))
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(crate::helpers::error_code(response).await, "NOT_FOUND");
}

#[tokio::test]
async fn readyz_answers_503_from_the_drain_on_while_the_instance_still_serves_for_drain_secs() {
    let app = spawn_app_with(|c| {
        c.drain_secs = 2;
        c.drain_deadline_secs = 5;
    })
    .await;
    let readyz = || async {
        let response = app.http.get(app.url("/readyz")).send().await.expect("sent");
        let status = response.status();
        let body: Value = response.json().await.expect("json");
        (status, body)
    };
    assert_eq!(readyz().await, (StatusCode::OK, json!({"status": "ready"})));
    let (_, order) = app.account_with_order(10_000, 1_200).await;

    // What SIGTERM does.
    app.shutdown
        .advance(backend::infra::shutdown::Phase::Draining);
    let drain_began = std::time::Instant::now();

    assert_eq!(
        readyz().await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "draining"})
        )
    );
    // Still alive, and still serving what the balancer sent before it noticed.
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), StatusCode::OK);
    let token = app.request_token(&order.order_no).await;
    let paid = app.pay(&order.order_no, token).await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED);

    // After DRAIN_SECS the listener closes and the server returns.
    while !app.has_stopped() {
        assert!(
            drain_began.elapsed() < std::time::Duration::from_secs(8),
            "the server did not stop after DRAIN_SECS"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        drain_began.elapsed() >= std::time::Duration::from_millis(1_900),
        "it stopped before DRAIN_SECS: {:?}",
        drain_began.elapsed()
    );
    assert!(
        reqwest::Client::new()
            .get(app.url("/healthz"))
            .send()
            .await
            .is_err(),
        "no longer listening"
    );
    // The pay made during the drain is there.
    let attempts: i64 =
        sqlx::query_scalar("SELECT count(*) FROM payment_attempts WHERE order_no = $1")
            .bind(&order.order_no)
            .fetch_one(&app.db)
            .await
            .expect("count");
    assert_eq!(attempts, 1);
}

#[tokio::test]
async fn a_part_going_down_is_logged_once_with_why_and_its_return_once() {
    let mut redis = OwnedRedis::start().await.expect("own redis-server");
    let database = testkit::TestDatabase::new("checkout_test_health_log");
    let log = testkit::target_dir().join(format!("test-logs/{}.log", database.name()));
    let mut backend = testkit::BackendProcess::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_backend")),
        vec![
            (backend::env::PLATFORM.into(), "sandbox".into()),
            (backend::env::DATABASE_URL.into(), database.url()),
            (backend::env::REDIS_URL.into(), redis.url()),
            (backend::env::LOG_FORMAT.into(), "json".into()),
        ],
        log.clone(),
    )
    .await
    .expect("the backend starts");
    let health = || async {
        reqwest::get(format!("{}/healthz", backend.url()))
            .await
            .expect("sent")
            .status()
    };
    assert_eq!(health().await, StatusCode::OK);
    redis.stop();
    for _ in 0..3 {
        assert_eq!(health().await, StatusCode::SERVICE_UNAVAILABLE);
    }
    redis.resume().await.expect("redis back");
    for _ in 0..2 {
        assert_eq!(health().await, StatusCode::OK);
    }
    backend.terminate();
    let output = std::fs::read_to_string(&log).expect("the backend's output");
    let down = logged(&output, "health check: a part we depend on is down");
    let back = logged(&output, "health check: a part we depend on answers again");
    assert_eq!(
        (down.len(), back.len()),
        (1, 1),
        "three failed checks log one line, two good ones after them one: {output}"
    );
    assert_eq!(
        (down[0]["part"].as_str(), back[0]["part"].as_str()),
        (Some("redis"), Some("redis"))
    );
    assert!(
        down[0]["reason"]
            .as_str()
            .is_some_and(|reason| !reason.is_empty()),
        "the line says why: {}",
        down[0]
    );
}
