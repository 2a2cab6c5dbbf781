//! Payments as the simulator's API shows them, and the book that keeps them
//! together with the idempotency record.

use crate::error::SimError;
use api_types::Currency;
use api_types::api::CallbackType;
pub use api_types::platform::CreatePayment;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use uuid::Uuid;

/// The longest idempotency key accepted (Stripe's limit; keys are meant to be UUIDs).
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// Rejects what no real platform would accept, before anything is stored.
/// `notify_url` must be `http://`: the simulator speaks no TLS.
fn validate(request: &CreatePayment) -> Result<(), SimError> {
    if request.order_no.trim().is_empty() {
        return Err(SimError::BadRequest("order_no must not be empty".into()));
    }
    if request.amount_cents <= 0 {
        return Err(SimError::BadRequest("amount_cents must be positive".into()));
    }
    let url = reqwest::Url::parse(&request.notify_url)
        .map_err(|err| SimError::BadRequest(format!("notify_url is not a URL: {err}")))?;
    if url.scheme() != "http" {
        return Err(SimError::BadRequest(
            "notify_url must be http:// (the simulator has no TLS)".into(),
        ));
    }
    Ok(())
}

pub use api_types::platform::PaymentStatus;

/// The status a decided outcome gives a payment.
pub fn status_of(kind: CallbackType) -> PaymentStatus {
    match kind {
        CallbackType::PaymentSucceeded => PaymentStatus::Succeeded,
        CallbackType::PaymentFailed => PaymentStatus::Failed,
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

/// `GET /v1/payments/{payment_id}`: a payment and every callback sent about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payment {
    /// The platform's payment id.
    pub payment_id: String,
    /// The merchant's order number.
    pub order_no: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where it stands.
    pub status: PaymentStatus,
    /// Callbacks about this payment, in the order they were created.
    pub callbacks: Vec<CallbackRecord>,
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
    /// `payment.succeeded` or `payment.failed`.
    #[serde(rename = "type")]
    pub kind: CallbackType,
    /// HTTP requests made so far, counting retries, copies and redeliveries.
    pub attempts: u32,
    /// True once any attempt was answered 2xx.
    pub delivered: bool,
    /// The status of the latest answered attempt; null if none was answered.
    pub last_status: Option<u16>,
}

/// A payment as stored: the request it was made from and its status.
#[derive(Debug, Clone)]
pub(crate) struct StoredPayment {
    pub payment_id: String,
    pub request: CreatePayment,
    pub status: PaymentStatus,
}

/// Payments by id, and idempotency keys pointing at them.
#[derive(Debug, Default)]
pub(crate) struct PaymentBook {
    /// Idempotency key -> payment id. The request is kept in the payment to detect key reuse.
    by_key: HashMap<String, String>,
    payments: HashMap<String, StoredPayment>,
}

/// What [`PaymentBook::create`] did.
pub(crate) enum Created {
    /// A new payment; its delivery must be started.
    New(StoredPayment),
    /// The key was seen with the same request: the existing payment, nothing started.
    Replayed(StoredPayment),
}

impl PaymentBook {
    /// Creates a payment, or returns the one this key already created.
    ///
    /// One call under one lock, so two concurrent requests with the same key
    /// cannot both create a payment.
    pub fn create(&mut self, key: &str, request: CreatePayment) -> Result<Created, SimError> {
        if key.is_empty()
            || key.len() > MAX_IDEMPOTENCY_KEY_LEN
            || !key.bytes().all(|byte| byte.is_ascii_graphic())
        {
            return Err(SimError::BadRequest(format!(
                "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} visible ASCII characters"
            )));
        }
        validate(&request)?;
        match self.by_key.entry(key.to_owned()) {
            Entry::Occupied(entry) => {
                let existing = self
                    .payments
                    .get(entry.get())
                    .ok_or_else(|| SimError::PaymentNotFound(entry.get().clone()))?;
                if existing.request != request {
                    return Err(SimError::IdempotencyKeyReused);
                }
                Ok(Created::Replayed(existing.clone()))
            }
            Entry::Vacant(entry) => {
                let payment = StoredPayment {
                    payment_id: format!("pay_{}", Uuid::new_v4().simple()),
                    request,
                    status: PaymentStatus::Processing,
                };
                entry.insert(payment.payment_id.clone());
                self.payments
                    .insert(payment.payment_id.clone(), payment.clone());
                Ok(Created::New(payment))
            }
        }
    }

    /// The stored payment with this id.
    pub fn get(&self, payment_id: &str) -> Option<&StoredPayment> {
        self.payments.get(payment_id)
    }

    /// Records the decided outcome.
    pub fn set_status(&mut self, payment_id: &str, status: PaymentStatus) {
        if let Some(payment) = self.payments.get_mut(payment_id) {
            payment.status = status;
        }
    }
}

impl StoredPayment {
    /// The API view, with the callbacks the delivery log knows about.
    pub fn view(&self, callbacks: Vec<CallbackRecord>) -> Payment {
        Payment {
            payment_id: self.payment_id.clone(),
            order_no: self.request.order_no.clone(),
            amount_cents: self.request.amount_cents,
            currency: self.request.currency,
            status: self.status,
            callbacks,
        }
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

    #[test]
    fn the_same_key_and_request_replay_the_same_payment() {
        let mut book = PaymentBook::default();
        let Ok(Created::New(first)) = book.create("key-1", request(1000)) else {
            panic!("first use creates");
        };
        let Ok(Created::Replayed(again)) = book.create("key-1", request(1000)) else {
            panic!("second use replays");
        };
        assert_eq!(first.payment_id, again.payment_id);
    }

    #[test]
    fn the_same_key_with_another_request_is_refused() {
        let mut book = PaymentBook::default();
        assert!(book.create("key-1", request(1000)).is_ok());
        assert!(matches!(
            book.create("key-1", request(2000)),
            Err(SimError::IdempotencyKeyReused)
        ));
    }

    #[test]
    fn malformed_requests_and_keys_are_refused() {
        let mut book = PaymentBook::default();
        assert!(book.create("", request(1000)).is_err());
        assert!(book.create("has space", request(1000)).is_err());
        assert!(book.create("key", request(0)).is_err());
        let mut https = request(1000);
        https.notify_url = "https://example.com/cb".into();
        assert!(book.create("key", https).is_err());
    }
}
