//! Refunds as the simulator's API shows them, and the book that keeps them
//! with their own idempotency record and refund-number index.
//!
//! A refund gives back part or all of a SUCCEEDED payment. What a payment may
//! still give back is its amount minus its PROCESSING and SUCCEEDED refunds
//! (`RefundTotals`): a refund that is not decided yet already holds its
//! share, so two refunds in flight cannot promise the same money twice. The
//! check and the insert happen in one call under the simulator's one lock
//! (`PaymentBook::create_refund`).

use crate::chaos::Chaos;
use crate::delivery::{Platform, Subject};
use crate::error::SimError;
use crate::outcome::Outcome;
use crate::payment::{
    CallbackRecord, Created, Lookup, MAX_IDEMPOTENCY_KEY_LEN, PaymentStatus, StoredPayment,
    check_notify_url, is_visible_ascii,
};
use api_types::api::CallbackType;
pub use api_types::platform::{CreateRefund, RefundState, RefundStatus};
use callback_signing::RefundResult;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// The status a decided outcome gives a refund, and the callback that reports it.
pub(crate) fn decided(outcome: Outcome) -> (RefundStatus, CallbackType) {
    match outcome {
        Outcome::Succeeded => (RefundStatus::Succeeded, CallbackType::RefundSucceeded),
        Outcome::Failed => (RefundStatus::Failed, CallbackType::RefundFailed),
    }
}

/// A refund, every callback sent about it, and how often the merchant asked
/// about it: the answer to `GET /v1/refunds/{refund_id}` and `GET
/// /v1/refunds/by-reference/{refund_no}`.
///
/// A superset of [`RefundState`], whose fields it carries at the top level
/// of its JSON: a merchant that knows only the wire contract reads this
/// answer as that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refund {
    /// The refund as the wire contract tells it (refund id `rf_<32 hex>`,
    /// the payment's currency); also the whole answer to `POST /v1/refunds`.
    #[serde(flatten)]
    pub state: RefundState,
    /// Callbacks about this refund, in the order they were created.
    pub callbacks: Vec<CallbackRecord>,
    /// Queries of this refund so far (by id or by refund number), this one included.
    pub queries: u32,
}

/// What a payment has given back and has promised to give back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RefundTotals {
    /// Refunds accepted and not decided yet.
    processing_cents: i64,
    /// Refunds that gave the money back.
    succeeded_cents: i64,
}

impl RefundTotals {
    /// The money given back so far.
    pub fn refunded_cents(self) -> i64 {
        self.succeeded_cents
    }

    /// What a payment of `amount_cents` may still give back. Never negative,
    /// since no refund was ever accepted beyond it; computed by subtraction so
    /// a huge requested amount cannot overflow a sum.
    fn room(self, amount_cents: i64) -> i64 {
        amount_cents - self.processing_cents - self.succeeded_cents
    }

    /// A refund of `amount_cents` was accepted: it holds its share until decided.
    fn reserve(&mut self, amount_cents: i64) {
        self.processing_cents += amount_cents;
    }

    /// A refund of `amount_cents` was decided: it no longer holds its share
    /// as PROCESSING, and keeps it only if it succeeded.
    pub fn settle(&mut self, amount_cents: i64, status: RefundStatus) {
        self.processing_cents -= amount_cents;
        if status == RefundStatus::Succeeded {
            self.succeeded_cents += amount_cents;
        }
    }
}

/// A refund as stored: the request it was made from, what it copied from its
/// payment and the knobs, its status and its query counter.
#[derive(Debug, Clone)]
pub(crate) struct StoredRefund {
    pub refund_id: String,
    pub request: CreateRefund,
    /// The payment's order number and merchant reference, echoed in the refund's callbacks.
    pub order_no: String,
    pub merchant_reference: Option<String>,
    /// The chaos knobs as they were when the refund was created.
    pub chaos: Chaos,
    pub status: RefundStatus,
    pub queries: u32,
    /// What a platform's refund request added (None for a refund made through `/v1`).
    pub extra: Option<PlatformRefund>,
    /// When it was accepted.
    pub created_at: OffsetDateTime,
    /// When its outcome was decided.
    pub decided_at: Option<OffsetDateTime>,
}

/// What a platform's own API added to a refund; compared when the same refund
/// number comes again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PlatformRefund {
    /// A WeChat Pay `/v3/refund/domestic/refunds` request.
    Wechat(WechatRefund),
    /// An Alipay `alipay.trade.refund` request.
    Alipay(AlipayRefund),
}

/// What an Alipay refund carries beyond a refund: the merchant's own numbers
/// (without the simulator's namespace prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AlipayRefund {
    pub out_trade_no: String,
    /// The refund request number (`out_biz_no` in notifications).
    pub out_request_no: String,
    pub refund_reason: Option<String>,
}

/// What a WeChat Pay refund carries beyond a refund: the merchant's own numbers
/// (without the simulator's namespace prefix) and the order's total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WechatRefund {
    pub mchid: String,
    pub out_trade_no: platform_protocols::wechatpay::OutTradeNo,
    pub out_refund_no: String,
    /// The order total in fen.
    pub total: i64,
}

impl StoredRefund {
    /// What a WeChat Pay refund request added, if it was made through `/v3`.
    pub fn wechat(&self) -> Option<&WechatRefund> {
        match &self.extra {
            Some(PlatformRefund::Wechat(refund)) => Some(refund),
            _ => None,
        }
    }

    /// What an Alipay refund request added, if it was made through the gateway.
    pub fn alipay(&self) -> Option<&AlipayRefund> {
        match &self.extra {
            Some(PlatformRefund::Alipay(refund)) => Some(refund),
            _ => None,
        }
    }

    /// The API view, with the callbacks the delivery log knows about.
    pub fn view(&self, callbacks: Vec<CallbackRecord>) -> Refund {
        Refund {
            state: RefundState {
                refund_id: self.refund_id.clone(),
                payment_id: self.request.payment_id.clone(),
                refund_no: self.request.refund_no.clone(),
                amount_cents: self.request.amount_cents,
                currency: self.request.currency,
                status: self.status,
            },
            callbacks,
            queries: self.queries,
        }
    }
}

impl Subject for StoredRefund {
    fn payment_id(&self) -> &str {
        &self.request.payment_id
    }

    fn order_no(&self) -> &str {
        &self.order_no
    }

    fn platform(&self) -> Platform {
        self.extra
            .as_ref()
            .map_or(Platform::Standard, |extra| match extra {
                PlatformRefund::Wechat(_) => Platform::Wechat,
                PlatformRefund::Alipay(_) => Platform::Alipay,
            })
    }

    fn wechat_notification(
        &self,
        kind: CallbackType,
    ) -> Option<(
        platform_protocols::wechatpay::EventType,
        platform_protocols::wechatpay::NotificationPayload,
    )> {
        use platform_protocols::wechatpay::{EventType, NotificationPayload};
        let refund = self.wechat()?;
        let event = match kind {
            CallbackType::RefundSucceeded => EventType::RefundSuccess,
            CallbackType::RefundFailed => EventType::RefundAbnormal,
            CallbackType::PaymentSucceeded | CallbackType::PaymentFailed => return None,
        };
        Some((
            event,
            NotificationPayload::Refund(crate::wechatpay::refund_notification(self, refund)),
        ))
    }

    fn refund_id(&self) -> Option<&str> {
        Some(&self.refund_id)
    }

    fn notify_url(&self) -> &str {
        &self.request.notify_url
    }

    fn chaos(&self) -> &Chaos {
        &self.chaos
    }

    fn body(&self, kind: CallbackType, at: OffsetDateTime) -> Vec<u8> {
        callback_signing::refund_event_body(
            &RefundResult {
                kind,
                order_no: &self.order_no,
                amount_cents: self.request.amount_cents,
                currency: self.request.currency,
                payment_id: &self.request.payment_id,
                refund_no: &self.request.refund_no,
                refund_id: &self.refund_id,
                merchant_reference: self.merchant_reference.as_deref(),
            },
            at,
        )
    }
}

/// Refunds by id, and idempotency keys and refund numbers pointing at them.
/// Its keys are a namespace of their own: a refund may use the key its payment was made with.
#[derive(Debug, Default)]
pub(crate) struct RefundBook {
    /// Idempotency key -> refund id. The request is kept in the refund to detect key reuse.
    by_key: HashMap<String, String>,
    /// Refund number -> refund id; one refund per number.
    by_refund_no: HashMap<String, String>,
    refunds: HashMap<String, StoredRefund>,
}

/// Rejects what no real platform would accept, before anything is looked up.
fn validate(request: &CreateRefund) -> Result<(), SimError> {
    if request.amount_cents <= 0 {
        return Err(SimError::BadRequest("amount_cents must be positive".into()));
    }
    if !is_visible_ascii(&request.refund_no, MAX_IDEMPOTENCY_KEY_LEN) {
        return Err(SimError::BadRequest(format!(
            "refund_no must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} visible ASCII characters"
        )));
    }
    check_notify_url(&request.notify_url)
}

impl RefundBook {
    /// Creates a refund of `payment` (None when no payment has the requested
    /// id) that copies `chaos`, or returns the one this key already created.
    ///
    /// A new refund is refused, and nothing stored, when the payment is
    /// missing, not SUCCEEDED or finished (an Alipay `TRADE_FINISHED` trade),
    /// in another currency, or would give back more than it took counting its
    /// PROCESSING and SUCCEEDED refunds.
    pub fn create(
        &mut self,
        key: &str,
        request: CreateRefund,
        payment: Option<&mut StoredPayment>,
        chaos: Chaos,
        extra: Option<PlatformRefund>,
    ) -> Result<Created<StoredRefund>, SimError> {
        crate::payment::check_idempotency_key(key)?;
        validate(&request)?;
        if let Some(existing) = self.by_key.get(key).and_then(|id| self.refunds.get(id)) {
            if existing.request != request || existing.extra != extra {
                return Err(SimError::IdempotencyKeyReused);
            }
            return Ok(Created::Replayed(existing.clone()));
        }
        // A refund number names one refund, so a query by it is never ambiguous.
        if self.by_refund_no.contains_key(&request.refund_no) {
            return Err(SimError::RefundNoReused);
        }
        let payment =
            payment.ok_or_else(|| SimError::PaymentNotFound(request.payment_id.clone()))?;
        if payment.status != PaymentStatus::Succeeded || payment.finished_at.is_some() {
            return Err(SimError::PaymentNotRefundable {
                payment_id: payment.payment_id.clone(),
                status: payment.status,
            });
        }
        if request.currency != payment.request.currency {
            return Err(SimError::BadRequest(format!(
                "currency must be the payment's, {}",
                payment.request.currency.as_str()
            )));
        }
        let room = payment.refunds.room(payment.request.amount_cents);
        if request.amount_cents > room {
            return Err(SimError::RefundExceedsPayment {
                payment_id: payment.payment_id.clone(),
                refundable_cents: room,
            });
        }
        payment.refunds.reserve(request.amount_cents);
        let refund = StoredRefund {
            refund_id: format!("rf_{}", Uuid::new_v4().simple()),
            order_no: payment.request.order_no.clone(),
            merchant_reference: payment.request.merchant_reference.clone(),
            request,
            chaos,
            status: RefundStatus::Processing,
            queries: 0,
            extra,
            created_at: OffsetDateTime::now_utc(),
            decided_at: None,
        };
        self.by_key.insert(key.to_owned(), refund.refund_id.clone());
        self.by_refund_no
            .insert(refund.request.refund_no.clone(), refund.refund_id.clone());
        self.refunds
            .insert(refund.refund_id.clone(), refund.clone());
        Ok(Created::New(refund))
    }

    /// Every stored refund, in no particular order (the daily bill sorts them).
    pub fn all(&self) -> impl Iterator<Item = &StoredRefund> {
        self.refunds.values()
    }

    /// The stored refund with this id.
    pub fn get(&self, refund_id: &str) -> Option<&StoredRefund> {
        self.refunds.get(refund_id)
    }

    /// A merchant's query by refund id or refund number: counted, then answered.
    pub fn query(&mut self, lookup: Lookup<'_>) -> Result<StoredRefund, SimError> {
        let refund_id = match lookup {
            Lookup::Id(id) => Some(id),
            Lookup::Reference(refund_no) => self.by_refund_no.get(refund_no).map(String::as_str),
        };
        let refund = refund_id
            .and_then(|id| self.refunds.get_mut(id))
            .ok_or_else(|| match lookup {
                Lookup::Id(id) => SimError::RefundNotFound(id.to_owned()),
                Lookup::Reference(refund_no) => {
                    SimError::RefundNotFound(format!("with refund_no {refund_no}"))
                }
            })?;
        refund.queries = refund.queries.saturating_add(1);
        Ok(refund.clone())
    }

    /// Records a refund's decided status if it is still PROCESSING; returns
    /// it, or None when there is nothing to decide.
    pub fn decide(&mut self, refund_id: &str, status: RefundStatus) -> Option<StoredRefund> {
        let refund = self.refunds.get_mut(refund_id)?;
        if refund.status != RefundStatus::Processing {
            return None;
        }
        refund.status = status;
        refund.decided_at = Some(OffsetDateTime::now_utc());
        Some(refund.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payment::{CreatePayment, PaymentBook};

    /// A book with one SUCCEEDED payment of `amount_cents` EUR; returns its id.
    fn book_with_paid(amount_cents: i64) -> (PaymentBook, String) {
        let mut book = PaymentBook::default();
        let request = CreatePayment {
            order_no: "ord_1".into(),
            amount_cents,
            currency: "EUR".parse().expect("valid currency"),
            notify_url: "http://127.0.0.1:9/callback".into(),
            merchant_reference: Some("ref-1".into()),
        };
        let Ok(Created::New(payment)) = book.create("pay-key", request, Chaos::default()) else {
            panic!("created");
        };
        assert!(book.decide(&payment.payment_id, PaymentStatus::Succeeded));
        (book, payment.payment_id)
    }

    fn refund(payment_id: &str, refund_no: &str, amount_cents: i64) -> CreateRefund {
        CreateRefund {
            payment_id: payment_id.into(),
            refund_no: refund_no.into(),
            amount_cents,
            currency: "EUR".parse().expect("valid currency"),
            notify_url: "http://127.0.0.1:9/refunds".into(),
        }
    }

    /// Creates a refund that must be new; returns it.
    fn new_refund(book: &mut PaymentBook, request: CreateRefund) -> StoredRefund {
        let key = request.refund_no.clone();
        match book.create_refund(&key, request, Chaos::default()) {
            Ok(Created::New(refund)) => refund,
            Ok(Created::Replayed(_)) => panic!("{key} replayed"),
            Err(err) => panic!("{key} refused: {err}"),
        }
    }

    fn refunded_cents(book: &PaymentBook, payment_id: &str) -> i64 {
        book.get(payment_id)
            .expect("exists")
            .refunds
            .refunded_cents()
    }

    #[test]
    fn processing_refunds_hold_their_share_and_failed_ones_give_it_back() {
        let (mut book, pay) = book_with_paid(1000);
        let first = new_refund(&mut book, refund(&pay, "r1", 600));

        let too_much = book.create_refund("r2", refund(&pay, "r2", 401), Chaos::default());
        let failed = book.decide_refund(&first.refund_id, RefundStatus::Failed);
        let whole = new_refund(&mut book, refund(&pay, "r3", 1000));
        let succeeded = book.decide_refund(&whole.refund_id, RefundStatus::Succeeded);
        let one_more = book.create_refund("r4", refund(&pay, "r4", 1), Chaos::default());

        assert!(matches!(
            too_much,
            Err(SimError::RefundExceedsPayment {
                refundable_cents: 400,
                ..
            })
        ));
        assert_eq!(failed.map(|r| r.status), Some(RefundStatus::Failed));
        assert_eq!(succeeded.map(|r| r.status), Some(RefundStatus::Succeeded));
        assert!(matches!(
            one_more,
            Err(SimError::RefundExceedsPayment {
                refundable_cents: 0,
                ..
            })
        ));
        assert_eq!(refunded_cents(&book, &pay), 1000);
        assert!(
            book.decide_refund(&whole.refund_id, RefundStatus::Failed)
                .is_none(),
            "a decided refund stays decided"
        );
        assert_eq!(refunded_cents(&book, &pay), 1000);
    }

    #[test]
    fn the_same_key_replays_and_another_body_under_it_is_refused() {
        let (mut book, pay) = book_with_paid(1000);
        let first = new_refund(&mut book, refund(&pay, "r1", 100));

        let replayed = book.create_refund("r1", refund(&pay, "r1", 100), Chaos::default());
        let reused = book.create_refund("r1", refund(&pay, "r1", 200), Chaos::default());
        let same_number = book.create_refund("other", refund(&pay, "r1", 100), Chaos::default());
        let payment_key = book.create_refund("pay-key", refund(&pay, "r2", 100), Chaos::default());

        assert!(matches!(replayed, Ok(Created::Replayed(r)) if r.refund_id == first.refund_id));
        assert!(matches!(reused, Err(SimError::IdempotencyKeyReused)));
        assert!(matches!(same_number, Err(SimError::RefundNoReused)));
        assert!(
            matches!(payment_key, Ok(Created::New(_))),
            "refund keys are apart from payment keys"
        );
    }

    #[test]
    fn a_refund_copies_the_payments_order_and_reference_for_its_callbacks() {
        let (mut book, pay) = book_with_paid(1000);
        let stored = new_refund(&mut book, refund(&pay, "r1", 250));

        let event: api_types::api::CallbackEvent = serde_json::from_slice(
            &stored.body(CallbackType::RefundSucceeded, OffsetDateTime::now_utc()),
        )
        .expect("a callback event");

        assert_eq!(event.kind, CallbackType::RefundSucceeded);
        assert_eq!(event.data.order_no, "ord_1");
        assert_eq!(event.data.merchant_reference.as_deref(), Some("ref-1"));
        assert_eq!(event.data.payment_id, pay);
        assert_eq!(event.data.amount_cents, 250);
        assert_eq!(event.data.refund_no.as_deref(), Some("r1"));
        assert_eq!(event.data.refund_id, Some(stored.refund_id));
    }

    #[test]
    fn queries_find_a_refund_by_id_or_number_and_count() {
        let (mut book, pay) = book_with_paid(1000);
        let stored = new_refund(&mut book, refund(&pay, "r1", 100));

        let by_no = book.refunds.query(Lookup::Reference("r1")).expect("found");
        let by_id = book
            .refunds
            .query(Lookup::Id(&stored.refund_id))
            .expect("found");
        let missing = book.refunds.query(Lookup::Reference("r2"));

        assert_eq!(by_no.refund_id, stored.refund_id);
        assert_eq!((by_no.queries, by_id.queries), (1, 2));
        assert!(matches!(missing, Err(SimError::RefundNotFound(_))));
    }
}
