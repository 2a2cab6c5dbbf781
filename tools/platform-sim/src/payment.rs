//! Payments as the simulator's API shows them, and the book that keeps them
//! together with the idempotency record, the merchant reference index, the
//! per-payment request counters, and the payments' refunds.

use crate::chaos::Chaos;
use crate::delivery::{Platform, Subject};
use crate::error::SimError;
use crate::outcome::Outcome;
use crate::refund::{CreateRefund, RefundBook, RefundStatus, RefundTotals, StoredRefund};
use api_types::Currency;
use api_types::api::CallbackType;
pub use api_types::platform::CreatePayment;
use callback_signing::PaymentResult;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use time::OffsetDateTime;
use uuid::Uuid;

/// The longest idempotency key accepted (Stripe's limit; keys are meant to be UUIDs).
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// The longest merchant reference accepted (the checkout sends a UUID).
pub const MAX_MERCHANT_REFERENCE_LEN: usize = 255;

/// 1 to `max` visible ASCII characters: what keys and references may hold, so
/// they travel in headers and URL paths without surprises.
pub(crate) fn is_visible_ascii(text: &str, max: usize) -> bool {
    !text.is_empty() && text.len() <= max && text.bytes().all(|byte| byte.is_ascii_graphic())
}

/// Refuses an idempotency key that could not travel in a header unchanged.
pub(crate) fn check_idempotency_key(key: &str) -> Result<(), SimError> {
    if is_visible_ascii(key, MAX_IDEMPOTENCY_KEY_LEN) {
        Ok(())
    } else {
        Err(SimError::BadRequest(format!(
            "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} visible ASCII characters"
        )))
    }
}

/// Refuses a `notify_url` the simulator cannot post to: it must be
/// `http://`, since the simulator speaks no TLS.
pub(crate) fn check_notify_url(notify_url: &str) -> Result<(), SimError> {
    let url = reqwest::Url::parse(notify_url)
        .map_err(|err| SimError::BadRequest(format!("notify_url is not a URL: {err}")))?;
    if url.scheme() != "http" {
        return Err(SimError::BadRequest(
            "notify_url must be http:// (the simulator has no TLS)".into(),
        ));
    }
    Ok(())
}

/// Rejects what no real platform would accept, before anything is stored.
fn validate(request: &CreatePayment) -> Result<(), SimError> {
    if request.order_no.trim().is_empty() {
        return Err(SimError::BadRequest("order_no must not be empty".into()));
    }
    if request.amount_cents <= 0 {
        return Err(SimError::BadRequest("amount_cents must be positive".into()));
    }
    check_notify_url(&request.notify_url)?;
    if let Some(reference) = &request.merchant_reference
        && !is_visible_ascii(reference, MAX_MERCHANT_REFERENCE_LEN)
    {
        return Err(SimError::BadRequest(format!(
            "merchant_reference must be 1 to {MAX_MERCHANT_REFERENCE_LEN} visible ASCII characters"
        )));
    }
    Ok(())
}

pub use api_types::platform::PaymentStatus;

/// The status a decided outcome gives a payment, and the callback that reports it.
pub(crate) fn decided(outcome: Outcome) -> (PaymentStatus, CallbackType) {
    match outcome {
        Outcome::Succeeded => (PaymentStatus::Succeeded, CallbackType::PaymentSucceeded),
        Outcome::Failed => (PaymentStatus::Failed, CallbackType::PaymentFailed),
    }
}

/// The answer to `POST /v1/payments`, first time and replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentCreated {
    /// The platform's payment id, `pay_<32 hex>`.
    pub payment_id: String,
    /// The payment's status now.
    pub status: PaymentStatus,
}

/// A payment, every callback sent about it, and how often the merchant asked
/// about it: the answer to a query (`GET /v1/payments/{payment_id}`, `GET
/// /v1/payments/by-reference/{merchant_reference}`) and to a close.
///
/// A superset of [`api_types::platform::PaymentState`]: a merchant that knows
/// only the wire contract reads this answer as that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payment {
    /// The platform's payment id.
    pub payment_id: String,
    /// The merchant's order number.
    pub order_no: String,
    /// The merchant's id for the payment, as given at creation; null when none was.
    pub merchant_reference: Option<String>,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where it stands.
    pub status: PaymentStatus,
    /// What its SUCCEEDED refunds gave back, in minor units.
    pub refunded_cents: i64,
    /// Callbacks about this payment (not its refunds'), in the order they were created.
    pub callbacks: Vec<CallbackRecord>,
    /// Queries of this payment so far (by id or by reference), this one included.
    pub queries: u32,
    /// Close requests for this payment so far, this one included.
    pub closes: u32,
    /// The most query and close requests for this payment that were ever in
    /// flight at the same moment. A merchant that lets one worker at a time
    /// chase a payment keeps this at 1.
    pub max_concurrent_requests: u32,
}

impl Payment {
    /// The short answer to `POST /v1/payments`.
    pub fn created(&self) -> PaymentCreated {
        PaymentCreated {
            payment_id: self.payment_id.clone(),
            status: self.status,
        }
    }
}

/// One callback (one callback id) and how its delivery went, over every path and copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackRecord {
    /// `evt_<32 hex>`, sent as `webhook-id`.
    pub callback_id: String,
    /// `payment.*` for a payment's callback, `refund.*` for a refund's.
    #[serde(rename = "type")]
    pub kind: CallbackType,
    /// HTTP requests made so far, counting retries, copies and redeliveries.
    pub attempts: u32,
    /// True once any attempt was answered 2xx.
    pub delivered: bool,
    /// The status of the latest answered attempt; null if none was answered.
    pub last_status: Option<u16>,
}

/// A payment as stored: the request it was made from, the knobs it copied, its
/// status, its request counters and what its refunds hold.
#[derive(Debug, Clone)]
pub(crate) struct StoredPayment {
    pub payment_id: String,
    pub request: CreatePayment,
    /// The chaos knobs as they were when the payment was created.
    pub chaos: Chaos,
    pub status: PaymentStatus,
    pub counters: Counters,
    pub refunds: RefundTotals,
    /// What a platform's own API added: a WeChat Pay prepay or an Alipay
    /// precreate (None for a payment made through `/v1`).
    pub order: Option<PlatformOrder>,
    /// When it was accepted.
    pub created_at: OffsetDateTime,
    /// When its outcome was decided (None while PROCESSING, and when closed).
    pub decided_at: Option<OffsetDateTime>,
    /// When a SUCCEEDED Alipay trade finished (`TRADE_FINISHED`): no refunds after it.
    pub finished_at: Option<OffsetDateTime>,
}

/// What a platform's own API added to a payment; compared when the same
/// merchant order number comes again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PlatformOrder {
    /// A WeChat Pay Native prepay.
    Wechat(WechatOrder),
    /// An Alipay `alipay.trade.precreate`.
    Alipay(AlipayTrade),
}

/// What an Alipay precreate carries beyond a payment: echoed in its answers and
/// notifications, and compared when the same `out_trade_no` comes again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AlipayTrade {
    pub app_id: String,
    pub out_trade_no: String,
    pub subject: String,
    pub timeout_express: Option<String>,
    /// Merchant data passed back unchanged in notifications.
    pub passback_params: Option<String>,
}

/// What a WeChat Pay Native prepay carries beyond a payment: echoed in its
/// queries and notifications, and compared when the same `out_trade_no` comes again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WechatOrder {
    pub appid: String,
    pub mchid: String,
    pub description: String,
    pub out_trade_no: platform_protocols::wechatpay::OutTradeNo,
    pub attach: Option<String>,
}

/// How often a payment was queried and closed, and how many of those requests overlapped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counters {
    pub queries: u32,
    pub closes: u32,
    /// Query and close requests for the payment in flight right now.
    pub in_flight: u32,
    pub max_concurrent_requests: u32,
}

/// How a payment (or a refund) is named in a query or close.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lookup<'a> {
    /// By the platform's id.
    Id(&'a str),
    /// By the merchant's reference (a refund's: its refund number).
    Reference(&'a str),
}

impl Lookup<'_> {
    /// The error for a payment that is not there, naming what was asked for.
    fn not_found(self) -> SimError {
        match self {
            Self::Id(id) => SimError::PaymentNotFound(id.to_owned()),
            Self::Reference(reference) => {
                SimError::PaymentNotFound(format!("with merchant_reference {reference}"))
            }
        }
    }
}

/// A request about one payment that the counters tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    /// A `GET` by id or by reference.
    Query,
    /// A close by id or by reference.
    Close,
}

/// What [`PaymentBook::close`] did.
pub(crate) enum Closing {
    /// The payment was PROCESSING and is now CLOSED.
    Closed(StoredPayment),
    /// The payment was already CLOSED or FAILED: nothing changed; answer with it.
    Unchanged(StoredPayment),
    /// Chaos `succeed_on_close`: the shopper paid as the close arrived. The payment
    /// is now SUCCEEDED; its success callback must be started, and the close refused.
    PaidFirst(StoredPayment),
}

/// Payments by id, idempotency keys and merchant references pointing at them,
/// and the payments' refunds: one book under one lock, so a refund's checks
/// against its payment and its insert happen together.
#[derive(Debug, Default)]
pub(crate) struct PaymentBook {
    /// Idempotency key -> payment id. The request is kept in the payment to detect key reuse.
    by_key: HashMap<String, String>,
    /// Merchant reference -> payment id; one payment per reference.
    by_reference: HashMap<String, String>,
    payments: HashMap<String, StoredPayment>,
    /// The refunds, with idempotency keys of their own.
    pub refunds: RefundBook,
}

/// What a create ([`PaymentBook::create`], [`PaymentBook::create_refund`]) did.
pub(crate) enum Created<T> {
    /// A new payment or refund; its processing and delivery must be started.
    New(T),
    /// The key was seen with the same request: the existing one, nothing started.
    Replayed(T),
}

impl PaymentBook {
    /// Creates a payment that copies `chaos`, or returns the one this key already created.
    ///
    /// One call under one lock, so two concurrent requests with the same key
    /// cannot both create a payment, nor two with the same merchant reference.
    pub fn create(
        &mut self,
        key: &str,
        request: CreatePayment,
        chaos: Chaos,
    ) -> Result<Created<StoredPayment>, SimError> {
        self.create_with(key, request, chaos, None)
    }

    /// [`PaymentBook::create`] for a payment that carries a platform's extra
    /// fields: a replay must bring the same ones.
    pub fn create_with(
        &mut self,
        key: &str,
        request: CreatePayment,
        chaos: Chaos,
        order: Option<PlatformOrder>,
    ) -> Result<Created<StoredPayment>, SimError> {
        check_idempotency_key(key)?;
        validate(&request)?;
        match self.by_key.entry(key.to_owned()) {
            Entry::Occupied(entry) => {
                let existing = self
                    .payments
                    .get(entry.get())
                    .ok_or_else(|| SimError::PaymentNotFound(entry.get().clone()))?;
                if existing.request != request || existing.order != order {
                    return Err(SimError::IdempotencyKeyReused);
                }
                Ok(Created::Replayed(existing.clone()))
            }
            Entry::Vacant(entry) => {
                // A reference names one payment, as a real platform's order number
                // does: a second payment under it would make queries ambiguous.
                if let Some(reference) = &request.merchant_reference
                    && self.by_reference.contains_key(reference)
                {
                    return Err(SimError::MerchantReferenceReused);
                }
                let payment = StoredPayment {
                    payment_id: format!("pay_{}", Uuid::new_v4().simple()),
                    request,
                    chaos,
                    status: PaymentStatus::Processing,
                    counters: Counters::default(),
                    refunds: RefundTotals::default(),
                    order,
                    created_at: OffsetDateTime::now_utc(),
                    decided_at: None,
                    finished_at: None,
                };
                entry.insert(payment.payment_id.clone());
                if let Some(reference) = &payment.request.merchant_reference {
                    self.by_reference
                        .insert(reference.clone(), payment.payment_id.clone());
                }
                self.payments
                    .insert(payment.payment_id.clone(), payment.clone());
                Ok(Created::New(payment))
            }
        }
    }

    /// Creates a refund that copies `chaos`, or returns the one this key
    /// already created (see [`RefundBook::create`]).
    ///
    /// One call under one lock: concurrent refunds of one payment see each
    /// other's share, so together they never give back more than it took.
    pub fn create_refund(
        &mut self,
        key: &str,
        request: CreateRefund,
        chaos: Chaos,
    ) -> Result<Created<StoredRefund>, SimError> {
        let payment = self.payments.get_mut(&request.payment_id);
        self.refunds.create(key, request, payment, chaos, None)
    }

    /// [`PaymentBook::create_refund`] for a refund that carries a platform's extra fields.
    pub fn create_refund_with(
        &mut self,
        key: &str,
        request: CreateRefund,
        chaos: Chaos,
        extra: Option<crate::refund::PlatformRefund>,
    ) -> Result<Created<StoredRefund>, SimError> {
        let payment = self.payments.get_mut(&request.payment_id);
        self.refunds.create(key, request, payment, chaos, extra)
    }

    /// Finishes a SUCCEEDED payment that is not finished nor fully refunded
    /// (Alipay's `TRADE_FINISHED`); returns it, or None when there is nothing to finish.
    pub fn finish(&mut self, payment_id: &str) -> Option<StoredPayment> {
        let payment = self.payments.get_mut(payment_id)?;
        let open = payment.status == PaymentStatus::Succeeded
            && payment.finished_at.is_none()
            && payment.refunds.refunded_cents() < payment.request.amount_cents;
        if !open {
            return None;
        }
        payment.finished_at = Some(OffsetDateTime::now_utc());
        Some(payment.clone())
    }

    /// Records a refund's decided status, and what it did to its payment's
    /// totals; returns the refund, or None when it was already decided.
    pub fn decide_refund(&mut self, refund_id: &str, status: RefundStatus) -> Option<StoredRefund> {
        let refund = self.refunds.decide(refund_id, status)?;
        if let Some(payment) = self.payments.get_mut(&refund.request.payment_id) {
            payment.refunds.settle(refund.request.amount_cents, status);
        }
        Some(refund)
    }

    /// Every stored payment, in no particular order (the daily bill sorts them).
    pub fn all(&self) -> impl Iterator<Item = &StoredPayment> {
        self.payments.values()
    }

    /// The stored payment with this id.
    pub fn get(&self, payment_id: &str) -> Option<&StoredPayment> {
        self.payments.get(payment_id)
    }

    /// The stored payment with this merchant reference.
    pub fn get_by_reference(&self, reference: &str) -> Option<&StoredPayment> {
        self.payments.get(self.by_reference.get(reference)?)
    }

    fn find_mut(&mut self, lookup: Lookup<'_>) -> Option<&mut StoredPayment> {
        let payment_id = match lookup {
            Lookup::Id(id) => id,
            Lookup::Reference(reference) => self.by_reference.get(reference)?,
        };
        self.payments.get_mut(payment_id)
    }

    /// Counts a query or close of a payment and marks it in flight until
    /// [`PaymentBook::end_request`]. Returns the payment's id and the query
    /// latency it copied at creation.
    pub fn begin_request(
        &mut self,
        lookup: Lookup<'_>,
        kind: RequestKind,
    ) -> Result<(String, Option<std::time::Duration>), SimError> {
        let payment = self.find_mut(lookup).ok_or_else(|| lookup.not_found())?;
        let counters = &mut payment.counters;
        match kind {
            RequestKind::Query => counters.queries = counters.queries.saturating_add(1),
            RequestKind::Close => counters.closes = counters.closes.saturating_add(1),
        }
        counters.in_flight = counters.in_flight.saturating_add(1);
        counters.max_concurrent_requests = counters.max_concurrent_requests.max(counters.in_flight);
        Ok((payment.payment_id.clone(), payment.chaos.query_latency))
    }

    /// The request [`PaymentBook::begin_request`] counted is over (answered or abandoned).
    pub fn end_request(&mut self, payment_id: &str) {
        if let Some(payment) = self.payments.get_mut(payment_id) {
            payment.counters.in_flight = payment.counters.in_flight.saturating_sub(1);
        }
    }

    /// Records the decided outcome, only if the payment is still PROCESSING.
    /// Returns whether it was recorded: false means a close got there first, and
    /// the decision (and its callback) must be dropped.
    ///
    /// Deciding and closing both happen under the book's lock, so one of
    /// them wins and the other sees it.
    pub fn decide(&mut self, payment_id: &str, status: PaymentStatus) -> bool {
        match self.payments.get_mut(payment_id) {
            Some(payment) if payment.status == PaymentStatus::Processing => {
                payment.status = status;
                payment.decided_at = Some(OffsetDateTime::now_utc());
                true
            }
            _ => false,
        }
    }

    /// Closes a payment, as far as its status allows.
    ///
    /// PROCESSING becomes CLOSED (or, under chaos `succeed_on_close`, SUCCEEDED:
    /// [`Closing::PaidFirst`]); CLOSED and FAILED are answered as they are, since
    /// the money will not be taken either way; SUCCEEDED is
    /// [`SimError::AlreadySucceeded`]: the merchant must count the payment as paid.
    pub fn close(&mut self, payment_id: &str) -> Result<Closing, SimError> {
        let payment = self
            .payments
            .get_mut(payment_id)
            .ok_or_else(|| SimError::PaymentNotFound(payment_id.to_owned()))?;
        match payment.status {
            PaymentStatus::Processing if payment.chaos.succeed_on_close => {
                payment.status = PaymentStatus::Succeeded;
                payment.decided_at = Some(OffsetDateTime::now_utc());
                Ok(Closing::PaidFirst(payment.clone()))
            }
            PaymentStatus::Processing => {
                payment.status = PaymentStatus::Closed;
                Ok(Closing::Closed(payment.clone()))
            }
            PaymentStatus::Closed | PaymentStatus::Failed => {
                Ok(Closing::Unchanged(payment.clone()))
            }
            PaymentStatus::Succeeded => Err(SimError::AlreadySucceeded(payment_id.to_owned())),
        }
    }
}

impl StoredPayment {
    /// The payment id without its `pay_` prefix: the token of a payment link.
    pub fn token(&self) -> &str {
        self.payment_id
            .strip_prefix("pay_")
            .unwrap_or(&self.payment_id)
    }

    /// What a WeChat Pay prepay added, if it was made through `/v3`.
    pub fn wechat(&self) -> Option<&WechatOrder> {
        match &self.order {
            Some(PlatformOrder::Wechat(order)) => Some(order),
            _ => None,
        }
    }

    /// What an Alipay precreate added, if it was made through the gateway.
    pub fn alipay(&self) -> Option<&AlipayTrade> {
        match &self.order {
            Some(PlatformOrder::Alipay(trade)) => Some(trade),
            _ => None,
        }
    }

    /// The API view, with the callbacks the delivery log knows about.
    pub fn view(&self, callbacks: Vec<CallbackRecord>) -> Payment {
        Payment {
            payment_id: self.payment_id.clone(),
            order_no: self.request.order_no.clone(),
            merchant_reference: self.request.merchant_reference.clone(),
            amount_cents: self.request.amount_cents,
            currency: self.request.currency,
            status: self.status,
            refunded_cents: self.refunds.refunded_cents(),
            callbacks,
            queries: self.counters.queries,
            closes: self.counters.closes,
            max_concurrent_requests: self.counters.max_concurrent_requests,
        }
    }
}

impl Subject for StoredPayment {
    fn payment_id(&self) -> &str {
        &self.payment_id
    }

    fn order_no(&self) -> &str {
        &self.request.order_no
    }

    fn platform(&self) -> Platform {
        self.order
            .as_ref()
            .map_or(Platform::Standard, |order| match order {
                PlatformOrder::Wechat(_) => Platform::Wechat,
                PlatformOrder::Alipay(_) => Platform::Alipay,
            })
    }

    fn wechat_notification(
        &self,
        kind: CallbackType,
    ) -> Option<(
        platform_protocols::wechatpay::EventType,
        platform_protocols::wechatpay::NotificationPayload,
    )> {
        // WeChat Pay notifies only successful payments.
        let order = self.wechat()?;
        (kind == CallbackType::PaymentSucceeded).then(|| {
            (
                platform_protocols::wechatpay::EventType::TransactionSuccess,
                platform_protocols::wechatpay::NotificationPayload::Transaction(
                    crate::wechatpay::transaction(self, order),
                ),
            )
        })
    }

    fn refund_id(&self) -> Option<&str> {
        None
    }

    fn notify_url(&self) -> &str {
        &self.request.notify_url
    }

    fn chaos(&self) -> &Chaos {
        &self.chaos
    }

    fn body(&self, kind: CallbackType, at: OffsetDateTime) -> Vec<u8> {
        callback_signing::event_body(
            &PaymentResult {
                kind,
                order_no: &self.request.order_no,
                amount_cents: self.request.amount_cents,
                currency: self.request.currency,
                payment_id: &self.payment_id,
                merchant_reference: self.request.merchant_reference.as_deref(),
            },
            at,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(amount_cents: i64) -> CreatePayment {
        CreatePayment {
            order_no: "ord_1".into(),
            amount_cents,
            currency: "EUR".parse().expect("valid currency"),
            notify_url: "http://127.0.0.1:9/callback".into(),
            merchant_reference: None,
        }
    }

    fn with_reference(amount_cents: i64, reference: &str) -> CreatePayment {
        CreatePayment {
            merchant_reference: Some(reference.into()),
            ..request(amount_cents)
        }
    }

    /// Creates a payment with the default knobs that must be new; returns its id.
    fn new_payment(book: &mut PaymentBook, key: &str, request: CreatePayment) -> String {
        match book.create(key, request, Chaos::default()) {
            Ok(Created::New(payment)) => payment.payment_id,
            Ok(Created::Replayed(_)) => panic!("{key} replayed"),
            Err(err) => panic!("{key} refused: {err}"),
        }
    }

    #[test]
    fn the_same_key_and_request_replay_the_same_payment() {
        let mut book = PaymentBook::default();
        let first = new_payment(&mut book, "key-1", request(1000));
        let Ok(Created::Replayed(again)) = book.create("key-1", request(1000), Chaos::default())
        else {
            panic!("second use replays");
        };
        assert_eq!(first, again.payment_id);
    }

    #[test]
    fn the_same_key_with_another_request_is_refused() {
        let mut book = PaymentBook::default();
        new_payment(&mut book, "key-1", request(1000));
        assert!(matches!(
            book.create("key-1", request(2000), Chaos::default()),
            Err(SimError::IdempotencyKeyReused)
        ));
    }

    #[test]
    fn malformed_requests_and_keys_are_refused() {
        let mut book = PaymentBook::default();
        let mut https = request(1000);
        https.notify_url = "https://example.com/cb".into();
        for (key, request) in [
            ("", request(1000)),
            ("has space", request(1000)),
            ("key", request(0)),
            ("key", https),
            ("key", with_reference(1000, "")),
            ("key", with_reference(1000, "has space")),
            ("key", with_reference(1000, &"r".repeat(256))),
        ] {
            assert!(
                book.create(key, request.clone(), Chaos::default()).is_err(),
                "{key:?} {request:?}"
            );
        }
    }

    #[test]
    fn a_merchant_reference_names_one_payment() {
        let mut book = PaymentBook::default();
        let first = new_payment(&mut book, "key-1", with_reference(1000, "ref-1"));

        let reused = book.create("key-2", with_reference(1000, "ref-1"), Chaos::default());
        let replayed = book.create("key-1", with_reference(1000, "ref-1"), Chaos::default());

        assert!(matches!(reused, Err(SimError::MerchantReferenceReused)));
        assert!(matches!(replayed, Ok(Created::Replayed(p)) if p.payment_id == first));
        let (found, _) = book
            .begin_request(Lookup::Reference("ref-1"), RequestKind::Query)
            .expect("found by reference");
        assert_eq!(found, first);
    }

    #[test]
    fn a_closed_payment_cannot_be_decided_and_a_decided_one_cannot_be_closed() {
        let mut book = PaymentBook::default();
        let closed = new_payment(&mut book, "key-1", request(1000));
        let paid = new_payment(&mut book, "key-2", request(2000));

        assert!(
            matches!(book.close(&closed), Ok(Closing::Closed(p)) if p.status == PaymentStatus::Closed)
        );
        assert!(!book.decide(&closed, PaymentStatus::Succeeded));
        assert!(book.decide(&paid, PaymentStatus::Succeeded));
        assert!(!book.decide(&paid, PaymentStatus::Failed));

        assert_eq!(
            book.get(&closed).map(|p| p.status),
            Some(PaymentStatus::Closed)
        );
        assert_eq!(
            book.get(&paid).map(|p| p.status),
            Some(PaymentStatus::Succeeded)
        );
        assert!(matches!(book.close(&paid), Err(SimError::AlreadySucceeded(id)) if id == paid));
        assert!(
            matches!(book.close(&closed), Ok(Closing::Unchanged(p)) if p.status == PaymentStatus::Closed)
        );
    }

    #[test]
    fn succeed_on_close_decides_success_instead_of_closing() {
        let mut book = PaymentBook::default();
        let chaos = Chaos {
            succeed_on_close: true,
            ..Chaos::default()
        };
        let Ok(Created::New(payment)) = book.create("key-1", request(1000), chaos) else {
            panic!("created");
        };

        assert!(
            matches!(book.close(&payment.payment_id), Ok(Closing::PaidFirst(p)) if p.status == PaymentStatus::Succeeded)
        );
        assert!(!book.decide(&payment.payment_id, PaymentStatus::Succeeded));
    }

    #[test]
    fn overlapping_requests_raise_the_concurrency_high_water_mark() {
        let mut book = PaymentBook::default();
        let id = new_payment(&mut book, "key-1", request(1000));
        let mut begin = |kind| book.begin_request(Lookup::Id(&id), kind).expect("found");
        begin(RequestKind::Query);
        begin(RequestKind::Close);
        book.end_request(&id);
        book.end_request(&id);
        book.begin_request(Lookup::Id(&id), RequestKind::Query)
            .expect("found");
        book.end_request(&id);

        let counters = book.get(&id).expect("exists").counters;
        assert_eq!(counters.queries, 2);
        assert_eq!(counters.closes, 1);
        assert_eq!(counters.in_flight, 0);
        assert_eq!(counters.max_concurrent_requests, 2);
    }
}
