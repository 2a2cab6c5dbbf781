//! The request-token store behind Redis Sentinel: it finds the primary through
//! the sentinels, answers 503 while a failover runs, follows the promoted
//! replica without a restart, and a token whose delete the failover lost still
//! cannot pay twice (the database floor, not Redis, is the guarantee).
//!
//! Each test owns a [`RedisSentinelGroup`]: a primary, a replica and three
//! sentinels on their own ports. `REDIS_URL` points at a port nothing listens
//! on, so the tokens can only be reached through the sentinels.

use crate::helpers::{TestApp, error_code, spawn_app_with, takeable};
use api_types::OrderStatus;
use backend::config::Config;
use reqwest::StatusCode;
use serde_json::Value;
use std::time::{Duration, Instant};
use testkit::RedisSentinelGroup;
use uuid::Uuid;

/// Longest one request may take while the primary is gone: a 503 comes fast.
const FAIL_FAST: Duration = Duration::from_secs(3);
/// Longest the sentinels may take to promote the replica.
const FAILOVER_TIMEOUT: Duration = Duration::from_secs(30);

fn through_sentinels(group: &RedisSentinelGroup) -> impl FnOnce(&mut Config) + '_ {
    move |config| {
        config.redis_sentinels = group.sentinel_addrs().join(",");
        config.redis_master_name = group.master_name().to_owned();
        // Only the credentials and the database of REDIS_URL count with sentinels:
        // nothing listens on this port.
        config.redis_url = "redis://127.0.0.1:1/0".into();
    }
}

async fn connect(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("connects to the redis node")
}

/// What the node at `url` holds under the token's key.
async fn stored_binding(url: &str, key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query_async(&mut connect(url).await)
        .await
        .expect("GET")
}

/// The token's binding on the node at `url` if a pay could still take it:
/// `None` when the key is gone or holds only the in-flight marker a pay
/// leaves when it takes the token.
async fn takeable_binding(url: &str, key: &str) -> Option<String> {
    takeable(stored_binding(url, key).await)
}

/// Asks for a request token for `order_no` every 100 ms until one is issued:
/// each try answers within [`FAIL_FAST`], either 201 or 503
/// `TOKEN_STORE_UNAVAILABLE` with `Retry-After`, and a token comes within
/// [`FAILOVER_TIMEOUT`] of `since`. Returns it and how many tries got 503.
async fn issue_until_created(app: &TestApp, order_no: &str, since: Instant) -> (Uuid, usize) {
    let mut unavailable = 0;
    loop {
        let sent = Instant::now();
        let issue = app.post_request_token(order_no).await;
        let took = sent.elapsed();
        assert!(took < FAIL_FAST, "a token request took {took:?}");
        match issue.status() {
            StatusCode::CREATED => {
                let body: api_types::api::RequestToken = issue.json().await.expect("token body");
                return (body.request_token, unavailable);
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert!(issue.headers().contains_key("retry-after"));
                assert_eq!(error_code(issue).await, "TOKEN_STORE_UNAVAILABLE");
                unavailable += 1;
            }
            other => panic!("a token request answered {other}"),
        }
        assert!(
            since.elapsed() < FAILOVER_TIMEOUT,
            "token issue did not recover within {FAILOVER_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_backend_starts_while_every_sentinel_is_down_and_answers_503_fast() {
    let down: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", testkit::free_port().expect("a free port")))
        .collect();
    let app = spawn_app_with(|config| {
        config.redis_sentinels = down.join(",");
        config.redis_url = "redis://127.0.0.1:1/0".into();
    })
    .await;
    let (_, order) = app.account_with_order(10_000, 2_500).await;

    for _ in 0..3 {
        let sent = Instant::now();
        let issue = app.post_request_token(&order.order_no).await;
        let took = sent.elapsed();
        assert!(took < FAIL_FAST, "an issue took {took:?}");
        assert_eq!(issue.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error_code(issue).await, "TOKEN_STORE_UNAVAILABLE");
    }
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn tokens_follow_a_sentinel_failover_without_a_restart_and_answer_503_meanwhile() {
    let mut group = RedisSentinelGroup::start()
        .await
        .expect("a redis sentinel group");
    let app = spawn_app_with(through_sentinels(&group)).await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;

    // Issued and consumed through the sentinels, on the primary they name.
    let token = app.request_token(&order.order_no).await;
    let primary = group
        .primary_url()
        .await
        .expect("the sentinels name a primary");
    assert!(
        stored_binding(&primary, &app.token_key(token))
            .await
            .is_some(),
        "the token is stored on the primary the sentinels name"
    );
    let first = app.pay(&order.order_no, token).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first: Value = first.json().await.expect("json");
    assert_eq!(
        app.wait_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );
    assert!(
        takeable_binding(&primary, &app.token_key(token))
            .await
            .is_none(),
        "the pay consumed the token on the primary"
    );

    let second = app.create_order(&account, 1_000).await;
    let killed = group.kill_primary().await.expect("kills the primary");
    let killed_at = Instant::now();

    // While the failover runs every issue fails fast with 503, until the
    // promoted replica answers; the same backend, never restarted.
    let (fresh, unavailable) = issue_until_created(&app, &second.order_no, killed_at).await;
    let recovered_after = killed_at.elapsed();
    let promoted = group
        .wait_for_failover(FAILOVER_TIMEOUT)
        .await
        .expect("the sentinels promote the replica");
    eprintln!(
        "primary {killed} killed; {promoted} promoted; token issue answered 503 {unavailable} times \
         and worked again {recovered_after:?} after the kill"
    );
    assert_ne!(promoted, killed);
    assert!(unavailable > 0, "no 503 while the primary was gone");
    assert!(
        stored_binding(&group.replica_url(), &app.token_key(fresh))
            .await
            .is_some(),
        "the new token is on the promoted replica"
    );

    // Pay works again, and the old token's pay is replayed from the database.
    let paid = app.pay(&second.order_no, fresh).await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED);
    assert!(paid.headers().get("idempotent-replayed").is_none());
    assert_eq!(
        app.wait_until_final(&second.order_no).await.status,
        OrderStatus::Paid
    );
    let replay = app.pay(&order.order_no, token).await;
    assert_eq!(replay.status(), StatusCode::ACCEPTED);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let replay: Value = replay.json().await.expect("json");
    assert_eq!(replay, first);

    assert_eq!(app.count("payment_attempts").await, 2);
    assert_eq!(app.balance(&account).await, 10_000 - 2_500 - 1_000);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_token_consumed_on_the_old_primary_that_reappears_after_failover_still_does_not_pay_twice()
 {
    let mut group = RedisSentinelGroup::start()
        .await
        .expect("a redis sentinel group");
    // No callbacks: the order stays PENDING with its money held, so the second
    // use of the token reaches the attempt itself (not "order already paid").
    let app = spawn_app_with(|config| {
        through_sentinels(&group)(config);
        config.sandbox_drop_callbacks = true;
    })
    .await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let token = app.request_token(&order.order_no).await;
    let key = app.token_key(token);
    let primary = group
        .primary_url()
        .await
        .expect("the sentinels name a primary");
    let binding = stored_binding(&primary, &key)
        .await
        .expect("the token's binding on the primary");

    let first = app.pay(&order.order_no, token).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first: Value = first.json().await.expect("json");
    assert!(
        takeable_binding(&primary, &key).await.is_none(),
        "the pay consumed the token (GETDEL) on the old primary"
    );

    let killed = group.kill_primary().await.expect("kills the primary");
    let promoted = group
        .wait_for_failover(FAILOVER_TIMEOUT)
        .await
        .expect("the sentinels promote the replica");
    assert_ne!(promoted, killed);
    // Replication is asynchronous: a primary that dies right after the GETDEL
    // may never send it to its replica, and the promoted replica then still
    // holds the token, as issued. Made deterministic here by writing that state
    // back: the binding, under its key, with its TTL.
    let new_primary = group.replica_url();
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(&binding)
        .arg("EX")
        .arg(app.config.token_ttl_secs)
        .query_async(&mut connect(&new_primary).await)
        .await
        .expect("SET on the promoted replica");

    // The backend, never restarted, follows the new primary.
    app.wait_until_healthy().await;
    let again = app.pay(&order.order_no, token).await;

    // Redis handed the token out a second time (it is gone again from the new
    // primary), and the database floor turned that into a replay of the one
    // attempt: one attempt per order, joined, not a second payment.
    assert!(
        takeable_binding(&new_primary, &key).await.is_none(),
        "the second pay consumed the reappeared token on the new primary"
    );
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.expect("json");
    assert_eq!(again, first);

    let attempts: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "SELECT payment_id, request_token FROM payment_attempts WHERE order_no = $1",
    )
    .bind(&order.order_no)
    .fetch_all(&app.db)
    .await
    .expect("attempts");
    assert_eq!(
        attempts.len(),
        1,
        "exactly one payment attempt: {attempts:?}"
    );
    assert_eq!(attempts[0].1, token);
    assert_eq!(
        first["payment_id"].as_str(),
        Some(attempts[0].0.to_string().as_str())
    );
    assert_eq!(app.count("payment_attempts").await, 1);
    assert_eq!(app.held(&account).await, 2_500, "the amount is held once");
    assert_eq!(app.balance(&account).await, 10_000, "nothing charged yet");
    assert_eq!(app.count("payment_ledger").await, 0);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_graceful_sentinel_failover_demoting_the_primary_is_followed_and_keeps_the_tokens() {
    let mut group = RedisSentinelGroup::start()
        .await
        .expect("a redis sentinel group");
    let app = spawn_app_with(through_sentinels(&group)).await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let second = app.create_order(&account, 1_000).await;
    let token = app.request_token(&order.order_no).await;
    // Replicated before the failover starts: the replica holds the token too.
    let _: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2_000)
        .query_async(&mut connect(&group.primary_url().await.expect("primary")).await)
        .await
        .expect("WAIT");

    // The old primary stays up, demoted to a replica (the group waits for
    // that): the backend's connection to it answers READONLY, and the backend
    // asks the sentinels again. A write that reaches the old primary before the
    // sentinels demote it is lost with its resync: Redis Sentinel's window,
    // which the database floor covers (a lost token only answers TOKEN_INVALID).
    let demoted = group.manual_failover().await.expect("SENTINEL FAILOVER");
    let promoted = group
        .wait_for_failover(FAILOVER_TIMEOUT)
        .await
        .expect("the sentinels promote the replica");
    assert_ne!(promoted, demoted);

    let (fresh, _) = issue_until_created(&app, &second.order_no, Instant::now()).await;
    let promoted_url = format!("redis://127.0.0.1:{promoted}");
    assert!(
        stored_binding(&promoted_url, &app.token_key(fresh))
            .await
            .is_some(),
        "the new token is on the promoted node"
    );

    // The token issued before the failover pays once, on the new primary.
    let paid = app.pay(&order.order_no, token).await;
    assert_eq!(paid.status(), StatusCode::ACCEPTED);
    assert!(paid.headers().get("idempotent-replayed").is_none());
    assert!(
        takeable_binding(&promoted_url, &app.token_key(token))
            .await
            .is_none(),
        "consumed on the new primary"
    );
    assert_eq!(
        app.wait_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );
    assert_eq!(app.count("payment_attempts").await, 1);
    app.assert_invariants().await;
}
