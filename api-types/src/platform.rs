//! The payment platform's side of the contract: what the checkout sends a
//! platform to start, query and close a payment, and what the platform answers.
//! (What the platform sends back on its own, the signed result callback, is
//! [`crate::api::CallbackEvent`].)
//!
//! The checkout's own payment id (the attempt's `payment_id`) travels as the
//! `merchant_reference`: the platform echoes it in every callback and can be
//! asked about a payment by it, even when the answer to the hand-over was lost
//! and the platform's own payment id was never learned.

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
    /// The merchant's id for this payment (the checkout's attempt id), echoed in
    /// every callback and usable to query or close the payment. Optional on the
    /// wire for merchants that only know the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant_reference: Option<String>,
}

/// Where a payment stands at the platform, spelled as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentStatus {
    /// Accepted; the outcome is not decided yet.
    Processing,
    /// The money was taken.
    Succeeded,
    /// The money will not be taken.
    Failed,
    /// Closed by the merchant before it was decided: the money will not be taken.
    Closed,
}

impl PaymentStatus {
    /// True once the platform will not change its mind.
    pub const fn is_final(self) -> bool {
        !matches!(self, Self::Processing)
    }
}

/// What a platform says about one payment when asked (`GET` by reference or
/// id) or when told to close it. Unknown fields are ignored, so a platform's
/// fuller answer (the simulator adds its callbacks) reads as this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentState {
    /// The platform's payment id.
    pub payment_id: String,
    /// The merchant's order number.
    pub order_no: String,
    /// The merchant's id for the payment, when it gave one.
    #[serde(default)]
    pub merchant_reference: Option<String>,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where it stands.
    pub status: PaymentStatus,
}

/// The error code a platform answers a close with when the payment was
/// already paid (409): the merchant must treat the payment as a success.
pub const ALREADY_PAID: &str = "PAYMENT_ALREADY_SUCCEEDED";

/// `POST /v1/refunds` body (with the refund number as `Idempotency-Key`): give
/// part or all of a succeeded payment back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateRefund {
    /// The platform's id of the payment to refund.
    pub payment_id: String,
    /// The merchant's refund number, echoed in the refund's callbacks.
    pub refund_no: String,
    /// Amount to give back, in minor units; positive.
    pub amount_cents: i64,
    /// ISO 4217 code; the payment's.
    pub currency: Currency,
    /// Where the refund's result callbacks are posted.
    pub notify_url: String,
}

/// Where a refund stands at the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundStatus {
    /// Accepted; not decided yet.
    Processing,
    /// The money was given back.
    Succeeded,
    /// The money will not be given back.
    Failed,
}

/// What a platform says about one refund (`POST /v1/refunds`, `GET
/// /v1/refunds/by-reference/{refund_no}`). Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundState {
    /// The platform's id for the refund.
    pub refund_id: String,
    /// The payment refunded.
    pub payment_id: String,
    /// The merchant's refund number.
    pub refund_no: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where it stands.
    pub status: RefundStatus,
}

/// The error code a platform answers a refund with when the payment's
/// refunds would exceed what it took (422).
pub const REFUND_EXCEEDS_PAYMENT: &str = "REFUND_EXCEEDS_PAYMENT";

/// The columns of a daily bill (`GET /v1/bills/{date}`, CSV with one header
/// line), in order: a subset of a WeChat Pay trade bill's, in its order. The
/// platform writes them and the checkout's reconciliation reads them.
pub const BILL_COLUMNS: [&str; 12] = [
    "trade_time",
    "transaction_id",
    "out_trade_no",
    "trade_state",
    "currency",
    "amount",
    "refund_id",
    "out_refund_no",
    "refund_amount",
    "refund_state",
    "fee",
    "rate",
];
