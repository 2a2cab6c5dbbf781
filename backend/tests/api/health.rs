use crate::helpers::{spawn_app, spawn_app_with};
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
    let app = spawn_app_with(|c| c.redis_url = redis.url()).await;
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
