//! Test support: a real app on a random port, a fresh database per test, a
//! per-test Redis key prefix, typed request helpers, signed callbacks, and
//! snapshots that prove an error changed nothing. Tests that stop or flush
//! Redis own one: [`testkit::OwnedRedis`].
//!
//! This module starts and restarts the app; the rest is split by what a test
//! does with it: [`shoppers`] (accounts and sessions), [`orders`], [`tokens`]
//! (request tokens, also as Redis holds them), [`paying`], [`callbacks`]
//! (signed platform results), [`refunds`] (the automatic ones), [`platform`]
//! (a `platform-sim` behind the app), [`db`] (rows read straight from the
//! test's database), [`scenarios`] (the set-ups many tests start from) and
//! [`seeds`] (rows written into a database no backend runs on).

mod callbacks;
mod db;
pub mod equivalence;
mod orders;
mod paying;
mod platform;
mod refunds;
mod scenarios;
pub mod seeds;
mod shoppers;
mod tokens;

pub use callbacks::{callback_body, new_callback_id, success_body};
pub use db::{Snapshot, count};
pub use paying::Payment;
pub use platform::{
    calls_identifying_us, our_user_agent, platform_keys, serve_platform_sim, silent_platform,
    spawn_app_paying_through, start_platform,
};
pub use refunds::{AutomaticRefund, post_refund, refunds_of, wait_until_refunds_settle};
pub use shoppers::{Account, PASSWORD};
pub use tokens::takeable;

use backend::config::{Config, PlatformKind};
use backend::http::limits::LimitsConfig;
use backend::startup::Application;
use callback_signing::CallbackSecret;
use reqwest::{Response, StatusCode};
use secrecy::SecretString;
use serde_json::Value;
use sqlx::PgPool;
use std::sync::Once;
use std::time::Duration;
use testkit::TestDatabase;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// The admin bearer token every test app uses.
pub const ADMIN_TOKEN: &str = "test-admin-token-of-32-characters";
/// The merchant API key every test app uses.
pub const MERCHANT_KEY: &str = "test-merchant-key-of-32-characters";
/// The HMAC key merchants' API keys are stored under in the tests.
pub const MERCHANT_KEY_SECRET: &str = "test-merchant-key-secret-of-32-characters";

/// An HTTP client that keeps cookies, as a browser does.
pub fn browser_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .cookie_store(true)
        .build()
        .expect("client builds")
}

static TRACING: Once = Once::new();

/// A running app and everything a test needs to talk to it.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub address: String,
    /// The test's own database.
    pub db: PgPool,
    /// Client for requests; it keeps cookies, and [`TestApp::create_account`]
    /// signs it in as the shopper it makes.
    pub http: reqwest::Client,
    /// Signs callbacks with the app's secret.
    pub webhook: CallbackSecret,
    /// The configuration the app was built with.
    pub config: Config,
    /// The app's phase: a test drains it as SIGTERM would.
    pub shutdown: backend::infra::shutdown::Shutdown,
    server: JoinHandle<std::io::Result<()>>,
    /// Dropped (with the database) after the server stops; `None` once handed on by a restart.
    database: Option<TestDatabase>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Starts the app with the defaults of the test suite.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the app with a sandbox platform that decides payments but posts no
/// callbacks (`SANDBOX_DROP_CALLBACKS`), for tests that post the platform's
/// callbacks themselves about a payment [`TestApp::hand_over`] made.
pub async fn spawn_app_without_callbacks() -> TestApp {
    spawn_app_with(|config| config.sandbox_drop_callbacks = true).await
}

/// Starts the app after `adjust` changed the configuration.
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_on(TestDatabase::new("checkout_test"), adjust).await
}

/// Starts the app on `database` (`DATABASE_URL` is its URL unless `adjust`
/// changes it); the database is dropped with the app.
pub async fn spawn_app_on(database: TestDatabase, adjust: impl FnOnce(&mut Config)) -> TestApp {
    TRACING.call_once(|| {
        if std::env::var("TEST_LOG").is_ok() {
            backend::infra::telemetry::init();
        }
    });
    let id = Uuid::new_v4().simple().to_string();
    let secret = CallbackSecret::generate();
    let mut config = Config {
        database_url: database.url().into(),
        redis_url: testkit::redis_url().into(),
        redis_key_prefix: format!("test:{id}:"),
        bind_addr: "127.0.0.1:0".parse().expect("valid address"),
        platform: Some(PlatformKind::Sandbox),
        webhook_secret: Some(SecretString::from(secret.expose())),
        admin_token: Some(SecretString::from(ADMIN_TOKEN)),
        merchant_api_key: Some(SecretString::from(MERCHANT_KEY)),
        merchant_key_secret: Some(SecretString::from(MERCHANT_KEY_SECRET)),
        sandbox_callback_delay_ms: 50,
        // Tests reconcile when they mean to (tests/api/reconcile.rs).
        reconcile_daily: false,
        // Per-shopper limits off: concurrency tests send many requests as one
        // shopper. The failure limits stay at their defaults; tests/limits.rs sets its own.
        limits: LimitsConfig {
            orders_per_shopper: 0,
            tokens_per_shopper: 0,
            pays_per_shopper: 0,
            ..LimitsConfig::default()
        },
        ..Config::default()
    };
    adjust(&mut config);
    start(config, database).await
}

async fn start(config: Config, database: TestDatabase) -> TestApp {
    let app = Application::build(config.clone())
        .await
        .expect("app builds");
    let address = format!("http://127.0.0.1:{}", app.port());
    let db = app.state().db.clone();
    let webhook = app.state().webhook.clone();
    let shutdown = app.shutdown();
    let server = tokio::spawn(app.run_until_stopped());
    TestApp {
        address,
        db,
        http: browser_client(),
        webhook,
        config,
        shutdown,
        server,
        database: Some(database),
    }
}

impl TestApp {
    /// Stops this instance and starts a new one on the same database and Redis:
    /// a backend restart, with all in-memory state gone.
    pub async fn restart(self) -> TestApp {
        self.restart_with(|_| {}).await
    }

    /// Stops the app and starts it again on the same database with its
    /// configuration changed by `adjust`.
    pub async fn restart_with(mut self, adjust: impl FnOnce(&mut Config)) -> TestApp {
        let mut config = self.config.clone();
        adjust(&mut config);
        let database = self
            .database
            .take()
            .expect("a running app owns its database");
        drop(self);
        start(config, database).await
    }

    /// True once the server has returned (after a drain).
    pub fn has_stopped(&self) -> bool {
        self.server.is_finished()
    }

    /// Full URL of a path.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// `GET` of any path, with [`TestApp::http`].
    pub async fn get(&self, path: &str) -> Response {
        self.http
            .get(self.url(path))
            .send()
            .await
            .expect("request sent")
    }

    /// `GET` of any path with [`TestApp::http`], expecting 200 and a JSON body.
    pub async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        let response = self.get(path).await;
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.expect("a JSON body")
    }

    /// Waits until `/healthz` says both PostgreSQL and Redis answer (after an outage).
    pub async fn wait_until_healthy(&self) {
        for _ in 0..200 {
            let healthy = self
                .http
                .get(self.url("/healthz"))
                .send()
                .await
                .is_ok_and(|r| r.status() == StatusCode::OK);
            if healthy {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the app did not become healthy within 10 s");
    }

    /// A connection to the app's Redis.
    pub async fn redis(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.config.redis_url.expose())
            .expect("redis url")
            .get_multiplexed_async_connection()
            .await
            .expect("redis")
    }
}

/// Reads an error answer and returns its code, checking the shared error shape.
pub async fn error_code(response: Response) -> String {
    let body: Value = response.json().await.expect("JSON error body");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "error without message: {body}");
    body["error"]["code"]
        .as_str()
        .expect("error code")
        .to_owned()
}

/// The `fields` of each JSON log line of `output` whose message is `message`.
pub(crate) fn logged(output: &str, message: &str) -> Vec<Value> {
    output
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|line| line["fields"].clone())
        .filter(|fields| fields["message"] == message)
        .collect()
}
