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
//! - `PLATFORM=wechatpay`: WeChat Pay API v3 ([`wechatpay`]); notifications
//!   come to `/api/payments/callback/wechatpay`.
//! - `PLATFORM=alipay`: the Alipay open platform gateway ([`alipay`]);
//!   notifications come to `/api/payments/callback/alipay`.
//! - `PLATFORM=sandbox` (builds with the `sandbox` feature): the same simulator
//!   runs in this process. It dies with the process, so at start every attempt of
//!   a still-PENDING order is marked unsubmitted again
//!   ([`Platform::forget_in_process_hand_overs`]) and the dispatcher hands it to
//!   the new simulator.

pub mod alipay;
mod connector;
pub mod dispatcher;
#[cfg(feature = "sandbox")]
mod sandbox;
mod standard;
pub mod wechatpay;

use crate::config::{AlipaySettings, PlatformKind, WechatPaySettings};
use crate::db::attempts::AttemptRow;
use api_types::platform::{CreatePayment, CreateRefund, PaymentState, RefundState};
pub use connector::{
    BillError, CloseAnswer, HandOverError, HandedOver, NoAnswer, PaymentRef, RefundHandOverError,
    RefundRef, STANDARD_NOTIFY_PATH, user_agent,
};
#[cfg(feature = "sandbox")]
use platform_sim::{SimConfig, Simulator};
use sqlx::PgPool;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// Where payments go: one connector, and what every connector shares.
#[derive(Clone)]
pub struct Platform {
    connector: Connector,
    /// The origin notifications are posted to (`NOTIFY_BASE_URL`).
    notify_base: String,
    /// Payments being handed over by this process right now (see [`dispatcher::dispatch`]).
    in_flight: Arc<Mutex<HashSet<Uuid>>>,
    /// One permit per hand-over this process may have in flight ([`HAND_OVERS_IN_FLIGHT_MAX`]).
    hand_over_slots: Arc<tokio::sync::Semaphore>,
}

/// Most hand-overs one process has in flight at once. A platform that stalls
/// (a pause, a network black hole) would otherwise get one more connection and
/// one more waiting task per pay until its timeout: a 5 s freeze under load
/// cost 8,000 connections and 240 MiB of memory, then a stampede when it came
/// back. A pay that finds every slot taken leaves its committed attempt to the
/// dispatcher, which hands it over within seconds, when a slot is free.
/// Refunds take the same slots (`crate::refund::spawn_dispatch`).
pub const HAND_OVERS_IN_FLIGHT_MAX: usize = 64;

/// A slot for one hand-over ([`Platform::hand_over_slot`]), held until it ends.
#[derive(Debug)]
pub struct HandOverSlot {
    _permit: tokio::sync::OwnedSemaphorePermit,
}

/// The platforms the checkout speaks. Each connector hands payments and
/// refunds over, queries and closes them, in its platform's protocol; the
/// charge transaction, the state machine and the invariants never know which
/// one spoke.
#[derive(Clone)]
enum Connector {
    #[cfg(feature = "sandbox")]
    Sandbox(sandbox::Sandbox),
    Standard(standard::Standard),
    Wechatpay(wechatpay::WechatPay),
    Alipay(alipay::Alipay),
}

impl Platform {
    /// The simulator in this process, signing with `secret`, deciding each
    /// payment after `processing_delay` (amounts ending in 13 minor units fail),
    /// and posting no callbacks when `drop_callbacks`.
    #[cfg(feature = "sandbox")]
    pub fn in_process(
        secret: &callback_signing::CallbackSecret,
        processing_delay: std::time::Duration,
        drop_callbacks: bool,
        notify_base: String,
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
        Ok(Self::with(
            Connector::Sandbox(sandbox::Sandbox(simulator)),
            notify_base,
        ))
    }

    /// A platform at `base_url` (e.g. `http://127.0.0.1:4000`) speaking the
    /// checkout's own protocol.
    pub fn remote(base_url: &str, notify_base: String) -> anyhow::Result<Self> {
        Ok(Self::with(
            Connector::Standard(standard::Standard::new(base_url)?),
            notify_base,
        ))
    }

    /// WeChat Pay API v3 with `settings`.
    pub fn wechatpay(settings: WechatPaySettings, notify_base: String) -> anyhow::Result<Self> {
        Ok(Self::with(
            Connector::Wechatpay(wechatpay::WechatPay::new(Arc::new(settings))?),
            notify_base,
        ))
    }

    /// The Alipay open platform with `settings`.
    pub fn alipay(settings: AlipaySettings, notify_base: String) -> anyhow::Result<Self> {
        Ok(Self::with(
            Connector::Alipay(alipay::Alipay::new(Arc::new(settings))?),
            notify_base,
        ))
    }

    fn with(connector: Connector, notify_base: String) -> Self {
        Self {
            connector,
            notify_base,
            in_flight: Arc::new(Mutex::new(HashSet::new())),
            hand_over_slots: Arc::new(tokio::sync::Semaphore::new(HAND_OVERS_IN_FLIGHT_MAX)),
        }
    }

    /// Whether this process is handing over the attempt `payment_id` now.
    pub fn is_handing_over(&self, payment_id: Uuid) -> bool {
        self.handing_over().contains(&payment_id)
    }

    /// The attempts this process is handing over now (a panic while it was
    /// held leaves the set as it was).
    fn handing_over(&self) -> std::sync::MutexGuard<'_, HashSet<Uuid>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for one more hand-over now, or `None` while
    /// [`HAND_OVERS_IN_FLIGHT_MAX`] are in flight (the attempt is then left to
    /// the dispatcher's next sweep).
    pub fn hand_over_slot(&self) -> Option<HandOverSlot> {
        Arc::clone(&self.hand_over_slots)
            .try_acquire_owned()
            .ok()
            .map(|permit| HandOverSlot { _permit: permit })
    }

    /// Which kind of platform this is.
    pub fn kind(&self) -> PlatformKind {
        match self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(_) => PlatformKind::Sandbox,
            Connector::Standard(_) => PlatformKind::Remote,
            Connector::Wechatpay(_) => PlatformKind::Wechatpay,
            Connector::Alipay(_) => PlatformKind::Alipay,
        }
    }

    /// Where this platform posts its notifications.
    pub fn notify_url(&self) -> String {
        let path = match self.connector {
            Connector::Wechatpay(_) => wechatpay::NOTIFY_PATH,
            Connector::Alipay(_) => alipay::NOTIFY_PATH,
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(_) => STANDARD_NOTIFY_PATH,
            Connector::Standard(_) => STANDARD_NOTIFY_PATH,
        };
        format!("{}{path}", self.notify_base)
    }

    /// The WeChat Pay settings, when this is WeChat Pay (its notification route checks with them).
    pub fn wechatpay_settings(&self) -> Option<&Arc<WechatPaySettings>> {
        match &self.connector {
            Connector::Wechatpay(wechatpay) => Some(wechatpay.settings()),
            _ => None,
        }
    }

    /// The Alipay settings, when this is Alipay (its notification route checks with them).
    pub fn alipay_settings(&self) -> Option<&Arc<AlipaySettings>> {
        match &self.connector {
            Connector::Alipay(alipay) => Some(alipay.settings()),
            _ => None,
        }
    }

    /// After a restart the in-process simulator has lost every payment it held:
    /// hand the attempts of still-PENDING orders over again. A remote platform
    /// keeps its own, so nothing is reset for it. Returns how many were reset.
    pub async fn forget_in_process_hand_overs(&self, db: &PgPool) -> sqlx::Result<u64> {
        match self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(_) => {
                crate::db::attempts::reset_submitted_of_pending_orders(db).await
            }
            Connector::Standard(_) | Connector::Wechatpay(_) | Connector::Alipay(_) => {
                let _ = db;
                Ok(0)
            }
        }
    }

    /// Hands the payment over, idempotently (by its request token, or by the
    /// order number where the platform keys payments by it); `Ok` once the
    /// platform has it.
    pub(crate) async fn hand_over(
        &self,
        attempt: &AttemptRow,
    ) -> Result<HandedOver, HandOverError> {
        observed(
            "hand_over",
            self.hand_over_unobserved(attempt),
            |result| match result {
                Ok(_) => "accepted",
                Err(HandOverError::Unknown(_)) => "unknown",
                Err(HandOverError::Refused(_)) => "refused",
            },
        )
        .await
    }

    async fn hand_over_unobserved(
        &self,
        attempt: &AttemptRow,
    ) -> Result<HandedOver, HandOverError> {
        let request = CreatePayment {
            order_no: attempt.order_no.clone(),
            amount_cents: attempt.amount_cents,
            currency: attempt.currency,
            notify_url: self.notify_url(),
            merchant_reference: Some(attempt.payment_id.to_string()),
        };
        let key = attempt.request_token.to_string();
        let id = match &self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(sandbox) => sandbox.hand_over(&key, request).await?,
            Connector::Standard(standard) => standard.hand_over(&key, &request).await?,
            Connector::Wechatpay(wechatpay) => {
                return wechatpay.hand_over(attempt, &request.notify_url).await;
            }
            Connector::Alipay(alipay) => {
                return alipay.hand_over(attempt, &request.notify_url).await;
            }
        };
        Ok(HandedOver {
            platform_payment_id: id,
            qr_code: None,
        })
    }

    /// Asks the platform where the payment stands. `None`: the platform does not have it.
    pub async fn query(&self, payment: PaymentRef<'_>) -> Result<Option<PaymentState>, NoAnswer> {
        observed("query", self.query_unobserved(payment), found).await
    }

    async fn query_unobserved(
        &self,
        payment: PaymentRef<'_>,
    ) -> Result<Option<PaymentState>, NoAnswer> {
        match &self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(sandbox) => sandbox.query(payment).await,
            Connector::Standard(standard) => standard.query(payment).await,
            Connector::Wechatpay(wechatpay) => wechatpay.query(payment).await,
            Connector::Alipay(alipay) => alipay.query(payment).await,
        }
    }

    /// Tells the platform to close the payment, so it can never be paid.
    pub async fn close(&self, payment: PaymentRef<'_>) -> Result<CloseAnswer, NoAnswer> {
        observed(
            "close",
            self.close_unobserved(payment),
            |result| match result {
                Ok(CloseAnswer::Closed(_)) => "closed",
                Ok(CloseAnswer::AlreadyPaid) => "already_paid",
                Ok(CloseAnswer::NotFound) => "not_found",
                Err(_) => "no_answer",
            },
        )
        .await
    }

    async fn close_unobserved(&self, payment: PaymentRef<'_>) -> Result<CloseAnswer, NoAnswer> {
        match &self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(sandbox) => sandbox.close(payment).await,
            Connector::Standard(standard) => standard.close(payment).await,
            Connector::Wechatpay(wechatpay) => wechatpay.close(payment).await,
            Connector::Alipay(alipay) => alipay.close(payment).await,
        }
    }

    /// Hands a refund over, idempotently by its refund number; the platform's
    /// view of it once accepted. [`RefundHandOverError::Refused`] when the
    /// platform answered that it will not make it; any other error leaves it
    /// to the refund dispatcher.
    pub async fn refund(
        &self,
        refund: &crate::db::refunds::RefundRow,
    ) -> Result<RefundState, RefundHandOverError> {
        observed(
            "refund",
            self.refund_unobserved(refund),
            |result| match result {
                Ok(_) => "accepted",
                Err(RefundHandOverError::Refused(_)) => "refused",
                Err(RefundHandOverError::Unknown(_)) => "unknown",
            },
        )
        .await
    }

    async fn refund_unobserved(
        &self,
        refund: &crate::db::refunds::RefundRow,
    ) -> Result<RefundState, RefundHandOverError> {
        let request = CreateRefund {
            payment_id: refund.platform_payment_id.clone(),
            refund_no: refund.refund_no.clone(),
            amount_cents: refund.amount_cents,
            currency: refund.currency,
            notify_url: self.notify_url(),
        };
        match &self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(sandbox) => sandbox.refund(request).await,
            Connector::Standard(standard) => standard.refund(&request).await,
            Connector::Wechatpay(wechatpay) => wechatpay.refund(refund, &request.notify_url).await,
            // Alipay notifies a refund at the trade's notify_url (the precreate's).
            Connector::Alipay(alipay) => alipay.refund(refund).await,
        }
    }

    /// Asks the platform where the refund stands. `None`: the platform does not have it.
    pub async fn query_refund(
        &self,
        refund: RefundRef<'_>,
    ) -> Result<Option<RefundState>, NoAnswer> {
        observed("refund_query", self.query_refund_unobserved(refund), found).await
    }

    async fn query_refund_unobserved(
        &self,
        refund: RefundRef<'_>,
    ) -> Result<Option<RefundState>, NoAnswer> {
        match &self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(sandbox) => sandbox.query_refund(refund.refund_no).await,
            Connector::Standard(standard) => standard.query_refund(refund.refund_no).await,
            Connector::Wechatpay(wechatpay) => wechatpay.query_refund(refund).await,
            Connector::Alipay(alipay) => alipay.query_refund(refund).await,
        }
    }
}

/// Runs one call to the platform and counts it ([`crate::infra::metrics::platform_call`])
/// under the result `label` gives it.
async fn observed<T, E>(
    operation: &'static str,
    call: impl std::future::Future<Output = Result<T, E>>,
    label: impl FnOnce(&Result<T, E>) -> &'static str,
) -> Result<T, E> {
    let started = std::time::Instant::now();
    let result = call.await;
    crate::infra::metrics::platform_call(operation, label(&result), started);
    result
}

/// The result label of a lookup: the platform had it, did not, or gave no answer.
fn found<T>(result: &Result<Option<T>, NoAnswer>) -> &'static str {
    match result {
        Ok(Some(_)) => "found",
        Ok(None) => "not_found",
        Err(_) => "no_answer",
    }
}

impl Platform {
    /// The platform's daily bill of `date` (a UTC day) as its CSV text
    /// ([`checkout_rules::reconcile::bill`] reads it). The checkout's own protocol
    /// (`GET /v1/bills/{date}`, platform-sim) and the in-process sandbox have
    /// one; the WeChat Pay and Alipay connectors do not download bills yet and
    /// answer [`BillError::NotSupported`].
    pub async fn daily_bill(&self, date: time::Date) -> Result<String, BillError> {
        match &self.connector {
            #[cfg(feature = "sandbox")]
            Connector::Sandbox(sandbox) => Ok(sandbox.0.daily_bill(date)),
            Connector::Standard(standard) => standard.daily_bill(date).await,
            Connector::Wechatpay(_) | Connector::Alipay(_) => {
                Err(BillError::NotSupported(self.kind()))
            }
        }
    }
}
