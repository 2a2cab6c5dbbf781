//! Redis over TLS: `REDIS_URL=rediss://...` (a managed Redis that takes only
//! encrypted connections) reaches Redis with TLS, verifying its certificate
//! against the system's roots (`SSL_CERT_FILE` names another authority).
//! Redis serves TLS only here (`--port 0`), so a token that went through went
//! through TLS. Through Redis Sentinel the same URL scheme asks for TLS to the
//! sentinels and to the primary they name; [`RedisSentinelGroup::start_tls`]
//! serves both only on TLS.

use crate::helpers::logged;
use crate::logs::PaidOrder;
use backend::env;
use reqwest::StatusCode;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use testkit::{BackendProcess, OwnedRedis, RedisSentinelGroup, TestDatabase};

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
    let (status, body, _) = backend_health(vec![(env::REDIS_URL.into(), redis.url())]).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        (body["database"].as_str(), body["redis"].as_str()),
        (Some("ok"), Some("down"))
    );
    assert_eq!(
        redis.calls("ping").await.expect("stats"),
        0,
        "a command reached Redis past an untrusted certificate"
    );
}

/// The backend's environment for Redis through `group`'s sentinels. The host
/// of `REDIS_URL` is not used with sentinels (nothing listens there); its
/// scheme asks for TLS. `trusted` names the group's authority in `SSL_CERT_FILE`.
fn through_tls_sentinels(group: &RedisSentinelGroup, trusted: bool) -> Vec<(String, String)> {
    let mut vars = vec![
        (env::REDIS_URL.into(), "rediss://127.0.0.1:1/0".into()),
        (
            env::REDIS_SENTINELS.into(),
            group.sentinel_addrs().join(","),
        ),
        (env::REDIS_MASTER_NAME.into(), group.master_name().into()),
    ];
    if trusted {
        let ca = group.ca_file().expect("a TLS group");
        vars.push(("SSL_CERT_FILE".into(), ca.display().to_string()));
    }
    vars
}

#[tokio::test]
async fn through_tls_sentinels_tokens_reach_the_tls_primary_before_and_after_a_failover() {
    let mut group = RedisSentinelGroup::start_tls()
        .await
        .expect("a TLS-only sentinel group");
    for round in ["before the failover", "after the failover"] {
        let primary = group.primary_port().await.expect("the primary");
        group.reset_stats().await.expect("stats reset");
        let paid = PaidOrder::pay(
            "checkout_test_redis_sentinel_tls",
            through_tls_sentinels(&group, true),
        )
        .await;
        let (set, eval) = (
            group.calls(primary, "set").await.expect("stats"),
            group.calls(primary, "eval").await.expect("stats"),
        );
        assert!(
            set >= 1 && eval >= 1,
            "{round}: the token did not go through the TLS primary on port {primary}: \
             {set} SET, {eval} EVAL"
        );
        let found = format!("127.0.0.1:{primary}");
        assert!(
            paid.output()
                .lines()
                .any(|line| line.contains("redis primary found through sentinel")
                    && line.contains(&found)),
            "{round}: no log line names the primary on port {primary}"
        );
        if round == "before the failover" {
            group.kill_primary().await.expect("the primary killed");
            group
                .wait_for_failover(Duration::from_secs(30))
                .await
                .expect("the replica promoted");
        }
    }
}

/// `/healthz` of a backend process run with `extra_env` (JSON logs, its own
/// database), stopped right after, and its log lines by then.
async fn backend_health(extra_env: Vec<(String, String)>) -> (StatusCode, Value, String) {
    let database = TestDatabase::new("checkout_test_redis_tls");
    let log = testkit::target_dir().join(format!("test-logs/{}.log", database.name()));
    let mut vars = vec![
        (env::PLATFORM.into(), "sandbox".into()),
        (env::DATABASE_URL.into(), database.url()),
        (env::LOG_FORMAT.into(), "json".into()),
    ];
    vars.extend(extra_env);
    let mut backend =
        BackendProcess::start(Path::new(env!("CARGO_BIN_EXE_backend")), vars, log.clone())
            .await
            .expect("the backend starts without Redis");
    let health = reqwest::get(format!("{}/healthz", backend.url()))
        .await
        .expect("sent");
    let status = health.status();
    let body: Value = health.json().await.expect("health");
    backend.terminate();
    let output = std::fs::read_to_string(&log).expect("the backend's output");
    (status, body, output)
}

#[tokio::test]
async fn tls_sentinels_nobody_vouches_for_are_redis_down_not_a_plain_connection() {
    let group = RedisSentinelGroup::start_tls()
        .await
        .expect("a TLS-only sentinel group");
    // Nothing listens in plain TCP, so a backend that reaches Redis at all
    // reached it over TLS; without the authority it must not reach it.
    let (status, body, output) = backend_health(through_tls_sentinels(&group, false)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        (body["database"].as_str(), body["redis"].as_str()),
        (Some("ok"), Some("down"))
    );
    // The operator reads why in the log.
    let down = logged(&output, "health check: a part we depend on is down");
    assert!(
        down.len() == 1
            && down[0]["part"] == "redis"
            && down[0]["reason"]
                .as_str()
                .is_some_and(|reason| reason.contains("certificate")),
        "the log does not say the certificate was refused: {down:?}"
    );
    // The same group, its authority trusted: the refusal was the certificate's.
    let (status, body, _) = backend_health(through_tls_sentinels(&group, true)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["redis"].as_str(), Some("ok"));
}
