//! `GET /healthz`: is each part we depend on answering?

use crate::state::AppState;
use api_types::api::Health;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use std::time::Duration;

/// 200 when PostgreSQL and Redis both answer; 503 naming the part that is down.
#[utoipa::path(get, path = "/healthz", tag = "public",
    responses((status = 200, description = "PostgreSQL and Redis answer", body = api_types::api::Health),
        (status = 503, description = "A part is down (named in the body)", body = api_types::api::Health)))]
pub async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let database = tokio::time::timeout(
        Duration::from_secs(2),
        sqlx::query_scalar!("SELECT 1 AS alive").fetch_one(&state.db),
    )
    .await;
    let database_ok = matches!(database, Ok(Ok(_)));
    let redis_ok = state.tokens.ping().await.is_ok();
    let word = |ok: bool| if ok { "ok" } else { "down" }.to_owned();
    let status = if database_ok && redis_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(Health {
            database: word(database_ok),
            redis: word(redis_ok),
        }),
    )
}
