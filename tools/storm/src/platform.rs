//! Signs and delivers callbacks as a payment platform does: Standard Webhooks,
//! re-signed with a fresh timestamp at each delivery, same id and body.

use serde_json::json;
use standardwebhooks::Webhook;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// One callback: its id and exact body bytes, identical at every delivery.
#[derive(Debug, Clone)]
pub struct Callback {
    /// `webhook-id`.
    pub id: String,
    /// The JSON body.
    pub body: String,
    /// The order it pays.
    pub order_no: String,
}

impl Callback {
    /// A `payment.succeeded` callback for an order.
    pub fn success(order_no: &str, amount_cents: i64, currency: &str) -> Self {
        let body = json!({
            "type": "payment.succeeded",
            "timestamp": time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            "data": {
                "order_no": order_no,
                "amount_cents": amount_cents,
                "currency": currency,
                "payment_id": format!("pay_{}", Uuid::new_v4().simple()),
            }
        });
        Self {
            id: format!("evt_{}", Uuid::new_v4().simple()),
            body: body.to_string(),
            order_no: order_no.to_owned(),
        }
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
    key: Arc<Webhook>,
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
        let key =
            Webhook::new(secret).map_err(|err| anyhow::anyhow!("bad webhook secret: {err}"))?;
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(256)
            .build()?;
        Ok(Self {
            http,
            key: Arc::new(key),
            callback_url: format!(
                "{}/api/payments/callback",
                backend_url.trim_end_matches('/')
            ),
        })
    }

    /// Delivers once.
    pub async fn deliver(&self, callback: &Callback) -> Answer {
        let timestamp = time::OffsetDateTime::now_utc().unix_timestamp();
        let Ok(signature) = self
            .key
            .sign(&callback.id, timestamp, callback.body.as_bytes())
        else {
            return Answer::NoAnswer;
        };
        let sent = self
            .http
            .post(&self.callback_url)
            .header("content-type", "application/json")
            .header("webhook-id", &callback.id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(callback.body.clone())
            .send()
            .await;
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
