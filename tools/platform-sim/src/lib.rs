//! `platform-sim`: a sandbox payment platform.
//!
//! It takes payments idempotently (`POST /v1/payments` with an
//! `Idempotency-Key`), decides each outcome by a rule on the amount, and posts
//! a Standard Webhooks signed result callback to the payment's `notify_url`,
//! at least once, retrying on a real platform's schedule. Chaos knobs make it
//! misbehave the way real platforms do, so a receiver can prove it charges
//! exactly once anyway.
//!
//! A merchant whose callback never came can ask about a payment, by the
//! platform's id or by its own `merchant_reference`, and close it: a close
//! and the payment's decision never both win, so after a successful close no
//! callback is ever sent.
//!
//! A SUCCEEDED payment can be refunded, in parts, up to its amount
//! (`POST /v1/refunds`, idempotent by the merchant's refund number as
//! `Idempotency-Key`). A refund is decided by the same rule on its amount
//! and reported by a signed `refund.succeeded` or `refund.failed` callback,
//! delivered like a payment's: same schedule, same chaos knobs.
//!
//! With [`SimConfig::wechatpay`] set it also speaks WeChat Pay API v3 under
//! `/v3/...` ([`wechatpay`]): merchant-signed requests, platform-signed
//! answers, and encrypted `TRANSACTION.SUCCESS` / `REFUND.*` notifications,
//! from the same book and through the same retrying sender and chaos knobs.
//! With [`SimConfig::alipay`] set it speaks the Alipay open platform gateway
//! at `POST /gateway.do` ([`alipay`]): RSA2-signed requests, answers signed
//! over the response node's exact bytes, and signed form notifications
//! (`TRADE_SUCCESS`, later `TRADE_FINISHED`, refunds) that only a reply of
//! exactly `success` acknowledges, likewise from the same book.
//! `platform-sim keys DIR` ([`keys`]) writes the key set both sides load.
//!
//! Routes ([`Simulator::router`]); every `/v1` error is `{"error":{"code","message"}}`:
//!
//! - `POST /v1/payments` with `Idempotency-Key`: 201 [`PaymentCreated`]; the
//!   same key and body again, 200 with `Idempotent-Replayed: true`; the same
//!   key with another body, 422 `IDEMPOTENCY_KEY_REUSED`; a new key with a
//!   `merchant_reference` another payment has, 422 `MERCHANT_REFERENCE_REUSED`.
//! - `GET /v1/payments/{payment_id}` and
//!   `GET /v1/payments/by-reference/{merchant_reference}`: 200 [`Payment`]
//!   (which reads as `api_types::platform::PaymentState`), or 404
//!   `PAYMENT_NOT_FOUND`.
//! - `POST /v1/payments/{payment_id}/close` and
//!   `POST /v1/payments/by-reference/{merchant_reference}/close` (no body):
//!   200 [`Payment`], CLOSED (again on a repeat) or FAILED as it was; 409
//!   `PAYMENT_ALREADY_SUCCEEDED` when it was paid; 404 `PAYMENT_NOT_FOUND`.
//! - `POST /v1/refunds` with `Idempotency-Key` and a [`CreateRefund`]: 201
//!   [`RefundState`] (PROCESSING); the same key and body again, 200 with
//!   `Idempotent-Replayed: true` and the same refund; the same key with
//!   another body, 422 `IDEMPOTENCY_KEY_REUSED` (refund keys are a namespace
//!   of their own, apart from payments'); a new key with a `refund_no`
//!   another refund has, 422 `REFUND_NO_REUSED`. Refused, with nothing stored:
//!   a payment that is not there, 404 `PAYMENT_NOT_FOUND`; one that is not
//!   SUCCEEDED, 409 `PAYMENT_NOT_REFUNDABLE`; another currency than the
//!   payment's or an amount not above 0, 400 `BAD_REQUEST`; more than the
//!   payment took, counting its PROCESSING and SUCCEEDED refunds, 422
//!   `REFUND_EXCEEDS_PAYMENT`.
//! - `GET /v1/refunds/{refund_id}` and `GET /v1/refunds/by-reference/{refund_no}`:
//!   200 [`Refund`] (which reads as [`RefundState`]), or 404 `REFUND_NOT_FOUND`.
//! - `GET /v1/bills/{date}` (`YYYY-MM-DD`, a UTC day): 200 `text/csv`, the
//!   day's bill of succeeded payments and refunds ([`bill`]); 400
//!   `BAD_REQUEST` for a date that is not a calendar day so written.
//! - `GET /v1/chaos`, `POST /v1/chaos`: read or replace the [`Chaos`] knobs.
//! - `GET /healthz`: `ok`.
//! - With WeChat Pay or Alipay configured, `/v3/...` ([`wechatpay`]) and
//!   `POST /gateway.do` ([`alipay`]) in those platforms' own words.
//!
//! Run it as its own process (the `platform-sim` binary) or in-process: build
//! a [`Simulator`], serve its [`Simulator::router`], or call its methods
//! directly ([`Simulator::create_payment`], [`Simulator::query_by_reference`],
//! [`Simulator::close_by_reference`], [`Simulator::create_refund`],
//! [`Simulator::refund_by_reference`], ...). Deliveries run on tokio tasks the
//! simulator spawns.
//!
//! Where things are: [`schedule`] (retry waits), [`outcome`] (which payments
//! and refunds fail), [`chaos`] (the misbehaviours), [`delivery`] (the
//! retrying sender and its log), [`payment`] (the API's bodies, the
//! idempotency record, the one book), [`refund`] (refunds and what a payment
//! may still give back), [`api`] (routes), [`config`] (settings and flags),
//! [`error`] (error answers), [`bill`] (the daily bill), [`keys`] (the `keys DIR` command's key set),
//! [`requests`] (the requests received, with the headers that identify their client),
//! [`wechatpay`] and [`alipay`] (the real platforms' protocols).

#![warn(missing_docs)]

pub mod alipay;
pub mod api;
pub mod bill;
pub mod chaos;
pub mod config;
pub mod delivery;
pub mod error;
pub mod keys;
pub mod outcome;
pub mod payment;
pub mod refund;
pub mod requests;
pub mod schedule;
pub mod wechatpay;

pub use callback_signing::CallbackSecret;
pub use chaos::{Chaos, Redeliver};
pub use config::{AlipayConfig, ConfigError, SimArgs, SimConfig, WechatPayConfig};
pub use delivery::{AttemptOutcome, DeliveryAttempt, DeliveryLog};
pub use error::SimError;
pub use outcome::{Outcome, OutcomeRule};
pub use payment::{CallbackRecord, CreatePayment, Payment, PaymentCreated, PaymentStatus};
pub use refund::{CreateRefund, Refund, RefundState, RefundStatus};
pub use requests::{ReceivedRequest, RequestLog};
pub use schedule::Schedule;

use api_types::api::CallbackType;
use delivery::{Deliverer, Subject};
use payment::{Closing, Created, Lookup, PaymentBook, RequestKind, StoredPayment};
use refund::StoredRefund;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A running sandbox platform. Cheap to clone: clones share payments, knobs and deliveries.
#[derive(Clone)]
pub struct Simulator {
    inner: Arc<Inner>,
}

struct Inner {
    config: SimConfig,
    /// The knobs for payments and refunds created from now on; each copies them.
    chaos: Mutex<Chaos>,
    book: Mutex<PaymentBook>,
    deliverer: Deliverer,
    log: DeliveryLog,
    requests: RequestLog,
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
                requests: RequestLog::default(),
            }),
        })
    }

    /// The HTTP API (`/v1/payments...`, `/v1/refunds...`, `/v1/chaos`, `/healthz`; see the crate docs), ready to serve.
    pub fn router(&self) -> axum::Router {
        api::router(self.clone())
    }

    /// Takes a payment, as `POST /v1/payments` does, without HTTP.
    ///
    /// Returns the payment and whether it was replayed: the same key with the
    /// same request returns the existing payment and starts nothing; the same
    /// key with another request is [`SimError::IdempotencyKeyReused`]; a new key
    /// with a `merchant_reference` another payment has is
    /// [`SimError::MerchantReferenceReused`]. A new payment copies the current
    /// chaos knobs; its processing and callback delivery run on a spawned tokio task.
    pub async fn create_payment(
        &self,
        idempotency_key: &str,
        request: CreatePayment,
    ) -> Result<(Payment, bool), SimError> {
        let chaos = self.chaos();
        let created = lock(&self.inner.book).create(idempotency_key, request, chaos)?;
        match created {
            Created::Replayed(stored) => Ok((self.view(&stored), true)),
            Created::New(stored) => {
                tracing::info!(
                    payment_id = %stored.payment_id,
                    order_no = %stored.request.order_no,
                    merchant_reference = stored.request.merchant_reference.as_deref(),
                    amount_cents = stored.request.amount_cents,
                    "payment accepted"
                );
                tokio::spawn(self.clone().process(stored.clone()));
                Ok((self.view(&stored), false))
            }
        }
    }

    /// A payment with its callbacks and counters, for a look from the side (tests,
    /// dashboards): unlike [`Simulator::query_by_id`] it is not a merchant's
    /// query, so it counts nothing and never waits.
    pub fn payment(&self, payment_id: &str) -> Option<Payment> {
        let stored = lock(&self.inner.book).get(payment_id).cloned()?;
        Some(self.view(&stored))
    }

    /// A merchant's query by the platform's id, as `GET /v1/payments/{payment_id}`:
    /// counted in [`Payment::queries`] and [`Payment::max_concurrent_requests`],
    /// answered after the payment's [`Chaos::query_latency`].
    pub async fn query_by_id(&self, payment_id: &str) -> Result<Payment, SimError> {
        self.serve_request(Lookup::Id(payment_id), RequestKind::Query)
            .await
    }

    /// A merchant's query by its own reference, as `GET
    /// /v1/payments/by-reference/{merchant_reference}`: counted and delayed as
    /// [`Simulator::query_by_id`] is.
    pub async fn query_by_reference(&self, reference: &str) -> Result<Payment, SimError> {
        self.serve_request(Lookup::Reference(reference), RequestKind::Query)
            .await
    }

    /// A merchant's close by the platform's id, as `POST
    /// /v1/payments/{payment_id}/close`.
    ///
    /// A PROCESSING payment becomes CLOSED and no callback is ever sent for it;
    /// CLOSED or FAILED is answered as it is; SUCCEEDED is
    /// [`SimError::AlreadySucceeded`] (as is a PROCESSING payment under chaos
    /// [`Chaos::succeed_on_close`], which succeeds at that moment). Counted in
    /// [`Payment::closes`] and [`Payment::max_concurrent_requests`], carried out
    /// after the payment's [`Chaos::query_latency`].
    pub async fn close_by_id(&self, payment_id: &str) -> Result<Payment, SimError> {
        self.serve_request(Lookup::Id(payment_id), RequestKind::Close)
            .await
    }

    /// A merchant's close by its own reference, as `POST
    /// /v1/payments/by-reference/{merchant_reference}/close`: see
    /// [`Simulator::close_by_id`].
    pub async fn close_by_reference(&self, reference: &str) -> Result<Payment, SimError> {
        self.serve_request(Lookup::Reference(reference), RequestKind::Close)
            .await
    }

    /// Takes a payment with a platform's extra fields (see [`wechatpay`],
    /// [`alipay`]): like [`Simulator::create_payment`], but a replay must bring
    /// the same extras.
    pub(crate) fn create_payment_with(
        &self,
        idempotency_key: &str,
        request: CreatePayment,
        order: payment::PlatformOrder,
    ) -> Result<(StoredPayment, bool), SimError> {
        let chaos = self.chaos();
        let created =
            lock(&self.inner.book).create_with(idempotency_key, request, chaos, Some(order))?;
        match created {
            Created::Replayed(stored) => Ok((stored, true)),
            Created::New(stored) => {
                tracing::info!(
                    payment_id = %stored.payment_id,
                    order_no = %stored.request.order_no,
                    amount_cents = stored.request.amount_cents,
                    platform = ?delivery::Subject::platform(&stored),
                    "platform payment accepted"
                );
                tokio::spawn(self.clone().process(stored.clone()));
                Ok((stored, false))
            }
        }
    }

    /// Takes a refund with WeChat Pay's extra fields (see [`wechatpay`]): like
    /// [`Simulator::create_refund`], but a replay must bring the same extras.
    pub(crate) fn create_refund_with(
        &self,
        idempotency_key: &str,
        request: CreateRefund,
        wechat: refund::WechatRefund,
    ) -> Result<(StoredRefund, bool), SimError> {
        let chaos = self.chaos();
        let created = lock(&self.inner.book).create_refund_with(
            idempotency_key,
            request,
            chaos,
            Some(refund::PlatformRefund::Wechat(wechat)),
        )?;
        match created {
            Created::Replayed(stored) => Ok((stored, true)),
            Created::New(stored) => {
                tracing::info!(
                    refund_id = %stored.refund_id,
                    payment_id = %stored.request.payment_id,
                    amount_cents = stored.request.amount_cents,
                    "WeChat Pay refund accepted"
                );
                tokio::spawn(self.clone().process_refund(stored.clone()));
                Ok((stored, false))
            }
        }
    }

    /// Takes an Alipay refund (see [`alipay`]) and decides it at once by the
    /// outcome rule, as Alipay answers a refund synchronously: one call under
    /// the book's lock, so no one sees it PROCESSING. Returns the refund as
    /// decided (a replay: as it was decided then), its payment as it is now,
    /// and whether it was replayed. A new SUCCEEDED refund's notification is
    /// written from the payment after it and sent on a spawned task; a failed
    /// one sends nothing (Alipay notifies only refunds that moved money).
    pub(crate) fn create_refund_now(
        &self,
        idempotency_key: &str,
        request: CreateRefund,
        extra: refund::AlipayRefund,
    ) -> Result<(StoredRefund, StoredPayment, bool), SimError> {
        let chaos = self.chaos();
        let payment_id = request.payment_id.clone();
        let mut book = lock(&self.inner.book);
        let created = book.create_refund_with(
            idempotency_key,
            request,
            chaos,
            Some(refund::PlatformRefund::Alipay(extra)),
        )?;
        let (stored, replayed) = match created {
            Created::Replayed(stored) => (stored, true),
            Created::New(stored) => {
                let outcome = self.outcome(stored.request.amount_cents);
                let (status, _) = refund::decided(outcome);
                let decided = book
                    .decide_refund(&stored.refund_id, status)
                    .unwrap_or(stored);
                (decided, false)
            }
        };
        let payment = book
            .get(&payment_id)
            .cloned()
            .ok_or_else(|| SimError::PaymentNotFound(payment_id.clone()))?;
        drop(book);
        if !replayed {
            tracing::info!(refund_id = %stored.refund_id, %payment_id,
                amount_cents = stored.request.amount_cents, status = ?stored.status,
                "Alipay refund decided on arrival");
            if stored.status == RefundStatus::Succeeded {
                let notice = delivery::AlipayNotice {
                    notification: alipay::refund_notification(&stored, &payment),
                    subject: stored.clone(),
                };
                tokio::spawn(
                    self.clone()
                        .send_result(notice, CallbackType::RefundSucceeded),
                );
            }
        }
        Ok((stored, payment, replayed))
    }

    /// The stored payment with this id or merchant reference, as it is now.
    pub(crate) fn stored_payment(&self, lookup: Lookup<'_>) -> Option<StoredPayment> {
        let book = lock(&self.inner.book);
        match lookup {
            Lookup::Id(id) => book.get(id).cloned(),
            Lookup::Reference(reference) => book.get_by_reference(reference).cloned(),
        }
    }

    /// The stored refund with this id, as it is now.
    pub(crate) fn stored_refund(&self, refund_id: &str) -> Option<StoredRefund> {
        lock(&self.inner.book).refunds.get(refund_id).cloned()
    }

    /// Takes a refund, as `POST /v1/refunds` does, without HTTP.
    ///
    /// Returns the refund and whether it was replayed: the same key with the
    /// same request returns the existing refund and starts nothing; the same
    /// key with another request is [`SimError::IdempotencyKeyReused`]. A new
    /// refund is refused, with nothing stored, as the crate docs list
    /// ([`SimError::PaymentNotFound`], [`SimError::PaymentNotRefundable`],
    /// [`SimError::BadRequest`], [`SimError::RefundExceedsPayment`],
    /// [`SimError::RefundNoReused`]). A new refund copies the current chaos
    /// knobs; its processing and callback delivery run on a spawned tokio task.
    pub async fn create_refund(
        &self,
        idempotency_key: &str,
        request: CreateRefund,
    ) -> Result<(Refund, bool), SimError> {
        let chaos = self.chaos();
        let created = lock(&self.inner.book).create_refund(idempotency_key, request, chaos)?;
        match created {
            Created::Replayed(stored) => Ok((self.refund_view(&stored), true)),
            Created::New(stored) => {
                tracing::info!(
                    refund_id = %stored.refund_id,
                    payment_id = %stored.request.payment_id,
                    refund_no = %stored.request.refund_no,
                    amount_cents = stored.request.amount_cents,
                    "refund accepted"
                );
                tokio::spawn(self.clone().process_refund(stored.clone()));
                Ok((self.refund_view(&stored), false))
            }
        }
    }

    /// A refund with its callbacks and counter, for a look from the side: unlike
    /// [`Simulator::refund_by_id`] it counts nothing and never waits.
    pub fn refund(&self, refund_id: &str) -> Option<Refund> {
        let stored = lock(&self.inner.book).refunds.get(refund_id).cloned()?;
        Some(self.refund_view(&stored))
    }

    /// A merchant's query of a refund by the platform's id, as `GET
    /// /v1/refunds/{refund_id}`: counted in [`Refund::queries`], answered after
    /// the refund's [`Chaos::query_latency`].
    pub async fn refund_by_id(&self, refund_id: &str) -> Result<Refund, SimError> {
        self.query_refund(Lookup::Id(refund_id)).await
    }

    /// A merchant's query of a refund by its refund number, as `GET
    /// /v1/refunds/by-reference/{refund_no}`: counted and delayed as
    /// [`Simulator::refund_by_id`] is.
    pub async fn refund_by_reference(&self, refund_no: &str) -> Result<Refund, SimError> {
        self.query_refund(Lookup::Reference(refund_no)).await
    }

    /// The bill of `date` (a UTC day), as `GET /v1/bills/{date}` answers it:
    /// CSV text, a header line and one line per payment and refund that
    /// succeeded that day ([`bill`]).
    pub fn daily_bill(&self, date: time::Date) -> String {
        bill::write(date, &lock(&self.inner.book))
    }

    /// Every callback and delivery attempt so far.
    pub fn delivery_log(&self) -> &DeliveryLog {
        &self.inner.log
    }

    /// The last requests received over HTTP, with their `User-Agent` and `Accept`.
    pub fn requests(&self) -> &RequestLog {
        &self.inner.requests
    }

    /// The chaos knobs new payments and refunds will copy.
    pub fn chaos(&self) -> Chaos {
        lock(&self.inner.chaos).clone()
    }

    /// Replaces the chaos knobs; payments and refunds already created keep the ones they copied.
    pub fn set_chaos(&self, chaos: Chaos) {
        tracing::info!(?chaos, "chaos knobs changed");
        *lock(&self.inner.chaos) = chaos;
    }

    /// The configuration the simulator was built with (its chaos knobs as they were at start).
    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// One query or close: counted and marked in flight on entry, delayed by the
    /// payment's query latency, then carried out.
    async fn serve_request(
        &self,
        lookup: Lookup<'_>,
        kind: RequestKind,
    ) -> Result<Payment, SimError> {
        let (payment_id, latency) = lock(&self.inner.book).begin_request(lookup, kind)?;
        // Leaves the in-flight count when dropped, so a request whose future is
        // abandoned mid-wait (its client hung up) stops counting too.
        let in_flight = InFlight {
            book: &self.inner.book,
            payment_id,
        };
        if let Some(latency) = latency {
            tokio::time::sleep(latency).await;
        }
        let payment_id = in_flight.payment_id.as_str();
        match kind {
            RequestKind::Query => self
                .payment(payment_id)
                .ok_or_else(|| SimError::PaymentNotFound(payment_id.to_owned())),
            RequestKind::Close => self.close(payment_id),
        }
    }

    /// Closes a payment now (see [`Simulator::close_by_id`]).
    fn close(&self, payment_id: &str) -> Result<Payment, SimError> {
        let closing = lock(&self.inner.book).close(payment_id);
        match closing? {
            Closing::Closed(stored) => {
                tracing::info!(payment_id, "payment closed before it was decided");
                Ok(self.view(&stored))
            }
            Closing::Unchanged(stored) => {
                tracing::info!(payment_id, status = ?stored.status, "close of a payment already final");
                Ok(self.view(&stored))
            }
            Closing::PaidFirst(stored) => {
                tracing::info!(
                    payment_id,
                    "chaos: the shopper paid as the close arrived; close refused"
                );
                tokio::spawn(
                    self.clone()
                        .send_payment_result(stored, CallbackType::PaymentSucceeded),
                );
                Err(SimError::AlreadySucceeded(payment_id.to_owned()))
            }
        }
    }

    /// A merchant's query of a refund: counted on entry, delayed by the
    /// refund's query latency, then answered with the refund as it is then.
    async fn query_refund(&self, lookup: Lookup<'_>) -> Result<Refund, SimError> {
        let stored = lock(&self.inner.book).refunds.query(lookup)?;
        if let Some(latency) = stored.chaos.query_latency {
            tokio::time::sleep(latency).await;
        }
        self.refund(&stored.refund_id)
            .ok_or(SimError::RefundNotFound(stored.refund_id))
    }

    /// How a payment or refund of `amount_cents` ends, by the configured rule.
    fn outcome(&self, amount_cents: i64) -> outcome::Outcome {
        self.inner.config.outcome.decide(amount_cents)
    }

    /// Waits out the processing delay, or the `hold_processing` the payment or refund copied.
    async fn wait_processing(&self, chaos: &Chaos) {
        let config = &self.inner.config;
        let delay = chaos.hold_processing.unwrap_or(config.processing_delay);
        tokio::time::sleep(schedule::scale(delay, config.time_scale)).await;
    }

    /// Waits out the processing delay (or the payment's `hold_processing`),
    /// decides the outcome unless the payment was closed meanwhile, and delivers
    /// the callbacks.
    async fn process(self, payment: StoredPayment) {
        self.wait_processing(&payment.chaos).await;
        let outcome = self.outcome(payment.request.amount_cents);
        let (status, kind) = payment::decided(outcome);
        // Decided under the book's lock only if still PROCESSING: a close that got
        // there first wins, and then no callback may ever go out.
        let decided = lock(&self.inner.book).decide(&payment.payment_id, status);
        if !decided {
            tracing::info!(payment_id = %payment.payment_id, "payment closed before its outcome; no callback");
            return;
        }
        tracing::info!(payment_id = %payment.payment_id, outcome = kind.as_str(), "payment decided");
        // The payment as decided: a WeChat Pay notification reports its state and time.
        let decided = lock(&self.inner.book)
            .get(&payment.payment_id)
            .cloned()
            .unwrap_or(payment);
        // Boxed, so the delivery's state (its HTTP client's futures, some 9 KB)
        // is allocated once the payment is decided instead of in every task
        // still waiting out its processing delay.
        Box::pin(self.send_payment_result(decided, kind)).await;
    }

    /// Delivers a decided payment's callbacks. An Alipay trade's are written
    /// from it as it stands (`TRADE_SUCCESS`; nothing for a failure); a
    /// successful one also finishes later ([`Simulator::finish_later`]).
    async fn send_payment_result(self, payment: StoredPayment, kind: CallbackType) {
        if payment.alipay().is_none() {
            self.send_result(payment, kind).await;
            return;
        }
        let succeeded = kind == CallbackType::PaymentSucceeded;
        let finishing = self.clone().finish_later(payment.payment_id.clone());
        let notice = delivery::AlipayNotice {
            notification: succeeded
                .then(|| alipay::trade_notification(&payment))
                .flatten(),
            subject: payment,
        };
        let sending = self.send_result(notice, kind);
        if succeeded {
            tokio::join!(sending, finishing);
        } else {
            sending.await;
        }
    }

    /// Waits [`AlipayConfig::trade_finished_after`] (scaled), then finishes the
    /// Alipay trade unless it was fully refunded, and notifies `TRADE_FINISHED`
    /// with a notification (and `notify_id`) of its own.
    async fn finish_later(self, payment_id: String) {
        let Some(config) = &self.inner.config.alipay else {
            return;
        };
        let wait = schedule::scale(config.trade_finished_after, self.inner.config.time_scale);
        tokio::time::sleep(wait).await;
        let Some(finished) = lock(&self.inner.book).finish(&payment_id) else {
            tracing::info!(%payment_id, "Alipay trade not finished: fully refunded");
            return;
        };
        tracing::info!(%payment_id, "Alipay trade finished");
        let notice = delivery::AlipayNotice {
            notification: alipay::trade_notification(&finished),
            subject: finished,
        };
        self.send_result(notice, CallbackType::PaymentSucceeded)
            .await;
    }

    /// Waits out the processing delay (or the refund's `hold_processing`),
    /// decides the refund by the outcome rule on its amount, settles its share
    /// of the payment, and delivers the callbacks.
    async fn process_refund(self, refund: StoredRefund) {
        self.wait_processing(&refund.chaos).await;
        let outcome = self.outcome(refund.request.amount_cents);
        let (status, kind) = refund::decided(outcome);
        let Some(refund) = lock(&self.inner.book).decide_refund(&refund.refund_id, status) else {
            return;
        };
        tracing::info!(refund_id = %refund.refund_id, payment_id = %refund.request.payment_id,
            outcome = kind.as_str(), "refund decided");
        // Boxed, as in `process`.
        Box::pin(self.send_result(refund, kind)).await;
    }

    /// Delivers the callbacks of a decided payment or refund, unless its knobs drop them.
    async fn send_result(self, subject: impl Subject + Send + Sync + 'static, kind: CallbackType) {
        if subject.chaos().drop_callbacks {
            tracing::info!(
                payment_id = subject.payment_id(),
                refund_id = subject.refund_id(),
                outcome = kind.as_str(),
                "chaos: callback dropped"
            );
            return;
        }
        self.inner.deliverer.deliver_result(&subject, kind).await;
    }

    fn view(&self, stored: &StoredPayment) -> Payment {
        stored.view(self.inner.log.callbacks(&stored.payment_id))
    }

    fn refund_view(&self, stored: &StoredRefund) -> Refund {
        stored.view(self.inner.log.callbacks(&stored.refund_id))
    }
}

/// A query or close of one payment in flight: [`PaymentBook::begin_request`]
/// counted it in, dropping this counts it out, whether it was answered or abandoned.
struct InFlight<'a> {
    book: &'a Mutex<PaymentBook>,
    payment_id: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(self.book).end_request(&self.payment_id);
    }
}

/// Locks a mutex even if a panicking holder poisoned it: every update here is a
/// single assignment or insert, so the data is never left half-written.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Every payment's task holds its future for the whole processing delay (an
    /// hour in the benchmark's platform, for every payment taken in that hour):
    /// while it waits, it must hold the payment and its timer, not the state of
    /// the delivery that follows (9.5 KB in a release build before that part was
    /// boxed: a gigabyte over the benchmark's pays).
    #[tokio::test]
    async fn a_payment_waiting_for_its_outcome_holds_little_memory() {
        let sim = Simulator::try_new(SimConfig {
            processing_delay: Duration::from_secs(3600),
            ..SimConfig::default()
        })
        .expect("the default configuration is valid");
        let (payment, _) = sim
            .create_payment(
                "key-1",
                CreatePayment {
                    order_no: "order-1".to_owned(),
                    amount_cents: 1_000,
                    currency: "EUR".parse().expect("currency"),
                    notify_url: "http://127.0.0.1:9/callback".to_owned(),
                    merchant_reference: None,
                },
            )
            .await
            .expect("a new payment is taken");
        let stored = sim
            .stored_payment(Lookup::Id(&payment.payment_id))
            .expect("the payment is in the book");
        let waiting = sim.clone().process(stored);
        let size = std::mem::size_of_val(&waiting);
        assert!(
            size <= 2 * 1024,
            "a payment waiting for its outcome holds a {size}-byte future"
        );
    }
}
