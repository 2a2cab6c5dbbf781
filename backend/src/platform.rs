//! The payment platform client, and the in-process sandbox platform behind it.
//!
//! After a pay attempt commits, the attempt is handed to the platform; the
//! platform later posts a signed result callback to `/api/payments/callback`,
//! at least once. Handing over is idempotent by request token, so the dispatcher
//! can safely re-send attempts that a crash left unsubmitted.

use crate::db::attempts::{self, AttemptRow};
use crate::webhook::{HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, WebhookKey};
use shared::api::{CallbackData, CallbackEvent, CallbackType, EventTimestamp};
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

/// Retry delays of the sandbox's callback delivery (bounded: it gives up after the last).
const SANDBOX_RETRY_DELAYS: [Duration; 8] = [
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(30),
    Duration::from_secs(60),
];

/// How old an unsubmitted attempt must be before the dispatcher re-sends it.
const DISPATCH_MIN_AGE_SECS: i64 = 5;

/// What the platform needs to take a payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentRequest {
    /// Our payment id.
    pub payment_id: Uuid,
    /// The idempotency key of the hand-over.
    pub request_token: Uuid,
    /// Our order number, echoed in the callback.
    pub order_no: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: shared::Currency,
}

impl TryFrom<&AttemptRow> for PaymentRequest {
    type Error = anyhow::Error;

    fn try_from(row: &AttemptRow) -> Result<Self, Self::Error> {
        Ok(Self {
            payment_id: row.payment_id,
            request_token: row.request_token,
            order_no: row.order_no.clone(),
            amount_cents: row.amount_cents,
            currency: row.currency.parse()?,
        })
    }
}

/// The payment platform as the backend sees it.
#[derive(Clone)]
pub struct Platform {
    sandbox: Arc<Sandbox>,
}

struct Sandbox {
    http: reqwest::Client,
    key: WebhookKey,
    callback_url: String,
    delay: Duration,
    /// Request token -> platform payment id: the sandbox's idempotency record.
    accepted: Mutex<HashMap<Uuid, String>>,
}

impl Platform {
    /// An in-process sandbox that signs its callbacks with `key` and posts them to `callback_url`.
    /// Outcome rule: an amount ending in 13 minor units fails, anything else succeeds.
    pub fn sandbox(key: WebhookKey, callback_url: String, delay: Duration) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Self {
            sandbox: Arc::new(Sandbox {
                http,
                key,
                callback_url,
                delay,
                accepted: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Hands a payment to the platform. The same request token returns the same
    /// platform payment id and never starts a second payment.
    #[tracing::instrument(name = "platform.submit", skip(self), fields(order_no = %request.order_no))]
    pub fn submit(&self, request: &PaymentRequest) -> String {
        let sandbox = &self.sandbox;
        let mut accepted = sandbox
            .accepted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(existing) = accepted.get(&request.request_token) {
            return existing.clone();
        }
        let platform_payment_id = format!("pay_{}", request.payment_id.simple());
        accepted.insert(request.request_token, platform_payment_id.clone());
        drop(accepted);
        tokio::spawn(Arc::clone(sandbox).deliver(request.clone(), platform_payment_id.clone()));
        platform_payment_id
    }
}

impl Sandbox {
    async fn deliver(self: Arc<Self>, request: PaymentRequest, payment_id: String) {
        tokio::time::sleep(self.delay).await;
        let kind = if request.amount_cents % 100 == 13 {
            CallbackType::PaymentFailed
        } else {
            CallbackType::PaymentSucceeded
        };
        let event = CallbackEvent {
            kind,
            timestamp: EventTimestamp::Text(crate::db::rfc3339(OffsetDateTime::now_utc())),
            data: CallbackData {
                order_no: request.order_no.clone(),
                amount_cents: request.amount_cents,
                currency: request.currency,
                payment_id,
            },
        };
        let callback_id = format!("evt_{}", Uuid::new_v4().simple());
        let Ok(body) = serde_json::to_vec(&event) else {
            tracing::error!("sandbox could not serialise its callback");
            return;
        };
        for (attempt, delay) in std::iter::once(Duration::ZERO)
            .chain(SANDBOX_RETRY_DELAYS)
            .enumerate()
        {
            tokio::time::sleep(delay).await;
            match self.post(&callback_id, &body).await {
                Ok(status) if status.is_success() => {
                    tracing::info!(%callback_id, order_no = %request.order_no, attempt, "sandbox callback delivered");
                    return;
                }
                Ok(status) => {
                    tracing::warn!(%callback_id, %status, attempt, "sandbox callback refused; will retry")
                }
                Err(err) => {
                    tracing::warn!(%callback_id, error = %err, attempt, "sandbox callback failed; will retry")
                }
            }
        }
        tracing::error!(%callback_id, order_no = %request.order_no, "sandbox gave up delivering a callback");
    }

    async fn post(&self, callback_id: &str, body: &[u8]) -> anyhow::Result<reqwest::StatusCode> {
        // Signed at each try, as real platforms do, so the timestamp stays fresh.
        let timestamp = OffsetDateTime::now_utc().unix_timestamp();
        let signature = self.key.sign(callback_id, timestamp, body)?;
        let response = self
            .http
            .post(&self.callback_url)
            .header(HEADER_ID, callback_id)
            .header(HEADER_TIMESTAMP, timestamp.to_string())
            .header(HEADER_SIGNATURE, signature)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await?;
        Ok(response.status())
    }
}

/// Hands one committed attempt to the platform and records that it was accepted.
pub async fn dispatch(
    db: &PgPool,
    platform: &Platform,
    attempt: &AttemptRow,
) -> anyhow::Result<()> {
    let request = PaymentRequest::try_from(attempt)?;
    let platform_payment_id = platform.submit(&request);
    attempts::mark_submitted(db, attempt.payment_id).await?;
    tracing::info!(payment_id = %attempt.payment_id, %platform_payment_id, "payment handed to the platform");
    Ok(())
}

/// Forever: re-sends attempts a crash left committed but unsubmitted.
pub async fn run_dispatcher(db: PgPool, platform: Platform) {
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    loop {
        tick.tick().await;
        let stuck = match attempts::list_unsubmitted(&db, DISPATCH_MIN_AGE_SECS, 100).await {
            Ok(rows) => rows,
            Err(err) => {
                tracing::warn!(error = %err, "dispatcher could not list unsubmitted attempts");
                continue;
            }
        };
        for attempt in &stuck {
            tracing::info!(payment_id = %attempt.payment_id, "re-sending an attempt left unsubmitted");
            if let Err(err) = dispatch(&db, &platform, attempt).await {
                tracing::warn!(error = %err, payment_id = %attempt.payment_id, "re-send failed");
            }
        }
    }
}
