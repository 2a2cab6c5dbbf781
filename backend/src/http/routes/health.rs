//! `GET /healthz`: is each part we depend on answering? `GET /readyz`: should
//! the load balancer send this instance requests?

use crate::state::AppState;
use api_types::api::{Health, Readiness};
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
    let database = match database {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("no answer within 2 s".to_owned()),
    };
    let redis = state.tokens.ping().await.map_err(|err| err.to_string());
    let (database_ok, redis_ok) = (database.is_ok(), redis.is_ok());
    state.health_log.database(database);
    state.health_log.redis(redis);
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

/// 200 while the instance serves; 503 from the moment SIGTERM arrives
/// ([`crate::infra::shutdown`]), while it still finishes what it was sent.
///
/// Readiness is this instance's own state only. PostgreSQL and Redis are
/// shared by every instance: were they part of it, one database outage would
/// take every instance out of the balancer at once, and platforms' callbacks
/// would meet the balancer's 503 instead of ours (the same status, but no log
/// line of what was refused, and a slower return once the database is back).
#[utoipa::path(get, path = "/readyz", tag = "public",
    responses((status = 200, description = "Serving: send requests here", body = api_types::api::Readiness),
        (status = 503, description = "Draining: send nothing new", body = api_types::api::Readiness)))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let (status, word) = if state.shutdown.is_draining() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining")
    } else {
        (StatusCode::OK, "ready")
    };
    (
        status,
        Json(Readiness {
            status: word.to_owned(),
        }),
    )
}
