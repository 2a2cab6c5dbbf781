//! Test support: the real backend in-process on a random port (fresh database,
//! real Redis with a per-test key prefix, demo mode with the demo shoppers)
//! serving the built `dist/`, a headless Chromium driven through its own
//! chromedriver and signed in through the `/signin` page, orders placed (and
//! refunded) through the merchant API with exact amounts, and read-only
//! database probes that say what really happened.
//!
//! Every document the browser loads records the Content-Security-Policy
//! violations it reports (see [`browser`]); [`TestApp::finish`] fails a test
//! whose last page reported any.
//!
//! Browser tests run one at a time (see [`BROWSER_SLOT`]): two cores do not run
//! several Chromiums and backends at once without making timings flaky.
//!
//! This module starts and stops everything; the rest is split by what it
//! holds: [`options`] (how a test wants its backend, the demo shoppers),
//! [`processes`] and [`browser`] (Chromium behind chromedriver),
//! [`platform_sim`] (a WeChat Pay or Alipay played by `platform-sim`),
//! [`merchant`] (setting the scene through the API), [`actions`] and [`page`]
//! (what the shopper does and what the page shows) and [`probes`] (what the
//! database says).

mod actions;
mod browser;
mod merchant;
mod options;
mod page;
mod platform_sim;
mod probes;
mod processes;

pub use options::{ADA, BEN, Options, Shopper, TestPlatform};
pub use processes::{GroupChild, free_port};

use backend::config::{Config, PlatformKind};
use backend::startup::Application;
use browser::Browser;
use fantoccini::Client;
use platform_sim::start_platform_sim;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::path::PathBuf;
use std::sync::Once;
use std::time::Duration;
use testkit::TestDatabase;
use tokio::sync::{Mutex, MutexGuard};
use tokio::task::JoinHandle;
use uuid::Uuid;

/// One browser test at a time.
static BROWSER_SLOT: Mutex<()> = Mutex::const_new(());
static TRACING: Once = Once::new();

/// How long to wait for the page to reach an expected state.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(15);

/// The merchant API key the test backend accepts.
pub const MERCHANT_API_KEY: &str = "e2e-merchant-key-0123456789abcdef0123456789";
/// The admin token the test backend accepts.
pub const ADMIN_TOKEN: &str = "e2e-admin-token-0123456789abcdef0123456789";
/// The callback signing secret of the test backend (and its sandbox platform),
/// so a test can deliver callbacks of its own, as a misbehaving platform would.
pub const WEBHOOK_SECRET: &str = "whsec_ZTJlLWNhbGxiYWNrLXNlY3JldC1vZi0zMi1ieXRlcyE=";

pub use testkit::workspace_root;

pub use testkit::OwnedRedis;

/// The built payment page and operator console (`dist/ops/`); every test needs them.
fn dist_dir() -> PathBuf {
    let dist = workspace_root().join("dist");
    for index in ["index.html", "ops/index.html"] {
        assert!(
            dist.join(index).is_file(),
            "{} has no {index}: build the payment page and the operator console first with scripts/build-frontend.sh",
            dist.display()
        );
    }
    dist
}

/// A running backend serving the page, a browser, and the test's database.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub address: String,
    /// The test's own database (read-only use: probes).
    pub db: PgPool,
    /// For API calls that set the scene.
    pub http: reqwest::Client,
    /// The browser.
    pub browser: Option<Browser>,
    /// Ada (the first demo shopper), whom [`TestApp::create_order`] places orders for.
    pub shopper_id: Uuid,
    /// Ada's account in the platform's currency (EUR; CNY for WeChat Pay),
    /// which her orders charge.
    pub account_id: Uuid,
    /// The currency of the demo: the platform's.
    pub currency: api_types::Currency,
    server: JoinHandle<std::io::Result<()>>,
    /// The platform-sim process, when the platform is not the sandbox.
    _platform_sim: Option<testkit::BackendProcess>,
    /// Dropped after the server: gone when the test passes, kept when it fails.
    _database: TestDatabase,
    _slot: MutexGuard<'static, ()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Starts everything with the default options.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(Options::default()).await
}

/// Starts the backend (demo mode, serving `dist/`) and a browser.
pub async fn spawn_app_with(options: Options) -> TestApp {
    let slot = BROWSER_SLOT.lock().await;
    TRACING.call_once(|| {
        if std::env::var("TEST_LOG").is_ok() {
            backend::infra::telemetry::init();
        }
    });
    let static_dir = dist_dir();
    let id = Uuid::new_v4().simple().to_string();
    let database = TestDatabase::new("e2e");
    let database_url = database.url();
    let mut config = Config {
        platform: Some(PlatformKind::Sandbox),
        database_url: database_url.clone().into(),
        redis_url: options.redis_url.unwrap_or_else(testkit::redis_url).into(),
        redis_key_prefix: format!("e2e:{id}:"),
        bind_addr: "127.0.0.1:0".parse().expect("valid address"),
        token_ttl_secs: options.token_ttl_secs,
        static_dir: Some(static_dir),
        demo: true,
        sandbox_callback_delay_ms: options.callback_delay_ms,
        merchant_api_key: Some(MERCHANT_API_KEY.to_owned().into()),
        admin_token: Some(ADMIN_TOKEN.to_owned().into()),
        webhook_secret: Some(WEBHOOK_SECRET.to_owned().into()),
        ..Config::default()
    };
    let platform_sim = match options.platform {
        TestPlatform::Sandbox => None,
        platform => {
            Some(start_platform_sim(platform, options.callback_delay_ms, &mut config).await)
        }
    };
    let currency = backend::http::routes::demo::currency_for(config.platform.expect("set above"));
    let app = Application::build(config)
        .await
        .expect("the backend starts (PostgreSQL on 127.0.0.1:5432?)");
    let address = format!("http://127.0.0.1:{}", app.port());
    let server = tokio::spawn(app.run_until_stopped());
    let db = PgPoolOptions::new()
        .max_connections(2)
        .connect(&database_url)
        .await
        .expect("the test database accepts connections");
    let http = reqwest::Client::new();
    let (shopper_id, account_id) = shopper_and_account(&db, ADA.email, currency).await;
    let browser = Browser::start().await;
    let app = TestApp {
        address,
        db,
        http,
        browser: Some(browser),
        shopper_id,
        account_id,
        currency,
        server,
        _platform_sim: platform_sim,
        _database: database,
        _slot: slot,
    };
    if let Some(shopper) = options.signed_in_as {
        app.sign_in(shopper).await;
    }
    app
}

/// The demo shopper's id and account in `currency`, as the backend seeded them.
async fn shopper_and_account(
    db: &PgPool,
    email: &str,
    currency: api_types::Currency,
) -> (Uuid, Uuid) {
    sqlx::query_as(
        "SELECT s.shopper_id, a.account_id FROM shoppers s \
         JOIN accounts a ON a.shopper_id = s.shopper_id AND a.currency = $2 \
         WHERE s.email = $1",
    )
    .bind(email)
    .bind(currency.as_str())
    .fetch_one(db)
    .await
    .unwrap_or_else(|err| panic!("demo shopper {email} with a {currency} account: {err}"))
}

impl TestApp {
    /// The WebDriver session.
    pub fn client(&self) -> &Client {
        &self.browser.as_ref().expect("the browser is open").client
    }

    /// Fails if the page now shown reported a CSP violation, then closes the
    /// browser and stops the backend; the database goes with the app (kept,
    /// with its name printed, when the test failed).
    pub async fn finish(mut self) {
        self.assert_no_csp_violations().await;
        if let Some(browser) = self.browser.take() {
            browser.close().await;
        }
        self.server.abort();
        self.db.close().await;
    }
}
