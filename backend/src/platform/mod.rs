//! The payment platform client: hands one payment over, idempotently.
//!
//! After a pay attempt commits it is handed to the platform, idempotently by
//! request token (`Idempotency-Key`). The platform then posts a signed result
//! callback to `/api/payments/callback`, at least once. [`dispatcher`] decides
//! when to hand over (right after the attempt commits, and again for attempts a
//! crash left behind); this module only knows how.
//!
//! - `PLATFORM=remote`: a platform over HTTP at `PLATFORM_URL` (`platform-sim` or
//!   a real one). "Submitted" means the platform accepted the payment; it owns the retries.
//! - `PLATFORM=sandbox` (builds with the `sandbox` feature): the same simulator
//!   runs in this process. It dies with the process, so at start every attempt of
//!   a still-PENDING order is marked unsubmitted again
//!   ([`Platform::forget_in_process_hand_overs`]) and the dispatcher hands it to
//!   the new simulator.

pub mod dispatcher;

use crate::config::PlatformKind;
use crate::db::attempts::AttemptRow;
use api_types::platform::{ALREADY_PAID, CreatePayment, PaymentState};
#[cfg(feature = "sandbox")]
use platform_sim::{SimConfig, Simulator};
use sqlx::PgPool;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// Where payments go.
#[derive(Clone)]
pub struct Platform {
    mode: Mode,
    notify_url: String,
    /// Payments being handed over by this process right now (see [`dispatcher::dispatch`]).
    pub(crate) in_flight: Arc<Mutex<HashSet<Uuid>>>,
}

#[derive(Clone)]
enum Mode {
    #[cfg(feature = "sandbox")]
    InProcess(Simulator),
    Remote {
        http: reqwest::Client,
        base_url: String,
    },
}

impl Platform {
    /// The simulator in this process, signing with `secret`, deciding each
    /// payment after `processing_delay` (amounts ending in 13 minor units fail),
    /// and posting no callbacks when `drop_callbacks`.
    #[cfg(feature = "sandbox")]
    pub fn in_process(
        secret: &callback_signing::CallbackSecret,
        processing_delay: Duration,
        drop_callbacks: bool,
        notify_url: String,
    ) -> anyhow::Result<Self> {
        let simulator = Simulator::try_new(SimConfig {
            secret: secret.clone(),
            processing_delay,
            chaos: platform_sim::Chaos {
                drop_callbacks,
                ..platform_sim::Chaos::default()
            },
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

    /// Which kind of platform this is.
    pub fn kind(&self) -> PlatformKind {
        match self.mode {
            #[cfg(feature = "sandbox")]
            Mode::InProcess(_) => PlatformKind::Sandbox,
            Mode::Remote { .. } => PlatformKind::Remote,
        }
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
            #[cfg(feature = "sandbox")]
            Mode::InProcess(_) => crate::db::attempts::reset_submitted_of_pending_orders(db).await,
            Mode::Remote { .. } => {
                let _ = db;
                Ok(0)
            }
        }
    }

    /// Hands the payment over; `Ok` once the platform has it.
    pub(crate) async fn hand_over(&self, attempt: &AttemptRow) -> Result<String, HandOverError> {
        let request = CreatePayment {
            order_no: attempt.order_no.clone(),
            amount_cents: attempt.amount_cents,
            currency: attempt.currency,
            notify_url: self.notify_url.clone(),
            merchant_reference: Some(attempt.payment_id.to_string()),
        };
        let key = attempt.request_token.to_string();
        match &self.mode {
            Mode::Remote { http, base_url } => {
                let response = http
                    .post(format!("{base_url}/v1/payments"))
                    .header("idempotency-key", &key)
                    .json(&request)
                    .send()
                    .await
                    .map_err(|err| HandOverError::Unknown(err.into()))?;
                let status = response.status();
                let body: serde_json::Value = response.json().await.unwrap_or_default();
                if status.is_client_error() {
                    return Err(HandOverError::Refused(format!(
                        "platform answered {status}: {body}"
                    )));
                }
                if !status.is_success() {
                    return Err(HandOverError::Unknown(anyhow::anyhow!(
                        "platform answered {status}: {body}"
                    )));
                }
                Ok(body["payment_id"].as_str().unwrap_or_default().to_owned())
            }
            #[cfg(feature = "sandbox")]
            Mode::InProcess(simulator) => {
                let (payment, _) = simulator
                    .create_payment(&key, request)
                    .await
                    .map_err(|err| HandOverError::Unknown(err.into()))?;
                Ok(payment.payment_id)
            }
        }
    }
}

/// What the platform answered to a close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseAnswer {
    /// The payment will not be taken: its state now (`CLOSED`, or `FAILED` when
    /// the platform had already refused it).
    Closed(PaymentState),
    /// The payment succeeded before the close arrived: it must be booked.
    AlreadyPaid,
    /// The platform has no payment by that reference: it was never handed over.
    NotFound,
}

/// A query or close that got no usable answer (no connection, a timeout, a
/// 5xx, a body that does not parse). Nothing is concluded from it; the worker
/// asks again later.
#[derive(Debug, thiserror::Error)]
#[error("the platform gave no usable answer: {0:#}")]
pub struct NoAnswer(anyhow::Error);

impl Platform {
    /// Asks the platform where the payment with our `payment_id` (its
    /// merchant reference) stands. `None`: the platform does not have it.
    pub async fn query(&self, payment_id: Uuid) -> Result<Option<PaymentState>, NoAnswer> {
        let reference = payment_id.to_string();
        match &self.mode {
            Mode::Remote { http, base_url } => {
                let response = http
                    .get(format!("{base_url}/v1/payments/by-reference/{reference}"))
                    .send()
                    .await
                    .map_err(|err| NoAnswer(err.into()))?;
                match response.status() {
                    reqwest::StatusCode::NOT_FOUND => Ok(None),
                    status if status.is_success() => {
                        let state = response
                            .json::<PaymentState>()
                            .await
                            .map_err(|err| NoAnswer(err.into()))?;
                        Ok(Some(state))
                    }
                    status => Err(NoAnswer(anyhow::anyhow!("query answered {status}"))),
                }
            }
            #[cfg(feature = "sandbox")]
            Mode::InProcess(simulator) => match simulator.query_by_reference(&reference).await {
                Ok(payment) => Ok(Some(state_of(&payment))),
                Err(platform_sim::SimError::PaymentNotFound(_)) => Ok(None),
                Err(err) => Err(NoAnswer(err.into())),
            },
        }
    }

    /// Tells the platform to close the payment with our `payment_id`, so it can
    /// never be paid.
    pub async fn close(&self, payment_id: Uuid) -> Result<CloseAnswer, NoAnswer> {
        let reference = payment_id.to_string();
        match &self.mode {
            Mode::Remote { http, base_url } => {
                let response = http
                    .post(format!(
                        "{base_url}/v1/payments/by-reference/{reference}/close"
                    ))
                    .send()
                    .await
                    .map_err(|err| NoAnswer(err.into()))?;
                let status = response.status();
                if status.is_success() {
                    let state = response
                        .json::<PaymentState>()
                        .await
                        .map_err(|err| NoAnswer(err.into()))?;
                    return Ok(CloseAnswer::Closed(state));
                }
                if status == reqwest::StatusCode::NOT_FOUND {
                    return Ok(CloseAnswer::NotFound);
                }
                let body: serde_json::Value = response.json().await.unwrap_or_default();
                // The error code, in our platform's `{"error":{"code"}}` or a flat `{"code"}`.
                let code = body["error"]["code"].as_str().or(body["code"].as_str());
                if status == reqwest::StatusCode::CONFLICT && code == Some(ALREADY_PAID) {
                    return Ok(CloseAnswer::AlreadyPaid);
                }
                Err(NoAnswer(anyhow::anyhow!("close answered {status}: {body}")))
            }
            #[cfg(feature = "sandbox")]
            Mode::InProcess(simulator) => match simulator.close_by_reference(&reference).await {
                Ok(payment) => Ok(CloseAnswer::Closed(state_of(&payment))),
                Err(platform_sim::SimError::AlreadySucceeded(_)) => Ok(CloseAnswer::AlreadyPaid),
                Err(platform_sim::SimError::PaymentNotFound(_)) => Ok(CloseAnswer::NotFound),
                Err(err) => Err(NoAnswer(err.into())),
            },
        }
    }
}

impl Platform {
    /// Hands a refund over, idempotently by its refund number; the platform's
    /// view of it once accepted. [`RefundHandOverError::Refused`] when the
    /// platform answered that it will not make it; any other error leaves it
    /// to the refund dispatcher.
    pub async fn refund(
        &self,
        refund: &crate::db::refunds::RefundRow,
    ) -> Result<api_types::platform::RefundState, RefundHandOverError> {
        let request = api_types::platform::CreateRefund {
            payment_id: refund.platform_payment_id.clone(),
            refund_no: refund.refund_no.clone(),
            amount_cents: refund.amount_cents,
            currency: refund.currency,
            notify_url: self.notify_url.clone(),
        };
        match &self.mode {
            Mode::Remote { http, base_url } => {
                let unknown = |err: reqwest::Error| RefundHandOverError::Unknown(err.into());
                let response = http
                    .post(format!("{base_url}/v1/refunds"))
                    .header("idempotency-key", &refund.refund_no)
                    .json(&request)
                    .send()
                    .await
                    .map_err(unknown)?;
                let status = response.status();
                if status.is_success() {
                    return response.json().await.map_err(unknown);
                }
                let body: serde_json::Value = response.json().await.unwrap_or_default();
                let answer = format!("{status}: {body}");
                // A 4xx is the platform's considered refusal, except "try later".
                let transient = matches!(status.as_u16(), 408 | 425 | 429);
                Err(if status.is_client_error() && !transient {
                    RefundHandOverError::Refused(answer)
                } else {
                    RefundHandOverError::Unknown(anyhow::anyhow!(
                        "the platform answered the refund with {answer}"
                    ))
                })
            }
            #[cfg(feature = "sandbox")]
            Mode::InProcess(simulator) => {
                let (view, _) = simulator
                    .create_refund(&refund.refund_no, request)
                    .await
                    .map_err(|err| {
                        let status = err.status();
                        if status.is_client_error() {
                            RefundHandOverError::Refused(format!("{status}: {} {err}", err.code()))
                        } else {
                            RefundHandOverError::Unknown(err.into())
                        }
                    })?;
                serde_json::to_value(view)
                    .and_then(serde_json::from_value)
                    .map_err(|err| RefundHandOverError::Unknown(err.into()))
            }
        }
    }
}

impl Platform {
    /// Asks the platform where the refund with our `refund_no` stands. `None`:
    /// the platform does not have it.
    pub async fn query_refund(
        &self,
        refund_no: &str,
    ) -> Result<Option<api_types::platform::RefundState>, NoAnswer> {
        match &self.mode {
            Mode::Remote { http, base_url } => {
                let response = http
                    .get(format!("{base_url}/v1/refunds/by-reference/{refund_no}"))
                    .send()
                    .await
                    .map_err(|err| NoAnswer(err.into()))?;
                match response.status() {
                    reqwest::StatusCode::NOT_FOUND => Ok(None),
                    status if status.is_success() => Ok(Some(
                        response.json().await.map_err(|err| NoAnswer(err.into()))?,
                    )),
                    status => Err(NoAnswer(anyhow::anyhow!("refund query answered {status}"))),
                }
            }
            #[cfg(feature = "sandbox")]
            Mode::InProcess(simulator) => match simulator.refund_by_reference(refund_no).await {
                Ok(view) => Ok(Some(view.state)),
                Err(platform_sim::SimError::RefundNotFound(_)) => Ok(None),
                Err(err) => Err(NoAnswer(err.into())),
            },
        }
    }
}

/// The simulator's fuller view, as any platform's query answer.
#[cfg(feature = "sandbox")]
fn state_of(payment: &platform_sim::Payment) -> PaymentState {
    PaymentState {
        payment_id: payment.payment_id.clone(),
        order_no: payment.order_no.clone(),
        merchant_reference: payment.merchant_reference.clone(),
        amount_cents: payment.amount_cents,
        currency: payment.currency,
        status: payment.status,
    }
}

/// Why a refund's hand-over did not end with the platform's acceptance.
#[derive(Debug, thiserror::Error)]
pub enum RefundHandOverError {
    /// The platform answered that it will not make this refund (a 4xx: the
    /// payment is unknown to it, not refundable, or the amount exceeds it).
    #[error("refused by the platform: {0}")]
    Refused(String),
    /// No answer, or one that may change: the dispatcher hands it over again.
    #[error("outcome unknown: {0:#}")]
    Unknown(anyhow::Error),
}

/// Why a hand-over did not end with the platform's acceptance.
#[derive(Debug, thiserror::Error)]
pub enum HandOverError {
    /// No answer, or a 5xx: the platform may or may not have the payment.
    /// The attempt becomes `UNKNOWN` and is sent again with the same key.
    #[error("outcome unknown: {0:#}")]
    Unknown(anyhow::Error),
    /// A 4xx: the platform did not take it (our request was wrong). The attempt
    /// stays `CREATED` and is sent again; a person should look at the log.
    #[error("refused: {0}")]
    Refused(String),
}
