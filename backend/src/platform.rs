//! The payment platform client.
//!
//! After a pay attempt commits it is handed to the platform, idempotently by
//! request token (`Idempotency-Key`). The platform then posts a signed result
//! callback to `/api/payments/callback`, at least once.
//!
//! - `PLATFORM_URL` set: a remote platform (`platform-sim` or a real one) over HTTP.
//!   "Submitted" means the platform accepted the payment; it owns the retries.
//! - `PLATFORM_URL` unset: the same simulator runs in this process. It dies with
//!   the process, so at start every attempt of a still-PENDING order is marked
//!   unsubmitted again ([`Platform::forget_in_process_hand_overs`]) and the
//!   dispatcher hands it to the new simulator.

use crate::db::attempts::{self, AttemptRow};
use platform_sim::{CreatePayment, SimConfig, Simulator};
use sqlx::PgPool;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// How old an unsubmitted attempt must be before the dispatcher hands it over again.
const DISPATCH_MIN_AGE_SECS: i64 = 5;

/// Where payments go.
#[derive(Clone)]
pub struct Platform {
    mode: Mode,
    notify_url: String,
    in_flight: Arc<Mutex<HashSet<Uuid>>>,
}

#[derive(Clone)]
enum Mode {
    InProcess(Simulator),
    Remote {
        http: reqwest::Client,
        base_url: String,
    },
}

impl Platform {
    /// The simulator in this process, signing with `secret`, deciding each
    /// payment after `processing_delay` (amounts ending in 13 minor units fail).
    pub fn in_process(
        secret: &str,
        processing_delay: Duration,
        notify_url: String,
    ) -> anyhow::Result<Self> {
        let simulator = Simulator::try_new(SimConfig {
            secret: secret.to_owned(),
            processing_delay,
            ..SimConfig::default()
        })?;
        Ok(Self::with_mode(Mode::InProcess(simulator), notify_url))
    }

    /// A platform at `base_url` (e.g. `http://127.0.0.1:4000`).
    pub fn remote(base_url: &str, notify_url: String) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        let base_url = base_url.trim_end_matches('/').to_owned();
        Ok(Self::with_mode(Mode::Remote { http, base_url }, notify_url))
    }

    fn with_mode(mode: Mode, notify_url: String) -> Self {
        Self {
            mode,
            notify_url,
            in_flight: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// After a restart the in-process simulator has lost every payment it held:
    /// hand the attempts of still-PENDING orders over again. A remote platform
    /// keeps its own, so nothing is reset for it. Returns how many were reset.
    pub async fn forget_in_process_hand_overs(&self, db: &PgPool) -> sqlx::Result<u64> {
        match self.mode {
            Mode::InProcess(_) => attempts::reset_submitted_of_pending_orders(db).await,
            Mode::Remote { .. } => Ok(0),
        }
    }

    /// Hands the payment over; `Ok` once the platform has it.
    async fn hand_over(&self, attempt: &AttemptRow) -> anyhow::Result<String> {
        let request = CreatePayment {
            order_no: attempt.order_no.clone(),
            amount_cents: attempt.amount_cents,
            currency: attempt.currency,
            notify_url: self.notify_url.clone(),
        };
        let key = attempt.request_token.to_string();
        match &self.mode {
            Mode::Remote { http, base_url } => {
                let response = http
                    .post(format!("{base_url}/v1/payments"))
                    .header("idempotency-key", &key)
                    .json(&request)
                    .send()
                    .await?;
                let status = response.status();
                let body: serde_json::Value = response.json().await.unwrap_or_default();
                anyhow::ensure!(status.is_success(), "platform answered {status}: {body}");
                Ok(body["payment_id"].as_str().unwrap_or_default().to_owned())
            }
            Mode::InProcess(simulator) => {
                let (payment, _) = simulator.create_payment(&key, request).await?;
                Ok(payment.payment_id)
            }
        }
    }
}

/// Hands one committed attempt to the platform and records when that is done.
/// Concurrent calls for the same attempt in this process collapse into one.
pub async fn dispatch(
    db: &PgPool,
    platform: &Platform,
    attempt: &AttemptRow,
) -> anyhow::Result<()> {
    {
        let mut in_flight = platform.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if !in_flight.insert(attempt.payment_id) {
            return Ok(());
        }
    }
    let result = platform.hand_over(attempt).await;
    platform
        .in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&attempt.payment_id);
    let platform_payment_id = result?;
    attempts::mark_submitted(db, attempt.payment_id).await?;
    tracing::info!(payment_id = %attempt.payment_id, %platform_payment_id, "payment handed to the platform");
    Ok(())
}

/// Forever: hands over again the attempts that a crash (or a platform outage)
/// left committed but unsubmitted.
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
        for attempt in stuck {
            let (db, platform) = (db.clone(), platform.clone());
            tokio::spawn(async move {
                tracing::info!(payment_id = %attempt.payment_id, "handing over an attempt left unsubmitted");
                if let Err(err) = dispatch(&db, &platform, &attempt).await {
                    tracing::warn!(error = %err, payment_id = %attempt.payment_id, "hand-over failed; will retry");
                }
            });
        }
    }
}
