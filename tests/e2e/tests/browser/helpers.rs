//! Test support: the real backend in-process on a random port (fresh database,
//! real Redis with a per-test key prefix, demo mode with the demo shoppers)
//! serving the built `dist/`, a headless Chromium driven through its own
//! chromedriver and signed in through the `/signin` page, orders placed (and
//! refunded) through the merchant API with exact amounts, and read-only
//! database probes that say what really happened.
//!
//! Every document the browser loads records the Content-Security-Policy
//! violations it reports (a `securitypolicyviolation` listener installed before
//! the page's own scripts run); [`TestApp::finish`] fails a test whose last
//! page reported any.
//!
//! Browser tests run one at a time (see [`BROWSER_SLOT`]): two cores do not run
//! several Chromiums and backends at once without making timings flaky.

use api_types::RefundStatus;
use api_types::api::{CreateMerchantOrder, CreateRefund, Order, Refund};
use backend::config::{Config, PlatformKind};
use backend::http::routes::demo::DEMO_SHOPPERS;
use backend::startup::Application;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::future::Future;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};
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

/// A demo shopper the backend seeds in sandbox demo mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shopper {
    /// Sign-in email.
    pub email: &'static str,
    /// Sign-in password (public in the demo).
    pub password: &'static str,
    /// 1-based position on the sign-in page (`#demo-shopper-<n>`).
    pub position: usize,
}

/// The first demo shopper, whom tests sign in as by default.
pub const ADA: Shopper = Shopper {
    email: DEMO_SHOPPERS[0].0,
    password: DEMO_SHOPPERS[0].1,
    position: 1,
};
/// The second demo shopper.
pub const BEN: Shopper = Shopper {
    email: DEMO_SHOPPERS[1].0,
    password: DEMO_SHOPPERS[1].1,
    position: 2,
};

/// Runs in every document before its own scripts (Chromium's
/// `Page.addScriptToEvaluateOnNewDocument`, which the page's CSP does not
/// govern): collects the CSP violations the document reports.
const RECORD_CSP_VIOLATIONS: &str = "window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push({
    directive: e.effectiveDirective, blocked: e.blockedURI,
    source: e.sourceFile, line: e.lineNumber, sample: e.sample,
  });
});";

pub use testkit::workspace_root;

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

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    testkit::free_port().expect("a free local port")
}

/// Waits until something accepts TCP connections on `port`.
fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process in its own process group; the whole group is killed on drop
/// (chromedriver's Chromium processes included).
pub struct GroupChild(Child);

impl GroupChild {
    /// Starts `command` as the leader of a new process group.
    pub fn spawn(command: &mut Command) -> std::io::Result<Self> {
        use std::os::unix::process::CommandExt;
        command.process_group(0).spawn().map(Self)
    }

    /// Whether the child has exited already.
    pub fn has_exited(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(Some(_)))
    }

    fn kill(&mut self) {
        // Negative pid: the process group this child leads.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill();
    }
}

pub use testkit::OwnedRedis;

/// Headless Chromium behind its own chromedriver, with a fresh profile.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: GroupChild,
    profile: PathBuf,
}

impl Browser {
    async fn start() -> Self {
        let chromedriver =
            std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let chromium = std::env::var("CHROME_BIN").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = free_port();
        let driver = GroupChild::spawn(
            Command::new(&chromedriver)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .unwrap_or_else(|err| {
            panic!("cannot start {chromedriver} ({err}): run scripts/install-frontend-tools.sh")
        });
        wait_for_port(port, "chromedriver");

        // A reused profile can serve a stale .wasm: every session gets a new one.
        let profile = std::env::temp_dir().join(format!("e2e-chromium-{}", Uuid::new_v4()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object literal")
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("chromedriver opens a Chromium session");
        client
            .issue_cmd(Cdp {
                cmd: "Page.addScriptToEvaluateOnNewDocument",
                params: json!({ "source": RECORD_CSP_VIOLATIONS }),
            })
            .await
            .expect("chromedriver runs a DevTools command");
        Self {
            client,
            driver,
            profile,
        }
    }

    async fn close(self) {
        let Self {
            client,
            mut driver,
            profile,
        } = self;
        let _ = client.close().await;
        driver.kill();
        let _ = std::fs::remove_dir_all(profile);
    }
}

/// chromedriver's `POST /session/{id}/chromium/network_conditions`.
#[derive(Debug)]
struct NetworkConditions {
    offline: bool,
    /// Added to every request's round trip, in milliseconds.
    latency_ms: u64,
}

impl fantoccini::wd::WebDriverCompatibleCommand for NetworkConditions {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/chromium/network_conditions",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({
            "network_conditions": {
                "offline": self.offline,
                "latency": self.latency_ms,
                "download_throughput": -1,
                "upload_throughput": -1,
            }
        });
        (http::Method::POST, Some(body.to_string()))
    }
}

/// chromedriver's `POST /session/{id}/goog/cdp/execute`: one Chrome DevTools command.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (http::Method::POST, Some(body.to_string()))
    }
}

/// How a test wants its backend.
#[derive(Debug, Clone)]
pub struct Options {
    /// Request token lifetime.
    pub token_ttl_secs: u64,
    /// Delay of the sandbox platform's callback.
    pub callback_delay_ms: u64,
    /// Redis to use; the shared one when `None`.
    pub redis_url: Option<String>,
    /// Whom the browser signs in as (through `/signin`) before the test starts;
    /// nobody when `None`.
    pub signed_in_as: Option<Shopper>,
    /// Which platform takes the payments.
    pub platform: TestPlatform,
}

/// The platform a browser test pays through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestPlatform {
    /// The sandbox inside the backend (EUR).
    Sandbox,
    /// WeChat Pay API v3, played by a platform-sim process (CNY).
    Wechatpay,
    /// Alipay, played by a platform-sim process (CNY).
    Alipay,
}

/// The WeChat Pay merchant id and app id of the tests.
const WECHATPAY_IDS: (&str, &str) = ("1900009191", "wxd678efh567hg6787");
/// The Alipay app id of the tests.
const ALIPAY_APP_ID: &str = "2021000000000001";

/// A platform-sim process speaking `platform`'s protocol with a fresh key set
/// written by `platform-sim keys`, paying each payment after `delay_ms`; and
/// the backend settings that point at it.
async fn start_platform_sim(
    platform: TestPlatform,
    delay_ms: u64,
    config: &mut Config,
) -> testkit::BackendProcess {
    let binary = testkit::platform_sim_binary().expect("the platform-sim binary");
    let run = Uuid::new_v4().simple().to_string();
    let dir = testkit::target_dir().join(format!("e2e/keys-{run}"));
    let written = Command::new(&binary)
        .arg("keys")
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .expect("platform-sim keys runs");
    assert!(written.success(), "platform-sim keys {}", dir.display());
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|err| panic!("{name}: {err}"))
            .trim()
            .to_owned()
    };
    let mut args = vec![
        "--processing-delay".to_owned(),
        format!("{delay_ms}ms"),
        "--schedule".to_owned(),
        "fixed:200msx50".to_owned(),
    ];
    match platform {
        TestPlatform::Sandbox => unreachable!("the sandbox runs inside the backend"),
        TestPlatform::Wechatpay => {
            let (mchid, appid) = WECHATPAY_IDS;
            args.extend(
                [
                    "--wechatpay-keys",
                    &dir.display().to_string(),
                    "--wechatpay-mchid",
                    mchid,
                    "--wechatpay-appid",
                    appid,
                ]
                .map(str::to_owned),
            );
            config.platform = Some(PlatformKind::Wechatpay);
            config.wechatpay = backend::config::WechatPayConfig {
                wechatpay_api_url: String::new(),
                wechatpay_mchid: Some(mchid.into()),
                wechatpay_appid: Some(appid.into()),
                wechatpay_merchant_key_file: Some(dir.join("merchant_private_key.pem")),
                wechatpay_merchant_serial: Some(read("merchant_serial_no.txt")),
                wechatpay_platform_public_key_file: Some(dir.join("platform_public_key.pem")),
                wechatpay_platform_serial: Some(read("platform_serial_no.txt")),
                wechatpay_apiv3_key_file: Some(dir.join("wechatpay_apiv3_key.txt")),
            };
        }
        TestPlatform::Alipay => {
            args.extend(
                [
                    "--alipay-keys",
                    &dir.display().to_string(),
                    "--alipay-app-id",
                    ALIPAY_APP_ID,
                ]
                .map(str::to_owned),
            );
            config.platform = Some(PlatformKind::Alipay);
            config.alipay = backend::config::AlipayConfig {
                alipay_gateway_url: String::new(),
                alipay_app_id: Some(ALIPAY_APP_ID.into()),
                alipay_app_private_key_file: Some(dir.join("merchant_private_key.pem")),
                alipay_public_key_file: Some(dir.join("platform_public_key.pem")),
            };
        }
    }
    let secret = format!("whsec_{}", "c2ltdWxhdG9yLXNlY3JldC1vZi0zMi1ieXRlcyEhISE=");
    let sim = testkit::BackendProcess::start_as(
        &binary,
        "SIM_BIND_ADDR",
        args,
        vec![("WEBHOOK_SECRET".into(), secret)],
        testkit::target_dir().join(format!("e2e/platform-sim-{run}.log")),
    )
    .await
    .expect("platform-sim starts");
    config.wechatpay.wechatpay_api_url = sim.url();
    config.alipay.alipay_gateway_url = format!("{}/gateway.do", sim.url());
    sim
}

impl Default for Options {
    fn default() -> Self {
        Self {
            token_ttl_secs: 900,
            callback_delay_ms: 300,
            redis_url: None,
            signed_in_as: Some(ADA),
            platform: TestPlatform::Sandbox,
        }
    }
}

impl Options {
    /// The defaults with a browser that has not signed in.
    pub fn signed_out() -> Self {
        Self {
            signed_in_as: None,
            ..Self::default()
        }
    }
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

    // ---- scene setting through the API ----

    /// Places a PENDING order of exactly `amount_cents` (in the demo's
    /// currency) for Ada, as a merchant would (`POST /api/merchant/orders`).
    pub async fn create_order(&self, amount_cents: i64) -> Order {
        let body = CreateMerchantOrder {
            shopper_id: self.shopper_id,
            amount_cents,
            currency: self.currency,
            description: format!("E2E order of {amount_cents} cents"),
        };
        let answer = self
            .http
            .post(format!("{}/api/merchant/orders", self.address))
            .bearer_auth(MERCHANT_API_KEY)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .await
            .expect("POST /api/merchant/orders answers");
        assert_eq!(
            answer.status(),
            reqwest::StatusCode::CREATED,
            "merchant order: {}",
            answer.text().await.unwrap_or_default()
        );
        answer.json().await.expect("an Order")
    }

    /// Gives `amount_cents` of a paid order back, as the merchant would
    /// (`POST /api/merchant/orders/{order_no}/refunds`): the refund, PENDING
    /// until the sandbox platform's refund callback settles it.
    pub async fn refund(&self, order_no: &str, amount_cents: i64, reason: &str) -> Refund {
        let body = CreateRefund {
            amount_cents,
            reason: reason.to_owned(),
        };
        let answer = self
            .http
            .post(format!(
                "{}/api/merchant/orders/{order_no}/refunds",
                self.address
            ))
            .bearer_auth(MERCHANT_API_KEY)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .await
            .expect("POST /api/merchant/orders/{order_no}/refunds answers");
        assert_eq!(
            answer.status(),
            reqwest::StatusCode::ACCEPTED,
            "merchant refund: {}",
            answer.text().await.unwrap_or_default()
        );
        answer.json().await.expect("a Refund")
    }

    /// Delivers a callback signed with [`WEBHOOK_SECRET`] under `callback_id`,
    /// as the platform would (`POST /api/payments/callback`): the status and
    /// the JSON answer.
    pub async fn post_callback(&self, callback_id: &str, body: &Value) -> (u16, Value) {
        let secret =
            callback_signing::CallbackSecret::parse(WEBHOOK_SECRET).expect("a valid secret");
        let body = body.to_string();
        let signed = secret
            .sign_now(callback_id, body.as_bytes())
            .expect("a UTF-8 body");
        let mut request = self
            .http
            .post(format!("{}/api/payments/callback", self.address))
            .header("content-type", "application/json");
        for (name, value) in signed.pairs() {
            request = request.header(name, value);
        }
        let answer = request
            .body(body)
            .send()
            .await
            .expect("POST /api/payments/callback answers");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    /// The order's refunds as the merchant reads them
    /// (`GET /api/merchant/orders/{order_no}/refunds`), oldest first.
    pub async fn merchant_refunds(&self, order_no: &str) -> Vec<Refund> {
        let answer = self
            .http
            .get(format!(
                "{}/api/merchant/orders/{order_no}/refunds",
                self.address
            ))
            .bearer_auth(MERCHANT_API_KEY)
            .send()
            .await
            .expect("GET /api/merchant/orders/{order_no}/refunds answers");
        assert_eq!(answer.status(), reqwest::StatusCode::OK, "merchant refunds");
        answer.json().await.expect("a list of refunds")
    }

    /// Waits until the merchant API shows the refund `refund_no` as `status`
    /// (the sandbox settles a refund after its callback delay).
    pub async fn wait_for_refund(&self, order_no: &str, refund_no: &str, status: RefundStatus) {
        self.eventually(&format!("refund {refund_no} to be {status}"), || async {
            self.merchant_refunds(order_no)
                .await
                .iter()
                .any(|r| r.refund_no == refund_no && r.status == status)
                .then_some(())
        })
        .await;
    }

    /// `GET {path}` from inside the page, with the browser's session cookie:
    /// the status and the JSON body (null when there is none).
    pub async fn fetch_in_browser(&self, path: &str) -> (u16, Value) {
        let answer = self
            .client()
            .execute_async(
                "const [path, done] = arguments;
                 fetch(path, { headers: { accept: 'application/json' } })
                   .then(async (r) => done([r.status, await r.json().catch(() => null)]))
                   .catch((e) => done([0, String(e)]));",
                vec![Value::from(path)],
            )
            .await
            .unwrap_or_else(|err| panic!("fetch {path} in the page: {err}"));
        let status = answer[0].as_u64().expect("a status") as u16;
        (status, answer[1].clone())
    }

    /// The order as the signed-in shopper's page reads it (`GET /api/orders/{no}`).
    pub async fn order_in_browser(&self, order_no: &str) -> Order {
        let (status, body) = self
            .fetch_in_browser(&format!("/api/orders/{order_no}"))
            .await;
        assert_eq!(status, 200, "GET /api/orders/{order_no}: {body}");
        serde_json::from_value(body).expect("an Order")
    }

    // ---- the browser ----

    /// Opens a path of the app.
    pub async fn goto(&self, path: &str) {
        self.client()
            .goto(&format!("{}{path}", self.address))
            .await
            .expect("the page loads");
    }

    /// The path (and query) the browser shows now.
    pub async fn current_path(&self) -> String {
        let url = self.client().current_url().await.expect("a URL");
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Waits until the browser shows `path` (and query).
    pub async fn wait_for_path(&self, path: &str) {
        self.eventually(&format!("the browser to show {path}"), || async {
            (self.current_path().await == path).then_some(())
        })
        .await;
    }

    /// Signs in through the `/signin` form, typing the shopper's credentials,
    /// and waits until the page has left for the shop.
    pub async fn sign_in(&self, shopper: Shopper) {
        self.goto("/signin").await;
        self.type_into("signin-email", shopper.email).await;
        self.type_into("signin-password", shopper.password).await;
        self.click("signin-submit").await;
        self.wait_for_path("/").await;
        self.eventually("the shop to show who is signed in", || async {
            (self.text("shopper-email").await.as_deref() == Some(shopper.email)).then_some(())
        })
        .await;
    }

    /// Replaces the text of the input with this id, as typing does.
    pub async fn type_into(&self, id: &str, text: &str) {
        let input = self
            .eventually(&format!("#{id}"), || async {
                self.client().find(Locator::Id(id)).await.ok()
            })
            .await;
        input.clear().await.expect("the input can be cleared");
        input.send_keys(text).await.expect("keys reach the input");
    }

    /// The current value of the input with this id.
    pub async fn value_of(&self, id: &str) -> String {
        self.js(&format!("return document.getElementById('{id}').value;"))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The CSP violations the current document reported (see the module doc).
    pub async fn csp_violations(&self) -> Vec<Value> {
        match self.js("return window.__cspViolations ?? null;").await {
            Value::Array(violations) => violations,
            other => panic!("the CSP violation recorder is not installed: {other}"),
        }
    }

    /// Fails if the current document reported any CSP violation.
    pub async fn assert_no_csp_violations(&self) {
        let violations = self.csp_violations().await;
        assert!(
            violations.is_empty(),
            "the page reported CSP violations: {violations:#?}"
        );
    }

    /// Opens the payment page of `order_no` and waits until "Pay now" can be pressed.
    pub async fn open_pay_page(&self, order_no: &str) {
        self.goto(&format!("/pay/{order_no}")).await;
        self.wait_for_pay_button().await;
    }

    /// Waits until "Pay now" is shown and enabled.
    pub async fn wait_for_pay_button(&self) {
        self.eventually("an enabled Pay now button", || async {
            let button = self.client().find(Locator::Id("pay-button")).await.ok()?;
            button.is_enabled().await.ok()?.then_some(())
        })
        .await;
    }

    /// Presses a button (or anything clickable) by element id.
    pub async fn click(&self, id: &str) {
        self.client()
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|err| panic!("#{id} is on the page: {err}"))
            .click()
            .await
            .unwrap_or_else(|err| panic!("#{id} can be clicked: {err}"));
    }

    /// A real double click on the element with this id, as the browser's
    /// input system delivers it (two presses and releases of the mouse).
    pub async fn double_click(&self, id: &str) {
        use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
        let element = self
            .client()
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|err| panic!("#{id} is on the page: {err}"));
        let double_click = MouseActions::new("mouse".into())
            .then(PointerAction::MoveToElement {
                element,
                duration: None,
                x: 0.0,
                y: 0.0,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        self.client()
            .perform_actions(double_click)
            .await
            .expect("the double click is performed");
    }

    /// Waits until `#status` says `status` (`PENDING`, `PAID`, `FAILED`).
    pub async fn wait_for_status(&self, status: &str) {
        self.eventually(&format!("#status to say {status}"), || async {
            (self.attr("status", "data-status").await.as_deref() == Some(status)).then_some(())
        })
        .await;
    }

    /// Waits until the live region `#message` holds the notice with this code.
    pub async fn wait_for_notice(&self, code: &str) {
        self.eventually(&format!("the {code} notice"), || async {
            (self.attr("message", "data-notice").await.as_deref() == Some(code)).then_some(())
        })
        .await;
    }

    /// The text of the element with this id, when present.
    pub async fn text(&self, id: &str) -> Option<String> {
        let element = self.client().find(Locator::Id(id)).await.ok()?;
        element.text().await.ok()
    }

    /// An attribute of the element with this id, when both exist.
    pub async fn attr(&self, id: &str, name: &str) -> Option<String> {
        let element = self.client().find(Locator::Id(id)).await.ok()?;
        element.attr(name).await.ok().flatten()
    }

    /// Whether an element with this id is on the page.
    pub async fn is_present(&self, id: &str) -> bool {
        self.client().find(Locator::Id(id)).await.is_ok()
    }

    /// Runs JavaScript in the page and returns its value.
    pub async fn js(&self, script: &str) -> Value {
        self.client()
            .execute(script, vec![])
            .await
            .unwrap_or_else(|err| panic!("script failed: {err}\n{script}"))
    }

    /// The refund lines under the receipt, in page order: for each, its
    /// amount and status as shown, its `data-status`, and its note ("" when
    /// it has none).
    pub async fn refund_lines(&self) -> Vec<(String, String, String, String)> {
        let lines = self
            .js("const text = (line, id) =>
                   line.querySelector(`[data-testid=${id}]`)?.textContent ?? '';
                 return [...document.querySelectorAll('[data-testid=refund]')].map((line) => [
                   text(line, 'refund-amount'), text(line, 'refund-status'),
                   line.dataset.status ?? '', text(line, 'refund-note'),
                 ]);")
            .await;
        serde_json::from_value(lines).expect("a list of [amount, status, data-status, note]")
    }

    /// Cuts the page off the network (Chromium's network emulation), or restores it.
    pub async fn set_offline(&self, offline: bool) {
        self.client()
            .issue_cmd(NetworkConditions {
                offline,
                latency_ms: 0,
            })
            .await
            .expect("chromedriver emulates network conditions");
    }

    /// Slows the page's network: every round trip takes `latency_ms` more.
    pub async fn set_latency(&self, latency_ms: u64) {
        self.client()
            .issue_cmd(NetworkConditions {
                offline: false,
                latency_ms,
            })
            .await
            .expect("chromedriver emulates network conditions");
    }

    /// How many `POST .../pay` requests this page load sent (Resource Timing).
    pub async fn pay_requests_sent(&self) -> u64 {
        self.js("return performance.getEntriesByType('resource')
                .filter(e => new URL(e.name).pathname.endsWith('/pay')).length;")
            .await
            .as_u64()
            .expect("a count")
    }

    /// Saves a PNG of the page under `target/screenshots/{name}.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client().screenshot().await.expect("a screenshot");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"));
        let dir = target.join("screenshots");
        std::fs::create_dir_all(&dir).expect("target/screenshots can be created");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("the screenshot is saved");
    }

    /// What the page shows, for failure messages.
    pub async fn describe_page(&self) -> String {
        let url = self
            .client()
            .current_url()
            .await
            .map(|u| u.to_string())
            .unwrap_or_default();
        format!(
            "url={url} status={:?} message={:?} progress={:?} pay-button={} retry-button={}",
            self.attr("status", "data-status").await,
            self.text("message").await,
            self.text("progress").await,
            self.is_present("pay-button").await,
            self.is_present("retry-button").await,
        )
    }

    /// Polls `check` every 50 ms until it answers `Some`, or fails the test
    /// after [`PAGE_TIMEOUT`] with what the page showed.
    pub async fn eventually<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        loop {
            if let Some(value) = check().await {
                return value;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; {}",
                    self.describe_page().await
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // ---- what the database says ----

    /// Request tokens handed out for the order.
    pub async fn tokens_issued(&self, order_no: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM request_tokens_issued WHERE order_no = $1",
            order_no,
        )
        .await
    }

    /// Payment attempts made for the order.
    pub async fn attempts(&self, order_no: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM payment_attempts WHERE order_no = $1",
            order_no,
        )
        .await
    }

    /// Ledger charges written for the order.
    pub async fn charges(&self, order_no: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM payment_ledger WHERE order_no = $1 AND kind = 'CHARGE'",
            order_no,
        )
        .await
    }

    /// The order's status in the database.
    pub async fn db_status(&self, order_no: &str) -> String {
        sqlx::query_scalar("SELECT status FROM orders WHERE order_no = $1")
            .bind(order_no)
            .fetch_one(&self.db)
            .await
            .expect("the order exists")
    }

    /// Ada's `(opening, current)` EUR balance.
    pub async fn balances(&self) -> (i64, i64) {
        self.balances_of(ADA).await
    }

    /// A demo shopper's `(opening, current)` balance in the demo's currency.
    pub async fn balances_of(&self, shopper: Shopper) -> (i64, i64) {
        sqlx::query_as(
            "SELECT a.opening_balance_cents, a.balance_cents FROM accounts a \
             JOIN shoppers s ON s.shopper_id = a.shopper_id \
             WHERE s.email = $1 AND a.currency = $2",
        )
        .bind(shopper.email)
        .bind(self.currency.as_str())
        .fetch_one(&self.db)
        .await
        .expect("the demo shopper's account exists")
    }

    /// Fails unless the order was charged exactly once, by one attempt, and the
    /// balance went down by exactly its amount.
    pub async fn assert_charged_once(&self, order: &Order) {
        let no = &order.order_no;
        assert_eq!(self.attempts(no).await, 1, "payment attempts of {no}");
        assert_eq!(self.charges(no).await, 1, "ledger charges of {no}");
        assert_eq!(self.db_status(no).await, "PAID");
        let (opening, current) = self.balances().await;
        assert_eq!(
            current,
            opening - order.amount_cents,
            "balance after one charge"
        );
    }

    /// Fails unless nothing at all was charged.
    pub async fn assert_nothing_charged(&self, order: &Order) {
        let no = &order.order_no;
        assert_eq!(self.attempts(no).await, 0, "payment attempts of {no}");
        assert_eq!(self.charges(no).await, 0, "ledger charges of {no}");
        assert_eq!(self.db_status(no).await, "PENDING");
        let (opening, current) = self.balances().await;
        assert_eq!(current, opening, "balance untouched");
    }

    async fn count(&self, sql: &str, order_no: &str) -> i64 {
        sqlx::query_scalar(sql)
            .bind(order_no)
            .fetch_one(&self.db)
            .await
            .expect("the probe query runs")
    }
}
