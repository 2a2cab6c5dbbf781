//! The payment platform's side of the contract: what the checkout sends a
//! platform to start a payment. (What the platform sends back, the signed
//! result callback, is [`crate::api::CallbackEvent`].)

use crate::Currency;
use serde::{Deserialize, Serialize};

/// `POST /v1/payments` body (with an `Idempotency-Key` header): what the
/// merchant asks the platform to charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatePayment {
    /// The merchant's order number, echoed in the callback.
    pub order_no: String,
    /// Amount in minor units; positive.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where result callbacks are posted.
    pub notify_url: String,
}
