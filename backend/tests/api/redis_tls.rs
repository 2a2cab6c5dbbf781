//! Redis over TLS: `REDIS_URL=rediss://...` (a managed Redis that takes only
//! encrypted connections) reaches Redis with TLS, verifying its certificate
//! against the system's roots (`SSL_CERT_FILE` names another authority).
//! Redis serves TLS only here (`--port 0`), so a token that went through went
//! through TLS.

use crate::logs::PaidOrder;
use backend::env;
use reqwest::StatusCode;
use serde_json::Value;
use std::path::Path;
use testkit::{BackendProcess, OwnedRedis, TestDatabase};

/// A redis-server that speaks only TLS, its stats counted from zero.
async fn tls_redis() -> OwnedRedis {
    let redis = OwnedRedis::start_tls().await.expect("a TLS redis-server");
    // Its start-up PING is not the backend's.
    redis.reset_stats().await.expect("stats reset");
    redis
}

/// Its CA file as an environment value.
fn ca_file(redis: &OwnedRedis) -> String {
    redis.ca_file().expect("a TLS Redis").display().to_string()
}

#[tokio::test]
async fn with_a_rediss_url_tokens_go_through_a_tls_only_redis() {
    let redis = tls_redis().await;
    let _paid = PaidOrder::pay(
        "checkout_test_redis_tls",
        vec![
            (env::REDIS_URL.into(), redis.url()),
            ("SSL_CERT_FILE".into(), ca_file(&redis)),
        ],
    )
    .await;
    // Issued with SET, consumed with the guarded GETDEL script (EVAL).
    let (set, eval) = (
        redis.calls("set").await.expect("stats"),
        redis.calls("eval").await.expect("stats"),
    );
    assert!(
        set >= 1 && eval >= 1,
        "the token did not go through the TLS Redis: {set} SET, {eval} EVAL"
    );
}

#[tokio::test]
async fn a_redis_certificate_nobody_vouches_for_is_redis_down_not_a_plain_connection() {
    let redis = tls_redis().await;
    let database = TestDatabase::new("checkout_test_redis_tls");
    let log = testkit::target_dir().join(format!("test-logs/{}.log", database.name()));
    let mut backend = BackendProcess::start(
        Path::new(env!("CARGO_BIN_EXE_backend")),
        vec![
            (env::PLATFORM.into(), "sandbox".into()),
            (env::DATABASE_URL.into(), database.url()),
            (env::REDIS_URL.into(), redis.url()),
        ],
        log,
    )
    .await
    .expect("the backend starts without Redis");
    let health = reqwest::get(format!("{}/healthz", backend.url()))
        .await
        .expect("sent");
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = health.json().await.expect("health");
    assert_eq!(
        (body["database"].as_str(), body["redis"].as_str()),
        (Some("ok"), Some("down"))
    );
    backend.terminate();
    assert_eq!(
        redis.calls("ping").await.expect("stats"),
        0,
        "a command reached Redis past an untrusted certificate"
    );
}
