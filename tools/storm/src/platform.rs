//! Signs and delivers callbacks as a payment platform does: Standard Webhooks,
//! re-signed with a fresh timestamp at each delivery, same id and body. And
//! [`OutsidePlatform`]: a platform that decides payments and refunds but posts
//! no callbacks, outside the backend, so it outlives the backend's restarts.

use crate::shop::{HandedOverRefund, PaidOrder};
use api_types::Currency;
use api_types::api::CallbackType;
use api_types::platform::PaymentStatus;
use callback_signing::{CallbackSecret, PaymentResult, RefundResult};
use std::time::Duration;
use uuid::Uuid;

/// One callback: its id and exact body bytes, identical at every delivery.
#[derive(Debug, Clone)]
pub struct Callback {
    /// `webhook-id`.
    pub id: String,
    /// The JSON body.
    pub body: String,
    /// The order it is about (paid, or refunded).
    pub order_no: String,
}

impl Callback {
    /// The platform's `payment.succeeded` callback for a payment the shopper
    /// made: it names the order, our payment id (as the merchant reference the
    /// platform echoes) and the platform's payment id, as a real platform's does.
    pub fn success(paid: &PaidOrder, amount_cents: i64, currency: Currency) -> Self {
        let merchant_reference = paid.payment_id.to_string();
        let body = callback_signing::event_body(
            &PaymentResult {
                kind: CallbackType::PaymentSucceeded,
                order_no: &paid.order_no,
                amount_cents,
                currency,
                payment_id: &paid.platform_payment_id,
                merchant_reference: Some(&merchant_reference),
            },
            time::OffsetDateTime::now_utc(),
        );
        Self {
            id: format!("evt_{}", Uuid::new_v4().simple()),
            body: String::from_utf8_lossy(&body).into_owned(),
            order_no: paid.order_no.clone(),
        }
    }

    /// The platform's `refund.succeeded` callback for a refund it accepted:
    /// it names the order, the refunded payment (the platform's id, and ours
    /// as the merchant reference it echoes), our refund number and the
    /// platform's id for the refund, as a real platform's does.
    pub fn refund_success(refund: &HandedOverRefund, paid: &PaidOrder) -> Self {
        let merchant_reference = paid.payment_id.to_string();
        let body = callback_signing::refund_event_body(
            &RefundResult {
                kind: CallbackType::RefundSucceeded,
                order_no: &refund.order_no,
                amount_cents: refund.amount_cents,
                currency: refund.currency,
                payment_id: &refund.platform_payment_id,
                refund_no: &refund.refund_no,
                refund_id: &refund.platform_refund_id,
                merchant_reference: Some(&merchant_reference),
            },
            time::OffsetDateTime::now_utc(),
        );
        Self {
            id: format!("evt_{}", Uuid::new_v4().simple()),
            body: String::from_utf8_lossy(&body).into_owned(),
            order_no: refund.order_no.clone(),
        }
    }
}

/// `platform-sim` served by this process: it takes payments and refunds,
/// decides each 100 ms after it is handed over, and posts no callbacks
/// (chaos `drop_callbacks`), so the run's callbacks are the ones that book.
/// Unlike the backend's in-process sandbox it outlives the backend's
/// restarts, as a real platform does: a refund of a payment made before a
/// restart finds that payment. Stops serving when dropped.
pub struct OutsidePlatform {
    url: String,
    simulator: platform_sim::Simulator,
    server: tokio::task::JoinHandle<()>,
}

impl OutsidePlatform {
    /// Serves it on a free local port, signing with `secret` (`whsec_...`).
    pub async fn start(secret: &str) -> anyhow::Result<Self> {
        let simulator = platform_sim::Simulator::try_new(platform_sim::SimConfig {
            secret: CallbackSecret::parse(secret)
                .map_err(|err| anyhow::anyhow!("bad webhook secret: {err}"))?,
            processing_delay: Duration::from_millis(100),
            chaos: platform_sim::Chaos {
                drop_callbacks: true,
                ..platform_sim::Chaos::default()
            },
            ..platform_sim::SimConfig::default()
        })?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let router = simulator.router();
        let server = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, router).await {
                eprintln!("platform-sim stopped serving: {err}");
            }
        });
        Ok(Self {
            url,
            simulator,
            server,
        })
    }

    /// Its base URL, the backend's `PLATFORM_URL`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Waits until it has decided every payment of `paid` SUCCEEDED (a refund
    /// of a payment still PROCESSING is refused), for at most `deadline`.
    pub async fn wait_succeeded(
        &self,
        paid: &[PaidOrder],
        deadline: Duration,
    ) -> anyhow::Result<()> {
        let started = tokio::time::Instant::now();
        loop {
            let undecided: Vec<&str> = paid
                .iter()
                .filter(|order| {
                    self.simulator
                        .payment(&order.platform_payment_id)
                        .is_none_or(|payment| payment.status != PaymentStatus::Succeeded)
                })
                .map(|order| order.platform_payment_id.as_str())
                .collect();
            if undecided.is_empty() {
                return Ok(());
            }
            anyhow::ensure!(
                started.elapsed() < deadline,
                "the platform did not decide {} of {} payments SUCCEEDED within {deadline:?}: {undecided:?}",
                undecided.len(),
                paid.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for OutsidePlatform {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// What one delivery got back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Answer {
    /// An HTTP status.
    Status(u16),
    /// No HTTP answer (refused, reset, timed out).
    NoAnswer,
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Status(code) => write!(f, "{code}"),
            Self::NoAnswer => f.write_str("no answer"),
        }
    }
}

impl Answer {
    /// A 2xx: the platform would stop retrying.
    pub fn is_success(self) -> bool {
        matches!(self, Self::Status(200..=299))
    }
}

/// A sender of signed callbacks.
#[derive(Clone)]
pub struct Sender {
    http: reqwest::Client,
    key: CallbackSecret,
    callback_url: String,
}

impl Sender {
    /// Signs with `secret` (`whsec_...`) and posts to `{backend_url}/api/payments/callback`,
    /// giving up on a delivery after 30 s.
    pub fn new(backend_url: &str, secret: &str) -> anyhow::Result<Self> {
        Self::with_timeout(backend_url, secret, Duration::from_secs(30))
    }

    /// The same, giving up on a delivery after `timeout` (real platforms wait about 5 s).
    pub fn with_timeout(
        backend_url: &str,
        secret: &str,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let key = CallbackSecret::parse(secret)
            .map_err(|err| anyhow::anyhow!("bad webhook secret: {err}"))?;
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(256)
            // The backend closes a kept-alive connection that sends nothing for
            // HEADER_READ_TIMEOUT (10 s): a retry 10 s after the last answer
            // could go out on a connection closing at that very moment and get
            // no answer. Idle connections are dropped well before.
            .pool_idle_timeout(backend::startup::HEADER_READ_TIMEOUT / 2)
            .build()?;
        Ok(Self {
            http,
            key,
            callback_url: format!(
                "{}/api/payments/callback",
                backend_url.trim_end_matches('/')
            ),
        })
    }

    /// Delivers once.
    pub async fn deliver(&self, callback: &Callback) -> Answer {
        let Ok(signed) = self.key.sign_now(&callback.id, callback.body.as_bytes()) else {
            return Answer::NoAnswer;
        };
        let mut request = self
            .http
            .post(&self.callback_url)
            .header("content-type", "application/json");
        for (name, value) in signed.pairs() {
            request = request.header(name, value);
        }
        let sent = request.body(callback.body.clone()).send().await;
        match sent {
            Ok(response) => Answer::Status(response.status().as_u16()),
            Err(_) => Answer::NoAnswer,
        }
    }

    /// Delivers until a 2xx, as a platform's retry loop would, waiting `pause`
    /// between tries, for at most `deadline`. Returns every answer.
    pub async fn deliver_until_acknowledged(
        &self,
        callback: &Callback,
        pause: Duration,
        deadline: Duration,
    ) -> Vec<Answer> {
        let started = tokio::time::Instant::now();
        let mut answers = Vec::new();
        loop {
            let answer = self.deliver(callback).await;
            answers.push(answer);
            if answer.is_success() || started.elapsed() > deadline {
                return answers;
            }
            tokio::time::sleep(pause).await;
        }
    }
}
