//! The simulator's API errors and their answers.
//!
//! Every error answers with the same body as the backend's,
//! `{"error":{"code":"...","message":"..."}}`, with codes of its own: the
//! simulator plays a third-party platform, so it does not borrow the
//! backend's error vocabulary from `api_types`. The exceptions are
//! [`ALREADY_PAID`] and [`REFUND_EXCEEDS_PAYMENT`], which the platform
//! contract (`api_types::platform`) fixes because the checkout must recognise them.

use api_types::platform::{ALREADY_PAID, PaymentStatus, REFUND_EXCEEDS_PAYMENT};
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Why a request to the simulator was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// Missing or malformed `Idempotency-Key`, malformed body, or a value out of range.
    #[error("{0}")]
    BadRequest(String),
    /// The `Idempotency-Key` was used before with a different request.
    #[error("this Idempotency-Key was already used with a different request")]
    IdempotencyKeyReused,
    /// A new payment (a new `Idempotency-Key`) gave a `merchant_reference`
    /// another payment already has, like WeChat Pay's "order number used".
    #[error("this merchant_reference is already used by another payment")]
    MerchantReferenceReused,
    /// No payment has this id (or reference; the text says which was asked for).
    #[error("no payment {0}")]
    PaymentNotFound(String),
    /// A close of the payment with this id came after it succeeded: the money
    /// was taken, and the merchant must count the payment as paid.
    #[error("payment {0} was already paid (it succeeded) and cannot be closed")]
    AlreadySucceeded(String),
    /// A new refund (a new `Idempotency-Key`) gave a `refund_no` another refund already has.
    #[error("this refund_no is already used by another refund")]
    RefundNoReused,
    /// A refund of a payment that did not take the money (PROCESSING, FAILED or CLOSED).
    #[error("payment {payment_id} is {}; only a SUCCEEDED payment can be refunded", wire(*.status))]
    PaymentNotRefundable {
        /// The payment asked to refund.
        payment_id: String,
        /// Where it stands.
        status: PaymentStatus,
    },
    /// The payment's PROCESSING and SUCCEEDED refunds and this one would give
    /// back more than it took.
    #[error("payment {payment_id} can give back at most {refundable_cents} more minor units")]
    RefundExceedsPayment {
        /// The payment asked to refund.
        payment_id: String,
        /// What it may still give back.
        refundable_cents: i64,
    },
    /// No refund has this id (or refund number; the text says which was asked for).
    #[error("no refund {0}")]
    RefundNotFound(String),
    /// No route matches.
    #[error("no such route")]
    NoRoute,
    /// Chaos: the payment was accepted, but this answer plays a lost one.
    #[error("the platform is temporarily unavailable")]
    AnswerLost,
}

impl SimError {
    /// The stable machine-readable code.
    pub const fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "BAD_REQUEST",
            Self::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            Self::MerchantReferenceReused => "MERCHANT_REFERENCE_REUSED",
            Self::PaymentNotFound(_) => "PAYMENT_NOT_FOUND",
            Self::AlreadySucceeded(_) => ALREADY_PAID,
            Self::RefundNoReused => "REFUND_NO_REUSED",
            Self::PaymentNotRefundable { .. } => "PAYMENT_NOT_REFUNDABLE",
            Self::RefundExceedsPayment { .. } => REFUND_EXCEEDS_PAYMENT,
            Self::RefundNotFound(_) => "REFUND_NOT_FOUND",
            Self::NoRoute => "NOT_FOUND",
            Self::AnswerLost => "UNAVAILABLE",
        }
    }

    /// The HTTP status it answers with.
    pub const fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            // The request is well formed but conflicts with what the key already means (as Stripe answers).
            Self::IdempotencyKeyReused
            | Self::MerchantReferenceReused
            | Self::RefundNoReused
            | Self::RefundExceedsPayment { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::PaymentNotFound(_) | Self::RefundNotFound(_) | Self::NoRoute => {
                StatusCode::NOT_FOUND
            }
            // The close or refund conflicts with what already happened to the payment.
            Self::AlreadySucceeded(_) | Self::PaymentNotRefundable { .. } => StatusCode::CONFLICT,
            Self::AnswerLost => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl IntoResponse for SimError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code(), "message": self.to_string()}});
        (self.status(), Json(body)).into_response()
    }
}

impl From<JsonRejection> for SimError {
    /// Every unreadable body, whatever axum's reason, is the client's mistake: 400.
    fn from(rejection: JsonRejection) -> Self {
        Self::BadRequest(rejection.body_text())
    }
}

/// A payment status as the wire spells it (`PROCESSING`), for messages.
fn wire(status: PaymentStatus) -> String {
    format!("{status:?}").to_uppercase()
}
