//! Test support: the simulator on a random port, a receiver on another that
//! checks every signature and can refuse or stall, and typed request helpers.

use api_types::api::CallbackEvent;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use platform_protocols::keys::LocalKeys;
use platform_sim::{
    CallbackSecret, Payment, PaymentCreated, PaymentStatus, Refund, Schedule, SimConfig, Simulator,
};
use reqwest::Response;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How long a test waits for something that should happen in well under a second.
pub const PATIENCE: Duration = Duration::from_secs(10);

static TRACING: Once = Once::new();

/// One merchant and platform key set for the whole suite (WeChat Pay and
/// Alipay alike): RSA key generation is the slow part.
pub fn local_keys() -> &'static LocalKeys {
    static KEYS: OnceLock<LocalKeys> = OnceLock::new();
    KEYS.get_or_init(|| LocalKeys::generate().expect("a key set"))
}

/// The suite's defaults: retries every 50 ms (1 s scaled by 0.05), a 5 ms processing delay.
pub fn test_config() -> SimConfig {
    SimConfig {
        secret: CallbackSecret::generate(),
        schedule: Schedule::Fixed {
            interval: Duration::from_secs(1),
            count: 10,
        },
        time_scale: 0.05,
        processing_delay: Duration::from_millis(100),
        request_timeout: Duration::from_secs(2),
        ..SimConfig::default()
    }
}

/// A simulator served on a random port.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub address: String,
    /// The simulator behind it, for in-process checks.
    pub simulator: Simulator,
    /// The secret it signs with.
    pub secret: CallbackSecret,
    /// Client for requests.
    pub http: reqwest::Client,
    server: JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A server task (a receiver of callbacks) on its own port, stopped when dropped.
pub struct Served {
    /// Where it listens.
    pub address: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `router` on a random local port.
pub async fn serve(router: Router) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a random port");
    serve_on(listener, router)
}

/// Serves `router` on a bound listener.
pub fn serve_on(listener: TcpListener, router: Router) -> Served {
    let address = listener.local_addr().expect("local address");
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.expect("serves");
    });
    Served { address, task }
}

/// Serves one POST `handler` at `path` with `state` on a random local port;
/// returns its URL and the server.
pub async fn serve_post<H, T, S>(path: &str, handler: H, state: S) -> (String, Served)
where
    H: axum::handler::Handler<T, S>,
    T: 'static,
    S: Clone + Send + Sync + 'static,
{
    let router = Router::new().route(path, post(handler)).with_state(state);
    let server = serve(router).await;
    (format!("http://{}{path}", server.address), server)
}

/// Polls `read` until it holds at least `count` items (deliveries, notifications);
/// panics with what came otherwise.
pub async fn wait_for_count<T: std::fmt::Debug>(count: usize, read: impl Fn() -> Vec<T>) -> Vec<T> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let items = read();
        if items.len() >= count {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "expected {count}, got {items:#?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Starts a simulator with the suite's defaults after `adjust` changed them.
pub async fn spawn_app(adjust: impl FnOnce(&mut SimConfig)) -> TestApp {
    TRACING.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("platform_sim=info"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    });
    let mut config = test_config();
    adjust(&mut config);
    let secret = config.secret.clone();
    let simulator = Simulator::new(config);
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a random port");
    let address = format!("http://{}", listener.local_addr().expect("local address"));
    let router = simulator.router();
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .await
            .expect("simulator serves");
    });
    TestApp {
        address,
        simulator,
        secret,
        http: reqwest::Client::new(),
        server,
    }
}

/// A `POST /v1/payments` body.
pub fn payment_body(order_no: &str, amount_cents: i64, notify_url: &str) -> Value {
    json!({
        "order_no": order_no,
        "amount_cents": amount_cents,
        "currency": "EUR",
        "notify_url": notify_url,
    })
}

/// A `POST /v1/payments` body with a `merchant_reference`.
pub fn referenced_body(
    order_no: &str,
    amount_cents: i64,
    notify_url: &str,
    reference: &str,
) -> Value {
    let mut body = payment_body(order_no, amount_cents, notify_url);
    body["merchant_reference"] = json!(reference);
    body
}

/// A `POST /v1/refunds` body in EUR.
pub fn refund_body(
    payment_id: &str,
    refund_no: &str,
    amount_cents: i64,
    notify_url: &str,
) -> Value {
    json!({
        "payment_id": payment_id,
        "refund_no": refund_no,
        "amount_cents": amount_cents,
        "currency": "EUR",
        "notify_url": notify_url,
    })
}

/// A fresh merchant reference, as the checkout sends (its attempt's payment id).
pub fn new_reference() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl TestApp {
    /// `POST {path}` with a JSON body, and the idempotency key when given.
    async fn post_idempotent(&self, path: &str, key: Option<&str>, body: &Value) -> Response {
        let mut request = self.http.post(format!("{}{path}", self.address)).json(body);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request.send().await.expect("simulator answers")
    }

    /// `GET {path}`.
    async fn get(&self, path: &str) -> Response {
        self.http
            .get(format!("{}{path}", self.address))
            .send()
            .await
            .expect("simulator answers")
    }

    /// `POST /v1/payments`, with the idempotency key when given.
    pub async fn post_payment(&self, key: Option<&str>, body: &Value) -> Response {
        self.post_idempotent("/v1/payments", key, body).await
    }

    /// Creates a payment that must be new, notifying `notify_url`.
    pub async fn pay(&self, amount_cents: i64, notify_url: &str) -> PaymentCreated {
        let key = uuid::Uuid::new_v4().to_string();
        let order_no = format!("ord_{}", uuid::Uuid::new_v4().simple());
        let response = self
            .post_payment(
                Some(&key),
                &payment_body(&order_no, amount_cents, notify_url),
            )
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        response.json().await.expect("payment created body")
    }

    /// Creates a payment under `reference` that must be new, notifying `notify_url`.
    pub async fn pay_with_reference(
        &self,
        amount_cents: i64,
        notify_url: &str,
        reference: &str,
    ) -> PaymentCreated {
        let key = uuid::Uuid::new_v4().to_string();
        let order_no = format!("ord_{}", uuid::Uuid::new_v4().simple());
        let body = referenced_body(&order_no, amount_cents, notify_url, reference);
        let response = self.post_payment(Some(&key), &body).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        response.json().await.expect("payment created body")
    }

    /// `GET /v1/payments/{payment_id}`.
    pub async fn get_payment(&self, payment_id: &str) -> Response {
        self.get(&format!("/v1/payments/{payment_id}")).await
    }

    /// `GET /v1/payments/by-reference/{reference}`.
    pub async fn get_by_reference(&self, reference: &str) -> Response {
        self.get(&format!("/v1/payments/by-reference/{reference}"))
            .await
    }

    /// `POST /v1/payments/{payment_id}/close`.
    pub async fn close_payment(&self, payment_id: &str) -> Response {
        self.http
            .post(format!("{}/v1/payments/{payment_id}/close", self.address))
            .send()
            .await
            .expect("simulator answers")
    }

    /// `POST /v1/payments/by-reference/{reference}/close`.
    pub async fn close_by_reference(&self, reference: &str) -> Response {
        self.http
            .post(format!(
                "{}/v1/payments/by-reference/{reference}/close",
                self.address
            ))
            .send()
            .await
            .expect("simulator answers")
    }

    /// Polls `GET /v1/payments/{payment_id}` until `done` holds; panics with the last view otherwise.
    pub async fn wait_for_payment(
        &self,
        payment_id: &str,
        done: impl Fn(&Payment) -> bool,
    ) -> Payment {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let response = self.get_payment(payment_id).await;
            assert_eq!(response.status(), StatusCode::OK);
            let payment: Payment = response.json().await.expect("payment body");
            if done(&payment) {
                return payment;
            }
            assert!(Instant::now() < deadline, "gave up waiting: {payment:#?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Creates a payment under `reference` and waits until it SUCCEEDED.
    pub async fn paid(&self, amount_cents: i64, notify_url: &str, reference: &str) -> Payment {
        let created = self
            .pay_with_reference(amount_cents, notify_url, reference)
            .await;
        self.wait_for_payment(&created.payment_id, |p| {
            p.status == PaymentStatus::Succeeded
        })
        .await
    }

    /// `POST /v1/refunds`, with the idempotency key when given.
    pub async fn post_refund(&self, key: Option<&str>, body: &Value) -> Response {
        self.post_idempotent("/v1/refunds", key, body).await
    }

    /// `GET /v1/refunds/{refund_id}`.
    pub async fn get_refund(&self, refund_id: &str) -> Response {
        self.get(&format!("/v1/refunds/{refund_id}")).await
    }

    /// `GET /v1/refunds/by-reference/{refund_no}`.
    pub async fn get_refund_by_reference(&self, refund_no: &str) -> Response {
        self.get(&format!("/v1/refunds/by-reference/{refund_no}"))
            .await
    }

    /// Polls the refund (looking from the side, so no query is counted) until
    /// `done` holds; panics with the last view otherwise.
    pub async fn wait_for_refund(&self, refund_id: &str, done: impl Fn(&Refund) -> bool) -> Refund {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let refund = self.simulator.refund(refund_id).expect("the refund exists");
            if done(&refund) {
                return refund;
            }
            assert!(Instant::now() < deadline, "gave up waiting: {refund:#?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `POST /v1/chaos`.
    pub async fn set_chaos(&self, knobs: &Value) -> Response {
        self.http
            .post(format!("{}/v1/chaos", self.address))
            .json(knobs)
            .send()
            .await
            .expect("simulator answers")
    }
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Behaviour {
    /// Answer 500 to this many validly signed deliveries, then 200.
    pub fail_first: usize,
    /// Hold this many first deliveries for `stall_for` before answering.
    pub stall_first: usize,
    /// How long a stalled delivery is held.
    pub stall_for: Duration,
}

impl Behaviour {
    /// Answers 200 to every validly signed delivery.
    pub fn accept_all() -> Self {
        Self::default()
    }

    /// Answers 500 to the first `count` deliveries, then 200.
    pub fn fail_first(count: usize) -> Self {
        Self {
            fail_first: count,
            ..Self::default()
        }
    }
}

/// One callback as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `webhook-id`.
    pub callback_id: String,
    /// `webhook-timestamp`.
    pub signed_at: i64,
    /// True when the signature verified with the receiver's secret.
    pub signature_valid: bool,
    /// The parsed body.
    pub event: CallbackEvent,
    /// When it arrived.
    pub arrived: Instant,
}

#[derive(Clone)]
struct ReceiverState {
    verifier: CallbackSecret,
    behaviour: Behaviour,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
}

/// A merchant's callback endpoint on its own random port.
pub struct Receiver {
    /// The URL to give as `notify_url`.
    pub url: String,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    _server: Served,
}

impl Receiver {
    /// Starts a receiver on a random port that verifies with `secret`.
    pub async fn start(secret: &CallbackSecret, behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a random port");
        Self::serve(listener, secret, behaviour)
    }

    /// Starts a receiver on a given address (to bring a closed port back to life).
    pub async fn start_on(
        address: SocketAddr,
        secret: &CallbackSecret,
        behaviour: Behaviour,
    ) -> Self {
        let listener = TcpListener::bind(address)
            .await
            .expect("bind the reserved port");
        Self::serve(listener, secret, behaviour)
    }

    fn serve(listener: TcpListener, secret: &CallbackSecret, behaviour: Behaviour) -> Self {
        let deliveries = Arc::new(Mutex::new(Vec::new()));
        let state = ReceiverState {
            verifier: secret.clone(),
            behaviour,
            deliveries: Arc::clone(&deliveries),
        };
        let router = Router::new()
            .route("/callback", post(receive))
            .with_state(state);
        let server = serve_on(listener, router);
        Self {
            url: format!("http://{}/callback", server.address),
            deliveries,
            _server: server,
        }
    }

    /// Everything received so far, in arrival order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().expect("not poisoned").clone()
    }

    /// Waits until at least `count` deliveries arrived; panics with what came otherwise.
    pub async fn wait_for(&self, count: usize) -> Vec<Delivery> {
        wait_for_count(count, || self.deliveries()).await
    }

    /// Waits `quiet` and returns everything received: for checking that nothing more came.
    pub async fn after_quiet(&self, quiet: Duration) -> Vec<Delivery> {
        tokio::time::sleep(quiet).await;
        self.deliveries()
    }
}

async fn receive(
    State(state): State<ReceiverState>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let signature_valid = state.verifier.verify(&body, &headers).is_ok();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let delivery = Delivery {
        callback_id: header("webhook-id"),
        signed_at: header("webhook-timestamp").parse().unwrap_or_default(),
        signature_valid,
        event: serde_json::from_slice(&body).expect("body is a CallbackEvent"),
        arrived: Instant::now(),
    };
    let index = {
        let mut deliveries = state.deliveries.lock().expect("not poisoned");
        deliveries.push(delivery);
        deliveries.len() - 1
    };
    if index < state.behaviour.stall_first {
        tokio::time::sleep(state.behaviour.stall_for).await;
    }
    if !signature_valid {
        StatusCode::UNAUTHORIZED
    } else if index < state.behaviour.fail_first {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    }
}

/// The status of an answer and its JSON body.
pub async fn status_and_body(response: Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, response.json().await.expect("json body"))
}

/// The time between consecutive arrivals.
pub fn gaps(deliveries: &[Delivery]) -> Vec<Duration> {
    deliveries
        .windows(2)
        .map(|pair| pair[1].arrived.duration_since(pair[0].arrived))
        .collect()
}
