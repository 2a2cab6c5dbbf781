//! Test support: a real app on a random port, a fresh database per test, a
//! per-test Redis key prefix, typed request helpers, signed callbacks, and
//! snapshots that prove an error changed nothing. Tests that stop or flush
//! Redis own one: [`testkit::OwnedRedis`].

use api_types::Currency;
use api_types::api::{Order, RequestToken, ShopperCreated};
use backend::config::{Config, PlatformKind};
use backend::http::limits::LimitsConfig;
use backend::invariants;
use backend::startup::Application;
use callback_signing::CallbackSecret;
use reqwest::{Response, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
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
/// The password of every shopper [`TestApp::create_account`] makes.
pub const PASSWORD: &str = "a-test-password-long-enough";

/// A shopper's account as the tests use it: the shopper, their one account,
/// and how to sign in as them.
#[derive(Debug, Clone)]
pub struct Account {
    /// The account.
    pub account_id: Uuid,
    /// Its currency.
    pub currency: Currency,
    /// The shopper who owns it.
    pub shopper_id: Uuid,
    /// Their sign-in email.
    pub email: String,
}

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

/// A `platform-sim` serving on its own port, signing with `secret`, deciding
/// each payment after `processing_delay`, retrying callbacks every 100 ms.
pub async fn start_platform(
    secret: &CallbackSecret,
    chaos: platform_sim::Chaos,
    processing_delay: Duration,
) -> (platform_sim::Simulator, String) {
    serve_platform_sim(chaos, processing_delay, |config| {
        config.secret = secret.clone();
    })
    .await
}

/// A `platform-sim` on its own port deciding each payment after
/// `processing_delay` and retrying notifications every 100 ms, after `adjust`
/// set the rest (which platform it speaks); it and its base URL.
pub async fn serve_platform_sim(
    chaos: platform_sim::Chaos,
    processing_delay: Duration,
    adjust: impl FnOnce(&mut platform_sim::SimConfig),
) -> (platform_sim::Simulator, String) {
    let mut config = platform_sim::SimConfig {
        schedule: platform_sim::Schedule::Fixed {
            interval: Duration::from_millis(100),
            count: 20,
        },
        processing_delay,
        chaos,
        ..platform_sim::SimConfig::default()
    };
    adjust(&mut config);
    let simulator = platform_sim::Simulator::new(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let router = simulator.router();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (simulator, url)
}

/// A platform that decides payments but posts no notifications of its own:
/// the test posts them.
pub fn silent_platform() -> platform_sim::Chaos {
    platform_sim::Chaos {
        drop_callbacks: true,
        ..platform_sim::Chaos::default()
    }
}

/// One merchant and platform key set per test binary (RSA key generation is
/// the slow part), written to files as `platform-sim keys DIR` writes them.
pub fn platform_keys() -> &'static (platform_protocols::keys::LocalKeys, std::path::PathBuf) {
    static KEYS: std::sync::OnceLock<(platform_protocols::keys::LocalKeys, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "checkout-test-platform-keys-{}",
            std::process::id()
        ));
        let generated = platform_protocols::keys::generate(&dir).expect("a key set is written");
        (generated, dir)
    })
}

/// The `User-Agent` the backend must send on every platform request: the
/// product and its version, then the operating system and architecture.
pub fn our_user_agent() -> String {
    format!(
        "exactly-once-checkout/{} ({}/{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// The requests `simulator` received on paths starting with `prefix` (the
/// backend's calls to the platform), as `METHOD path`, after checking that
/// every one said who sent it ([`our_user_agent`]) and that it reads JSON.
pub fn calls_identifying_us(simulator: &platform_sim::Simulator, prefix: &str) -> Vec<String> {
    let agent = our_user_agent();
    simulator
        .requests()
        .all()
        .into_iter()
        .filter(|request| request.path.starts_with(prefix))
        .map(|request| {
            assert_eq!(
                request.user_agent.as_deref(),
                Some(agent.as_str()),
                "{request:?}"
            );
            assert_eq!(
                request.accept.as_deref(),
                Some("application/json"),
                "{request:?}"
            );
            format!("{} {}", request.method, request.path)
        })
        .collect()
}

/// The app paying through a `platform-sim` over HTTP (`PLATFORM=remote`) with
/// `chaos`, deciding after `processing_delay`; `adjust` changes the rest.
pub async fn spawn_app_paying_through(
    chaos: platform_sim::Chaos,
    processing_delay: Duration,
    adjust: impl FnOnce(&mut Config),
) -> (TestApp, platform_sim::Simulator) {
    let secret = CallbackSecret::generate();
    let (simulator, url) = start_platform(&secret, chaos, processing_delay).await;
    let app = spawn_app_with(|c| {
        c.webhook_secret = Some(SecretString::from(secret.expose()));
        c.platform = Some(PlatformKind::Remote);
        c.platform_url = Some(url);
        adjust(c);
    })
    .await;
    (app, simulator)
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
    pub async fn restart(mut self) -> TestApp {
        let config = self.config.clone();
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

    /// `POST /api/admin/shoppers` with any JSON.
    pub async fn post_shopper(&self, body: &Value) -> Response {
        self.http
            .post(self.url("/api/admin/shoppers"))
            .bearer_auth(ADMIN_TOKEN)
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// A new shopper with one account of `balance_cents`, and [`TestApp::http`]
    /// signed in as them.
    pub async fn create_account(&self, balance_cents: i64, currency: &str) -> Account {
        let account = self.create_shopper(balance_cents, currency).await;
        self.sign_in_as(&self.http, &account).await;
        account
    }

    /// A new shopper with one account, nobody signed in as them.
    pub async fn create_shopper(&self, balance_cents: i64, currency: &str) -> Account {
        let email = format!("shopper-{}@shop.test", Uuid::new_v4().simple());
        let response = self
            .post_shopper(&json!({
                "email": email,
                "password": PASSWORD,
                "balance_cents": balance_cents,
                "currency": currency,
            }))
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let created: ShopperCreated = response.json().await.expect("shopper body");
        Account {
            account_id: created.account_id,
            currency: currency.parse().expect("a currency"),
            shopper_id: created.shopper_id,
            email,
        }
    }

    /// `POST /api/session` with any JSON, from `client`.
    pub async fn post_session(&self, client: &reqwest::Client, body: &Value) -> Response {
        client
            .post(self.url("/api/session"))
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// Signs `client` in as the shopper of `account`.
    pub async fn sign_in_as(&self, client: &reqwest::Client, account: &Account) {
        let response = self
            .post_session(
                client,
                &json!({"email": account.email, "password": PASSWORD}),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    /// A new client, signed in as the shopper of `account`.
    pub async fn client_of(&self, account: &Account) -> reqwest::Client {
        let client = browser_client();
        self.sign_in_as(&client, account).await;
        client
    }

    /// Adds or reprices a product through the admin API.
    pub async fn put_product(&self, sku: &str, name: &str, price_cents: i64, currency: &str) {
        let response = self
            .http
            .put(self.url(&format!("/api/admin/products/{sku}")))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"name": name, "price_cents": price_cents, "currency": currency}))
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status(), StatusCode::OK);
    }

    /// `POST /api/orders` with any JSON and a fresh `Idempotency-Key`, as the signed-in shopper.
    pub async fn post_order(&self, body: &Value) -> Response {
        self.http
            .post(self.url("/api/orders"))
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// `POST /api/merchant/orders` with any JSON and this `Idempotency-Key`.
    pub async fn post_merchant_order(&self, key: &str, body: &Value) -> Response {
        self.http
            .post(self.url("/api/merchant/orders"))
            .bearer_auth(MERCHANT_KEY)
            .header("idempotency-key", key)
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// An order of `amount_cents` on the account, placed through the merchant API.
    pub async fn create_order(&self, account: &Account, amount_cents: i64) -> Order {
        let response = self
            .post_merchant_order(
                &Uuid::new_v4().to_string(),
                &json!({
                    "shopper_id": account.shopper_id,
                    "amount_cents": amount_cents,
                    "currency": account.currency,
                    "description": "test order",
                }),
            )
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        response.json().await.expect("order body")
    }

    /// A CNY shopper (WeChat Pay and Alipay take yuan only) with one PENDING
    /// order of `amount` fen, [`TestApp::http`] signed in as them.
    pub async fn cny_order(&self, balance: i64, amount: i64) -> (Account, Order) {
        let account = self.create_account(balance, "CNY").await;
        let order = self.create_order(&account, amount).await;
        (account, order)
    }

    /// Pays the order as its shopper and waits until the platform has it (the
    /// attempt SUBMITTED, with or without the platform's id); our payment id.
    pub async fn submitted_payment(&self, order: &Order) -> Uuid {
        let token = self.request_token(&order.order_no).await;
        assert_eq!(
            self.pay(&order.order_no, token).await.status(),
            StatusCode::ACCEPTED
        );
        for _ in 0..200 {
            let row: Option<(Uuid,)> = sqlx::query_as(
                "SELECT payment_id FROM payment_attempts WHERE order_no = $1 AND status = 'SUBMITTED'",
            )
            .bind(&order.order_no)
            .fetch_optional(&self.db)
            .await
            .expect("attempt");
            if let Some((payment_id,)) = row {
                return payment_id;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the payment of {} was not handed over", order.order_no);
    }

    /// The payment link the platform gave for the attempt, once the shopper's
    /// page can draw it: `payment-code.svg` answers an SVG.
    pub async fn qr_code_shown(&self, order: &Order, payment_id: Uuid) -> String {
        let code: Option<String> =
            sqlx::query_scalar("SELECT qr_code FROM payment_attempts WHERE payment_id = $1")
                .bind(payment_id)
                .fetch_one(&self.db)
                .await
                .expect("attempt");
        let code = code.expect("the hand-over gave a payment link");
        let svg = self
            .get(&format!("/api/orders/{}/payment-code.svg", order.order_no))
            .await;
        assert_eq!(svg.status(), StatusCode::OK);
        assert_eq!(svg.headers()["content-type"], "image/svg+xml");
        assert!(svg.text().await.expect("body").contains("<svg"));
        code
    }

    /// A shopper with `balance` EUR cents and one PENDING order of `amount`,
    /// [`TestApp::http`] signed in as them.
    pub async fn account_with_order(&self, balance: i64, amount: i64) -> (Account, Order) {
        let account = self.create_account(balance, "EUR").await;
        let order = self.create_order(&account, amount).await;
        (account, order)
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

    /// `GET /api/orders/{order_no}`.
    pub async fn get_order(&self, order_no: &str) -> Response {
        self.http
            .get(self.url(&format!("/api/orders/{order_no}")))
            .send()
            .await
            .expect("request sent")
    }

    /// The order as the API reports it now.
    pub async fn order(&self, order_no: &str) -> Order {
        let response = self.get_order(order_no).await;
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.expect("order body")
    }

    /// `POST /api/orders/{order_no}/request-token`.
    pub async fn post_request_token(&self, order_no: &str) -> Response {
        self.http
            .post(self.url(&format!("/api/orders/{order_no}/request-token")))
            .send()
            .await
            .expect("request sent")
    }

    /// A fresh request token for the order.
    pub async fn request_token(&self, order_no: &str) -> Uuid {
        let response = self.post_request_token(order_no).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: RequestToken = response.json().await.expect("token body");
        body.request_token
    }

    /// `count` orders of `amount_cents` on the account, each with a fresh request token.
    pub async fn orders_with_tokens(
        &self,
        account: &Account,
        count: usize,
        amount_cents: i64,
    ) -> Vec<(Order, Uuid)> {
        let mut orders = Vec::with_capacity(count);
        for _ in 0..count {
            let order = self.create_order(account, amount_cents).await;
            let token = self.request_token(&order.order_no).await;
            orders.push((order, token));
        }
        orders
    }

    /// Pays every order with its token, all at once; the answers in the same order.
    pub async fn pay_at_once(&self, orders: &[(Order, Uuid)]) -> Vec<Response> {
        futures::future::join_all(
            orders
                .iter()
                .map(|(order, token)| self.pay(&order.order_no, *token)),
        )
        .await
    }

    /// `POST /api/orders/{order_no}/pay` with the token.
    pub async fn pay(&self, order_no: &str, token: Uuid) -> Response {
        self.pay_raw(order_no, &json!({"request_token": token}).to_string())
            .await
    }

    /// `POST /api/orders/{order_no}/pay` with any body.
    pub async fn pay_raw(&self, order_no: &str, body: &str) -> Response {
        self.http
            .post(self.url(&format!("/api/orders/{order_no}/pay")))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("request sent")
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

    /// Waits until the order leaves PENDING (the sandbox's callback arrived).
    pub async fn wait_until_final(&self, order_no: &str) -> Order {
        for _ in 0..200 {
            let order = self.order(order_no).await;
            if order.status.is_final() {
                return order;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("order {order_no} stayed PENDING for 10 s");
    }

    /// Takes a token, pays the order (which must answer 202) and waits until
    /// its result arrives: what a shopper's one press of "Pay now" does.
    pub async fn pay_until_final(&self, order_no: &str) -> Order {
        let token = self.request_token(order_no).await;
        let response = self.pay(order_no, token).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "pay {order_no}");
        self.wait_until_final(order_no).await
    }

    /// Pays the order as its shopper (the signed-in [`TestApp::http`]) and
    /// waits until the platform accepted the payment: the attempt is
    /// `SUBMITTED` with the platform's payment id recorded. Callbacks naming
    /// the returned [`Payment`] are about this order's attempt. Needs an app
    /// whose platform posts no callbacks of its own ([`spawn_app_without_callbacks`]).
    pub async fn hand_over(&self, order: &Order) -> Payment {
        assert!(
            self.config.sandbox_drop_callbacks,
            "hand_over needs an app from spawn_app_without_callbacks: the sandbox would post its own callback"
        );
        let token = self.request_token(&order.order_no).await;
        let response = self.pay(&order.order_no, token).await;
        assert_eq!(
            response.status(),
            StatusCode::ACCEPTED,
            "pay {}",
            order.order_no
        );
        for _ in 0..200 {
            let row: Option<(Uuid, Option<String>)> = sqlx::query_as(
                "SELECT payment_id, platform_payment_id FROM payment_attempts
                 WHERE order_no = $1 AND status = 'SUBMITTED'",
            )
            .bind(&order.order_no)
            .fetch_optional(&self.db)
            .await
            .expect("attempt");
            if let Some((payment_id, Some(platform_payment_id))) = row {
                return Payment {
                    order: order.clone(),
                    payment_id,
                    platform_payment_id,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the payment of {} was not handed over within 10 s",
            order.order_no
        );
    }

    /// Posts a callback signed now with the app's secret.
    pub async fn post_callback(&self, callback_id: &str, body: &str) -> Response {
        let signed = self
            .webhook
            .sign_now(callback_id, body.as_bytes())
            .expect("signs");
        self.post_callback_with_headers(
            body,
            callback_id,
            &signed.timestamp.to_string(),
            &signed.signature,
        )
        .await
    }

    /// Posts a callback with exactly these signature headers.
    pub async fn post_callback_with_headers(
        &self,
        body: &str,
        callback_id: &str,
        timestamp: &str,
        signature: &str,
    ) -> Response {
        self.http
            .post(self.url("/api/payments/callback"))
            .header("content-type", "application/json")
            .header("webhook-id", callback_id)
            .header("webhook-timestamp", timestamp)
            .header("webhook-signature", signature)
            .body(body.to_owned())
            .send()
            .await
            .expect("request sent")
    }

    /// The current balance of an account, read from the database.
    pub async fn balance(&self, account: &Account) -> i64 {
        sqlx::query_scalar("SELECT balance_cents FROM accounts WHERE account_id = $1")
            .bind(account.account_id)
            .fetch_one(&self.db)
            .await
            .expect("balance")
    }

    /// What an account holds for payments in flight, read from the database.
    pub async fn held(&self, account: &Account) -> i64 {
        sqlx::query_scalar("SELECT held_cents FROM accounts WHERE account_id = $1")
            .bind(account.account_id)
            .fetch_one(&self.db)
            .await
            .expect("held")
    }

    /// Seconds the request token has left in Redis as a token a pay can still
    /// take; -2 when it is not there, or only its in-flight marker is (taken).
    pub async fn token_ttl(&self, token: Uuid) -> i64 {
        let mut conn = self.redis().await;
        let key = self.token_key(token);
        let value: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("get");
        if takeable(value).is_none() {
            return -2;
        }
        redis::cmd("TTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("ttl")
    }

    /// The Redis key the app keeps `token` under.
    pub fn token_key(&self, token: Uuid) -> String {
        format!(
            "{}token:{}",
            self.config.redis_key_prefix,
            token.as_hyphenated()
        )
    }

    /// A connection to the app's Redis.
    pub async fn redis(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.config.redis_url.expose())
            .expect("redis url")
            .get_multiplexed_async_connection()
            .await
            .expect("redis")
    }

    /// Rows in a table (name from the test code only).
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&self.db)
            .await
            .expect("count")
    }

    /// Anomaly kinds recorded for an order.
    pub async fn anomalies(&self, order_no: &str) -> Vec<String> {
        sqlx::query_scalar("SELECT kind FROM anomalies WHERE order_no = $1 ORDER BY anomaly_id")
            .bind(order_no)
            .fetch_all(&self.db)
            .await
            .expect("anomalies")
    }

    /// The automatic refunds of an order, waiting (up to 20 s) until none is
    /// PENDING: the platform accepted and settled each, or refused it.
    pub async fn settled_automatic_refunds(&self, order_no: &str) -> Vec<AutomaticRefund> {
        self.automatic_refunds_once(order_no, "status <> 'PENDING'")
            .await
    }

    /// The automatic refunds of an order, waiting (up to 20 s) until the
    /// platform accepted (or refused) each: for apps whose platform posts no
    /// callbacks, where a refund stays PENDING until the query asks.
    pub async fn handed_over_automatic_refunds(&self, order_no: &str) -> Vec<AutomaticRefund> {
        self.automatic_refunds_once(order_no, "status <> 'PENDING' OR submitted_at IS NOT NULL")
            .await
    }

    async fn automatic_refunds_once(&self, order_no: &str, done: &str) -> Vec<AutomaticRefund> {
        let started = std::time::Instant::now();
        loop {
            let refunds: Vec<AutomaticRefund> = sqlx::query_as(&format!(
                "SELECT platform_payment_id, amount_cents, status, failure_reason, ({done}) AS done
                 FROM refunds WHERE order_no = $1 AND requested_by = 'automatic' ORDER BY created_at"
            ))
            .bind(order_no)
            .fetch_all(&self.db)
            .await
            .expect("automatic refunds");
            if refunds.iter().all(|refund| refund.done) {
                return refunds;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "automatic refunds still pending: {refunds:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Checks that the unbookable success of `platform_payment_id` started
    /// exactly one automatic refund of the order's amount, and that once the
    /// platform accepted or refused it the order's anomalies are `cause` (as often as it was delivered
    /// under its own callback ids) followed by `REFUND_FAILED` exactly when the
    /// platform refused or failed the refund. Returns the refund.
    pub async fn assert_given_back_once(
        &self,
        order: &Order,
        platform_payment_id: &str,
        cause: &[&str],
    ) -> AutomaticRefund {
        let refunds = self.handed_over_automatic_refunds(&order.order_no).await;
        let [refund] = refunds.as_slice() else {
            panic!("expected one automatic refund, found {refunds:?}");
        };
        assert_eq!(refund.platform_payment_id, platform_payment_id);
        assert_eq!(refund.amount_cents, order.amount_cents);
        let mut expected: Vec<String> = cause.iter().map(|&kind| kind.to_owned()).collect();
        if refund.status == "FAILED" {
            expected.push("REFUND_FAILED".into());
        }
        let mut anomalies = self.anomalies(&order.order_no).await;
        anomalies.sort();
        expected.sort();
        assert_eq!(anomalies, expected, "{refund:?}");
        refund.clone()
    }

    /// Outcomes of the deliveries logged for an order, oldest first.
    pub async fn delivery_outcomes(&self, order_no: &str) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT outcome FROM callback_deliveries WHERE order_no = $1 ORDER BY delivery_id",
        )
        .bind(order_no)
        .fetch_all(&self.db)
        .await
        .expect("deliveries")
    }

    /// Ledger rows of `kind` (`CHARGE`, `REFUND`), of one order or of all.
    pub async fn ledger_rows(&self, order_no: Option<&str>, kind: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM payment_ledger
             WHERE kind = $2 AND ($1::text IS NULL OR order_no = $1)",
        )
        .bind(order_no)
        .bind(kind)
        .fetch_one(&self.db)
        .await
        .expect("ledger rows")
    }

    /// Panics with every violation if an invariant is broken.
    pub async fn assert_invariants(&self) -> invariants::Report {
        match invariants::check(&self.db).await.expect("invariants query") {
            Ok(report) => report,
            Err(violations) => panic!("{violations}"),
        }
    }

    /// Everything a bad request must not change (deliveries and anomalies are
    /// audit records and are checked separately where they apply).
    pub async fn snapshot(&self) -> Snapshot {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT 'account ' || account_id || ' ' || balance_cents FROM accounts
             UNION ALL SELECT 'order ' || order_no || ' ' || status || ' ' || coalesce(failure_reason, '-') FROM orders
             UNION ALL SELECT 'attempt ' || payment_id FROM payment_attempts
             UNION ALL SELECT 'callback ' || callback_id FROM payment_callbacks
             UNION ALL SELECT 'ledger ' || callback_id || ' ' || amount_cents FROM payment_ledger
             UNION ALL SELECT 'token ' || request_token FROM request_tokens_issued
             UNION ALL SELECT 'shopper ' || shopper_id || ' ' || email FROM shoppers
             UNION ALL SELECT 'product ' || sku || ' ' || price_cents FROM products
             UNION ALL SELECT 'key ' || scope || ' ' || idempotency_key FROM idempotency_keys
             ORDER BY 1",
        )
        .fetch_all(&self.db)
        .await
        .expect("snapshot");
        Snapshot(rows.into_iter().map(|(row,)| row).collect())
    }
}

/// A token key's value if a pay could still take it: `None` when the key is
/// gone or holds only the in-flight marker a pay leaves when it takes the token.
pub fn takeable(value: Option<String>) -> Option<String> {
    value.filter(|value| !value.starts_with("inflight:"))
}

/// The business state of a database at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot(pub Vec<String>);

/// An automatic refund as the database has it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AutomaticRefund {
    /// The platform payment it gives back.
    pub platform_payment_id: String,
    /// How much.
    pub amount_cents: i64,
    /// PENDING, SUCCEEDED or FAILED.
    pub status: String,
    /// The platform's refusal, when it refused it outright.
    pub failure_reason: Option<String>,
    /// Whether it got as far as the caller waits for.
    #[sqlx(default)]
    pub done: bool,
}

/// A payment as the platform knows it: the order, our payment id (the
/// merchant reference) and the platform's payment id.
#[derive(Debug, Clone)]
pub struct Payment {
    /// The order it pays.
    pub order: Order,
    /// Our payment id (the attempt).
    pub payment_id: Uuid,
    /// The platform's id for it.
    pub platform_payment_id: String,
}

impl Payment {
    /// A payment we never handed over: made-up ids, for an order with no attempt
    /// (or to name another payment than the order's).
    pub fn unsolicited(order: &Order) -> Self {
        Self {
            order: order.clone(),
            payment_id: Uuid::new_v4(),
            platform_payment_id: format!("pay_{}", Uuid::new_v4().simple()),
        }
    }
}

/// A payment result callback body about `payment`, with any amount and currency.
pub fn callback_body(kind: &str, payment: &Payment, amount_cents: i64, currency: &str) -> String {
    json!({
        "type": kind,
        "timestamp": "2026-12-02T10:00:00Z",
        "data": {
            "order_no": payment.order.order_no,
            "amount_cents": amount_cents,
            "currency": currency,
            "payment_id": payment.platform_payment_id,
            "merchant_reference": payment.payment_id,
        }
    })
    .to_string()
}

/// A `payment.succeeded` body for the payment's own amount.
pub fn success_body(payment: &Payment) -> String {
    callback_body(
        "payment.succeeded",
        payment,
        payment.order.amount_cents,
        payment.order.currency.as_str(),
    )
}

/// A fresh callback id.
pub fn new_callback_id() -> String {
    format!("evt_{}", Uuid::new_v4().simple())
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
