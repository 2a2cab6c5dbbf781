//! `platform-sim`: a sandbox payment platform.
//!
//! It takes payments idempotently (`POST /v1/payments` with an
//! `Idempotency-Key`), decides each outcome by a rule on the amount, and posts
//! a Standard Webhooks signed result callback to the payment's `notify_url`,
//! at least once, retrying on a real platform's schedule. Chaos knobs make it
//! misbehave the way real platforms do, so a receiver can prove it charges
//! exactly once anyway.
//!
//! Run it as its own process (the `platform-sim` binary) or in-process: build
//! a [`Simulator`], serve its [`Simulator::router`], or call
//! [`Simulator::create_payment`] directly. Deliveries run on tokio tasks the
//! simulator spawns.
//!
//! Where things are: [`schedule`] (retry waits), [`outcome`] (which payments
//! fail), [`chaos`] (the misbehaviours), [`delivery`] (the retrying sender and
//! its log), [`payment`] (the API's bodies and the idempotency record),
//! [`api`] (routes), [`config`] (settings and flags), [`error`] (error answers).

#![warn(missing_docs)]

pub mod api;
pub mod chaos;
pub mod config;
pub mod delivery;
pub mod error;
pub mod outcome;
pub mod payment;
pub mod schedule;

pub use callback_signing::CallbackSecret;
pub use chaos::{Chaos, Redeliver};
pub use config::{ConfigError, SimArgs, SimConfig};
pub use delivery::{AttemptOutcome, DeliveryAttempt, DeliveryLog};
pub use error::SimError;
pub use outcome::OutcomeRule;
pub use payment::{CallbackRecord, CreatePayment, Payment, PaymentCreated, PaymentStatus};
pub use schedule::Schedule;

use delivery::Deliverer;
use payment::{Created, PaymentBook, StoredPayment};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A running sandbox platform. Cheap to clone: clones share payments, knobs and deliveries.
#[derive(Clone)]
pub struct Simulator {
    inner: Arc<Inner>,
}

struct Inner {
    config: SimConfig,
    /// The knobs for payments created from now on; each payment copies them.
    chaos: Mutex<Chaos>,
    book: Mutex<PaymentBook>,
    deliverer: Deliverer,
    log: DeliveryLog,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Simulator {
    /// A simulator with this configuration.
    ///
    /// # Panics
    ///
    /// When the configuration is invalid (see [`Simulator::try_new`]): a host that
    /// already checked its secret can treat that as a bug.
    pub fn new(config: SimConfig) -> Self {
        Self::try_new(config).unwrap_or_else(|err| panic!("invalid simulator configuration: {err}"))
    }

    /// A simulator with this configuration, or why it cannot run with it
    /// (a secret that is not `whsec_<base64>`, a negative time scale).
    pub fn try_new(config: SimConfig) -> Result<Self, ConfigError> {
        if !config.time_scale.is_finite() || config.time_scale < 0.0 {
            return Err(ConfigError::TimeScale(config.time_scale));
        }
        let log = DeliveryLog::default();
        let deliverer = Deliverer::new(&config, log.clone())?;
        Ok(Self {
            inner: Arc::new(Inner {
                chaos: Mutex::new(config.chaos.clone()),
                config,
                book: Mutex::new(PaymentBook::default()),
                deliverer,
                log,
            }),
        })
    }

    /// The HTTP API (`/v1/payments`, `/v1/chaos`, `/healthz`), ready to serve.
    pub fn router(&self) -> axum::Router {
        api::router(self.clone())
    }

    /// Takes a payment, as `POST /v1/payments` does, without HTTP.
    ///
    /// Returns the payment and whether it was replayed: the same key with the
    /// same request returns the existing payment and starts nothing; the same
    /// key with another request is [`SimError::IdempotencyKeyReused`]. A new
    /// payment's processing and callback delivery run on a spawned tokio task.
    pub async fn create_payment(
        &self,
        idempotency_key: &str,
        request: CreatePayment,
    ) -> Result<(Payment, bool), SimError> {
        let created = lock(&self.inner.book).create(idempotency_key, request)?;
        match created {
            Created::Replayed(stored) => Ok((self.view(&stored), true)),
            Created::New(stored) => {
                tracing::info!(
                    payment_id = %stored.payment_id,
                    order_no = %stored.request.order_no,
                    amount_cents = stored.request.amount_cents,
                    "payment accepted"
                );
                let chaos = self.chaos();
                tokio::spawn(self.clone().process(stored.clone(), chaos));
                Ok((self.view(&stored), false))
            }
        }
    }

    /// A payment with its callbacks, as `GET /v1/payments/{payment_id}` answers.
    pub fn payment(&self, payment_id: &str) -> Option<Payment> {
        let stored = lock(&self.inner.book).get(payment_id).cloned()?;
        Some(self.view(&stored))
    }

    /// Every callback and delivery attempt so far.
    pub fn delivery_log(&self) -> &DeliveryLog {
        &self.inner.log
    }

    /// The chaos knobs new payments will copy.
    pub fn chaos(&self) -> Chaos {
        lock(&self.inner.chaos).clone()
    }

    /// Replaces the chaos knobs; payments already created keep the ones they copied.
    pub fn set_chaos(&self, chaos: Chaos) {
        tracing::info!(?chaos, "chaos knobs changed");
        *lock(&self.inner.chaos) = chaos;
    }

    /// The configuration the simulator was built with (its chaos knobs as they were at start).
    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// Waits out the processing delay, decides the outcome, and delivers the callbacks.
    async fn process(self, payment: StoredPayment, chaos: Chaos) {
        let config = &self.inner.config;
        tokio::time::sleep(schedule::scale(config.processing_delay, config.time_scale)).await;
        let kind = config.outcome.decide(payment.request.amount_cents);
        lock(&self.inner.book).set_status(&payment.payment_id, payment::status_of(kind));
        tracing::info!(payment_id = %payment.payment_id, outcome = kind.as_str(), "payment decided");
        self.inner
            .deliverer
            .deliver_result(&payment, kind, &chaos)
            .await;
    }

    fn view(&self, stored: &StoredPayment) -> Payment {
        stored.view(self.inner.log.callbacks(&stored.payment_id))
    }
}

/// Locks a mutex even if a panicking holder poisoned it: every update here is a
/// single assignment or insert, so the data is never left half-written.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
