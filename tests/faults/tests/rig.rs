//! A test rig: a backend child process on its own database and Redis, a shopper
//! who pays the orders, a platform that retries callbacks until acknowledged,
//! and the checks afterwards.

use api_types::Currency;
use backend::invariants;
use futures::future::join_all;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::sync::Arc;
use std::time::Duration;
use storm::platform::{Answer, Callback, Sender};
use storm::processes::{self, BackendProcess, OwnedRedis};
use storm::shop::{PaidOrder, Shopper};
use tokio::sync::Mutex;
use uuid::Uuid;

/// The admin token of rig backends.
pub const ADMIN: &str = "fault-admin-token-of-32-characters";
/// The merchant API key of every backend the rig starts.
pub const MERCHANT: &str = "fault-merchant-key-of-32-characters";

/// Seeds to run: `FAULT_SEEDS=7,8` reproduces or extends; CI runs a bounded few.
pub fn seeds() -> Vec<u64> {
    std::env::var("FAULT_SEEDS")
        .ok()
        .map(|text| {
            text.split(',')
                .filter_map(|s| s.trim().parse().ok())
                .collect()
        })
        .filter(|seeds: &Vec<u64>| !seeds.is_empty())
        .unwrap_or_else(|| vec![1, 2, 3])
}

/// Settings of one rig.
pub struct RigOptions {
    /// PostgreSQL server base URL (no database).
    pub postgres: String,
    /// Extra environment for the backend (crash points, ...).
    pub env: Vec<(String, String)>,
    /// Backends sharing the database and Redis.
    pub backends: usize,
    /// Which build runs: the fault-injection one (crash points) unless told otherwise.
    pub binary: Binary,
    /// Where the backends hand payments over.
    pub platform: Platform,
    /// Whether the platform posts its own result callbacks. Off by default
    /// (`SANDBOX_DROP_CALLBACKS=true`, or the outside platform's
    /// `drop_callbacks`): the platform only decides, the test delivers the
    /// callbacks itself ([`Rig::storm`]), so its storm is what charges. On for
    /// tests that rely on the platform to settle what they pay.
    pub platform_callbacks: bool,
}

/// Where a rig's backends hand payments over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Platform {
    /// Each backend's in-process sandbox (`PLATFORM=sandbox`), deciding 100 ms
    /// after the hand-over. It dies with its backend; a restarted backend hands
    /// its open payments to a fresh one.
    Sandbox,
    /// One `platform-sim` served by the test process on a thread of its own
    /// (`PLATFORM=remote`), shared by the backends and misbehaving as `chaos`
    /// says (its `drop_callbacks` is set from [`RigOptions::platform_callbacks`]).
    /// It outlives any backend crash, as a real platform does.
    Outside(platform_sim::Chaos),
}

impl Platform {
    /// A well-behaved platform outside the backend.
    pub fn outside() -> Self {
        Self::Outside(platform_sim::Chaos::default())
    }
}

/// Which backend binary a rig runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// `backend-fault-injection`: crash points armed from `CRASH_POINTS`.
    FaultInjection,
    /// `backend`: the ordinary build, as `scripts/run.sh` and a release build make it.
    Ordinary,
}

impl Default for RigOptions {
    fn default() -> Self {
        Self {
            postgres: processes::postgres_server_url(),
            env: Vec::new(),
            backends: 1,
            binary: Binary::FaultInjection,
            platform: Platform::Sandbox,
            platform_callbacks: false,
        }
    }
}

/// Backends, their database and Redis, and a way to pay orders through them.
pub struct Rig {
    /// The backend processes (shared so a supervisor can revive them).
    pub backends: Vec<Arc<Mutex<BackendProcess>>>,
    /// Their Redis.
    pub redis: OwnedRedis,
    /// Their database.
    pub db: PgPool,
    /// Their webhook secret.
    pub secret: String,
    urls: Vec<String>,
    shopper: tokio::sync::OnceCell<Shopper>,
    platform: Option<OutsidePlatform>,
    /// Last: dropped after the backends, kept when the test failed.
    _database: processes::TestDatabase,
}

impl Rig {
    /// Starts everything.
    pub async fn start(options: RigOptions) -> Rig {
        let redis = OwnedRedis::start().await.expect("redis starts");
        let id = Uuid::new_v4().simple().to_string();
        let database = processes::TestDatabase::on(&options.postgres, "checkout_test");
        let database_url = database.url();
        let secret = callback_signing::CallbackSecret::generate()
            .expose()
            .to_owned();
        let (platform_env, platform) = match options.platform {
            Platform::Sandbox => (
                vec![
                    (backend::env::PLATFORM.to_owned(), "sandbox".to_owned()),
                    (
                        backend::env::SANDBOX_CALLBACK_DELAY_MS.to_owned(),
                        "100".to_owned(),
                    ),
                    (
                        backend::env::SANDBOX_DROP_CALLBACKS.to_owned(),
                        (!options.platform_callbacks).to_string(),
                    ),
                ],
                None,
            ),
            Platform::Outside(chaos) => {
                let chaos = platform_sim::Chaos {
                    drop_callbacks: !options.platform_callbacks,
                    ..chaos
                };
                let platform = OutsidePlatform::start(&secret, chaos).expect("platform-sim serves");
                (
                    vec![
                        (backend::env::PLATFORM.to_owned(), "remote".to_owned()),
                        (backend::env::PLATFORM_URL.to_owned(), platform.url.clone()),
                    ],
                    Some(platform),
                )
            }
        };
        let binary = match options.binary {
            Binary::FaultInjection => processes::fault_injection_backend_binary(),
            Binary::Ordinary => processes::backend_binary(),
        }
        .expect("backend binary");
        let mut backends = Vec::new();
        let mut urls = Vec::new();
        for n in 0..options.backends {
            let mut env = vec![
                (backend::env::DATABASE_URL.to_owned(), database_url.clone()),
                (backend::env::REDIS_URL.to_owned(), redis.url()),
                (
                    backend::env::REDIS_KEY_PREFIX.to_owned(),
                    format!("fault:{id}:"),
                ),
                (backend::env::WEBHOOK_SECRET.to_owned(), secret.clone()),
                (backend::env::ADMIN_TOKEN.to_owned(), ADMIN.to_owned()),
                (
                    backend::env::MERCHANT_API_KEY.to_owned(),
                    MERCHANT.to_owned(),
                ),
                // One shopper pays every order of a test, faster than any person.
                (
                    backend::env::RATE_LIMIT_TOKENS_PER_SHOPPER.to_owned(),
                    "0".to_owned(),
                ),
                (
                    backend::env::RATE_LIMIT_PAYS_PER_SHOPPER.to_owned(),
                    "0".to_owned(),
                ),
                (
                    backend::env::DATABASE_MAX_CONNECTIONS.to_owned(),
                    "10".to_owned(),
                ),
                (
                    backend::env::RUST_LOG.to_owned(),
                    "info,sqlx=warn,tower_http=warn".to_owned(),
                ),
            ];
            env.extend(platform_env.iter().cloned());
            env.extend(options.env.iter().cloned());
            let log = processes::target_dir().join(format!("faults/{id}-backend{n}.log"));
            let backend = BackendProcess::start(&binary, env, log)
                .await
                .expect("backend starts");
            urls.push(backend.url());
            backends.push(Arc::new(Mutex::new(backend)));
        }
        let db = PgPoolOptions::new()
            .max_connections(4)
            .connect(&database_url)
            .await
            .expect("database");
        Rig {
            backends,
            redis,
            db,
            secret,
            urls,
            shopper: tokio::sync::OnceCell::new(),
            platform,
            _database: database,
        }
    }

    /// The platform outside the backends ([`Platform::Outside`]), to look at its payments.
    pub fn platform(&self) -> Option<&platform_sim::Simulator> {
        self.platform.as_ref().map(|p| &p.simulator)
    }

    /// The first backend's URL.
    pub fn url(&self) -> &str {
        &self.urls[0]
    }

    /// All backends' URLs.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The rig's one shopper (made on first use, with money for every order a
    /// test places), signed in: their client carries the session cookie.
    pub async fn shopper(&self) -> &Shopper {
        self.shopper
            .get_or_init(|| async {
                storm::shop::open_shopper(self.url(), ADMIN, 1_000_000_000, Currency::EUR)
                    .await
                    .expect("the rig's shopper")
            })
            .await
    }

    /// An HTTP client signed in as the rig's shopper, who owns every order of [`Rig::orders`].
    pub async fn shopper_http(&self) -> reqwest::Client {
        self.shopper().await.client.clone()
    }

    /// `count` orders of `amount` for the rig's shopper, placed through the merchant API.
    pub async fn orders(&self, count: usize, amount: i64) -> Vec<String> {
        storm::shop::place_orders(
            self.url(),
            MERCHANT,
            self.shopper().await,
            count,
            amount,
            Currency::EUR,
        )
        .await
        .expect("orders placed")
    }

    /// The rig's shopper pays `orders` (through the first backend) and waits
    /// until the platform has accepted each payment.
    pub async fn pay(&self, orders: &[String]) -> Vec<PaidOrder> {
        self.pay_via(0, orders).await
    }

    /// The same through backend `n` (with the in-process sandbox, its sandbox holds the payments).
    pub async fn pay_via(&self, n: usize, orders: &[String]) -> Vec<PaidOrder> {
        storm::shop::pay_orders(
            &self.urls[n],
            self.shopper().await,
            &self.db,
            orders,
            Duration::from_secs(30),
            &storm::shop::PaymentIds::Recorded,
        )
        .await
        .expect("orders paid and handed over")
    }

    /// `count` orders of `amount`, placed and paid: what a storm's callbacks report on.
    pub async fn paid_orders(&self, count: usize, amount: i64) -> Vec<PaidOrder> {
        let orders = self.orders(count, amount).await;
        self.pay(&orders).await
    }

    /// One platform per backend URL, signing with the rig's secret; like real
    /// platforms it gives up on a delivery after 5 s and retries.
    pub fn senders(&self) -> Vec<Sender> {
        self.urls
            .iter()
            .map(|url| {
                Sender::with_timeout(url, &self.secret, Duration::from_secs(5)).expect("sender")
            })
            .collect()
    }

    /// The platform's side of a storm: each paid order's success callback
    /// (naming its payment) delivered `copies` times at once (spread over the
    /// backends), each copy retried every `pause` until acknowledged (at most
    /// `deadline`). Returns every answer.
    pub async fn storm(
        &self,
        orders: &[PaidOrder],
        amount: i64,
        copies: usize,
        pause: Duration,
        deadline: Duration,
    ) -> Vec<Answer> {
        let senders = self.senders();
        let callbacks: Vec<Callback> = orders
            .iter()
            .map(|o| Callback::success(o, amount, Currency::EUR))
            .collect();
        let deliveries = callbacks
            .iter()
            .flat_map(|cb| (0..copies).map(move |copy| (cb, copy)))
            .enumerate()
            .map(|(n, (cb, _))| {
                let sender = senders[n % senders.len()].clone();
                let cb = cb.clone();
                async move {
                    sender
                        .deliver_until_acknowledged(&cb, pause, deadline)
                        .await
                }
            });
        join_all(deliveries).await.into_iter().flatten().collect()
    }

    /// Asserts the invariants, and that every order ended PAID with one charge.
    pub async fn assert_each_order_paid_once(&self, orders: &[String], context: &str) {
        match invariants::check(&self.db).await.expect("invariants query") {
            Ok(_) => {}
            Err(violations) => panic!("{context}: {violations}"),
        }
        for order in orders {
            let (status, charges): (String, i64) = sqlx::query_as(
                "SELECT o.status, (SELECT count(*) FROM payment_ledger l WHERE l.order_no = o.order_no)
                 FROM orders o WHERE o.order_no = $1",
            )
            .bind(order)
            .fetch_one(&self.db)
            .await
            .expect("order");
            assert_eq!(
                (status.as_str(), charges),
                ("PAID", 1),
                "{context}: order {order}"
            );
        }
    }

    /// Waits until none of `orders` is PENDING (at most `deadline`), polling the
    /// database (which may be away for a while); returns how many still are.
    pub async fn wait_until_settled(&self, orders: &[String], deadline: Duration) -> i64 {
        let started = tokio::time::Instant::now();
        loop {
            let pending: Option<i64> = sqlx::query_scalar(
                "SELECT count(*) FROM orders WHERE order_no = ANY($1) AND status = 'PENDING'",
            )
            .bind(orders)
            .fetch_one(&self.db)
            .await
            .ok();
            if pending == Some(0) || started.elapsed() > deadline {
                return pending.unwrap_or(orders.len() as i64);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Keeps every backend alive: restarts any that died, until `stop` is set. Returns restarts.
    pub fn supervise(
        &self,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> tokio::task::JoinHandle<u32> {
        let backends = self.backends.clone();
        tokio::spawn(async move {
            let mut restarts = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for backend in &backends {
                    let mut backend = backend.lock().await;
                    if !backend.has_exited() {
                        continue;
                    }
                    // A new roll of the crash dice per start, still determined by the seed.
                    if let Some(seed) = backend
                        .env("CRASH_SEED")
                        .and_then(|s| s.parse::<u64>().ok())
                    {
                        backend.set_env(
                            "CRASH_SEED",
                            seed.wrapping_mul(31).wrapping_add(1).to_string(),
                        );
                    }
                    // A crash point may fire again while it starts; the next round retries.
                    let _ = backend.revive().await;
                    restarts += 1;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            restarts
        })
    }
}

/// The order numbers of paid orders.
pub fn order_nos(orders: &[PaidOrder]) -> Vec<String> {
    orders.iter().map(|o| o.order_no.clone()).collect()
}

/// A step of pressing "Pay now": asking for a request token, or paying with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayStep {
    /// `POST /api/orders/{order}/request-token`.
    Token,
    /// `POST /api/orders/{order}/pay`.
    Pay,
}

/// Where pressing "Pay now" ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pressed {
    /// The pay was accepted (202, first or replayed): our payment id.
    Accepted(Uuid),
    /// Asking for a token answered 409: the order is final (paid meanwhile).
    NotPayable,
}

/// Presses "Pay now" on `order_no` as the page does, signed in by `http`: a
/// request token, then pay with it. A 5xx or no answer is retried after
/// 200 ms with the same token; a 409 after such a failure (the failed try used
/// the token up but made no attempt: `TOKEN_INVALID`) gets a new token. Any
/// other 4xx is an error, and so is a minute without an accepted pay. Every
/// answer goes to `record`. Each request waits at most 5 s, as a browser's
/// fetch would before the page retries.
pub async fn press_pay_now(
    http: &reqwest::Client,
    url: &str,
    order_no: &str,
    record: impl Fn(PayStep, Answer),
) -> anyhow::Result<Pressed> {
    let started = tokio::time::Instant::now();
    let retry = || async {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "gave up on {order_no} after a minute"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(())
    };
    let answer_of = |sent: &Result<reqwest::Response, reqwest::Error>| match sent {
        Ok(response) => Answer::Status(response.status().as_u16()),
        Err(_) => Answer::NoAnswer,
    };
    'token: loop {
        let sent = http
            .post(format!("{url}/api/orders/{order_no}/request-token"))
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        record(PayStep::Token, answer_of(&sent));
        let token = match sent {
            Ok(response) if response.status().is_success() => {
                let body: serde_json::Value = response.json().await?;
                body["request_token"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| anyhow::anyhow!("no request_token in {body}"))?
            }
            Ok(response) if response.status() == reqwest::StatusCode::CONFLICT => {
                return Ok(Pressed::NotPayable);
            }
            Ok(response) if response.status().is_client_error() => {
                anyhow::bail!("token for {order_no}: {}", response.status())
            }
            _ => {
                retry().await?;
                continue 'token;
            }
        };
        let mut failed_before = false;
        loop {
            let sent = http
                .post(format!("{url}/api/orders/{order_no}/pay"))
                .timeout(Duration::from_secs(5))
                .json(&serde_json::json!({ "request_token": token }))
                .send()
                .await;
            record(PayStep::Pay, answer_of(&sent));
            match sent {
                Ok(response) if response.status() == reqwest::StatusCode::ACCEPTED => {
                    let body: serde_json::Value = response.json().await?;
                    let id = body["payment_id"]
                        .as_str()
                        .ok_or_else(|| anyhow::anyhow!("no payment_id in {body}"))?;
                    return Ok(Pressed::Accepted(Uuid::parse_str(id)?));
                }
                Ok(response)
                    if response.status() == reqwest::StatusCode::CONFLICT && failed_before =>
                {
                    retry().await?;
                    continue 'token;
                }
                Ok(response) if response.status().is_client_error() => {
                    let status = response.status();
                    let body = response.text().await.unwrap_or_default();
                    anyhow::bail!("pay for {order_no}: {status} {body}")
                }
                _ => {
                    failed_before = true;
                    retry().await?;
                }
            }
        }
    }
}

/// Counts answers that are not 2xx (5xx or no answer: the platform will retry).
pub fn failures(answers: &[Answer]) -> usize {
    answers.iter().filter(|a| !a.is_success()).count()
}

/// `platform-sim` on a free port, served by a runtime on a thread of its own
/// (so it answers even while the test's thread waits on a child process):
/// decides each payment after 100 ms and delivers its callbacks (unless `chaos`
/// drops them), retrying every 200 ms for a minute. Stops when dropped.
struct OutsidePlatform {
    url: String,
    simulator: platform_sim::Simulator,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OutsidePlatform {
    fn start(secret: &str, chaos: platform_sim::Chaos) -> anyhow::Result<Self> {
        let simulator = platform_sim::Simulator::try_new(platform_sim::SimConfig {
            secret: callback_signing::CallbackSecret::parse(secret)
                .map_err(|err| anyhow::anyhow!("secret: {err}"))?,
            schedule: "fixed:200msx300".parse()?,
            processing_delay: Duration::from_millis(100),
            chaos,
            ..platform_sim::SimConfig::default()
        })?;
        let router = simulator.router();
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let url = format!("http://{}", listener.local_addr()?);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                tokio::select! {
                    _ = axum::serve(listener, router) => {}
                    _ = stopped => {}
                }
            });
            // Its deliveries still being retried end here too.
            runtime.shutdown_background();
        });
        Ok(Self {
            url,
            simulator,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for OutsidePlatform {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
