//! The error body every API error answers with: `{"error":{"code":"...","message":"..."}}`.
//!
//! Codes are stable and machine-readable; messages are for people and may change.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Stable error codes. Clients branch on these, never on messages.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The body or a parameter is malformed or fails validation.
    BadRequest,
    /// The admin bearer token or merchant API key is missing or wrong.
    Unauthorized,
    /// No shopper is signed in (no session cookie, or a dead session).
    Unauthenticated,
    /// Sign-in failed: unknown email or wrong password (the same answer for both).
    InvalidCredentials,
    /// A state-changing request that a browser could have been tricked into
    /// sending from another site was refused.
    CsrfRejected,
    /// The body is not `application/json`.
    UnsupportedMediaType,
    /// Too many requests of this kind; retry after `Retry-After` seconds.
    RateLimited,
    /// The `Idempotency-Key` was used before with a different request.
    IdempotencyKeyReused,
    /// The first request with this `Idempotency-Key` is still being processed.
    IdempotencyKeyInUse,
    /// No product with that SKU.
    ProductNotFound,
    /// No shopper with that id.
    ShopperNotFound,
    /// A shopper with that email exists.
    EmailTaken,
    /// No such route or resource.
    NotFound,
    /// No order with that number.
    OrderNotFound,
    /// No account with that id.
    AccountNotFound,
    /// The request token is unknown, expired, bound to another order, or its first use is still in flight.
    TokenInvalid,
    /// The order is not PENDING, so it cannot be paid.
    OrderNotPayable,
    /// The order is not paid (or already fully refunded), so it cannot be refunded.
    OrderNotRefundable,
    /// The refund, with the refunds pending and done, would give back more than was charged.
    RefundExceedsCharge,
    /// The account balance is below the order amount.
    InsufficientFunds,
    /// The order currency differs from the account currency.
    CurrencyMismatch,
    /// The token store (Redis) cannot be reached; retry later.
    TokenStoreUnavailable,
    /// A callback's signature is missing, wrong, or its timestamp is outside the tolerance.
    SignatureInvalid,
    /// A callback's amount or currency differs from the order's.
    AmountMismatch,
    /// A callback id was seen before with a different body.
    CallbackConflict,
    /// The anomaly was resolved before; a resolution is never rewritten.
    AnomalyAlreadyResolved,
    /// The body is larger than the endpoint accepts.
    PayloadTooLarge,
    /// A dependency (the database) is unavailable; retry later.
    ServiceUnavailable,
    /// Something failed on our side; it was logged.
    Internal,
}

impl ErrorCode {
    /// The code as it is spelled on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::BadRequest => "BAD_REQUEST",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::InvalidCredentials => "INVALID_CREDENTIALS",
            Self::CsrfRejected => "CSRF_REJECTED",
            Self::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            Self::RateLimited => "RATE_LIMITED",
            Self::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            Self::IdempotencyKeyInUse => "IDEMPOTENCY_KEY_IN_USE",
            Self::ProductNotFound => "PRODUCT_NOT_FOUND",
            Self::ShopperNotFound => "SHOPPER_NOT_FOUND",
            Self::EmailTaken => "EMAIL_TAKEN",
            Self::NotFound => "NOT_FOUND",
            Self::OrderNotFound => "ORDER_NOT_FOUND",
            Self::AccountNotFound => "ACCOUNT_NOT_FOUND",
            Self::TokenInvalid => "TOKEN_INVALID",
            Self::OrderNotPayable => "ORDER_NOT_PAYABLE",
            Self::OrderNotRefundable => "ORDER_NOT_REFUNDABLE",
            Self::RefundExceedsCharge => "REFUND_EXCEEDS_CHARGE",
            Self::InsufficientFunds => "INSUFFICIENT_FUNDS",
            Self::CurrencyMismatch => "CURRENCY_MISMATCH",
            Self::TokenStoreUnavailable => "TOKEN_STORE_UNAVAILABLE",
            Self::SignatureInvalid => "SIGNATURE_INVALID",
            Self::AmountMismatch => "AMOUNT_MISMATCH",
            Self::CallbackConflict => "CALLBACK_CONFLICT",
            Self::AnomalyAlreadyResolved => "ANOMALY_ALREADY_RESOLVED",
            Self::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Self::ServiceUnavailable => "SERVICE_UNAVAILABLE",
            Self::Internal => "INTERNAL",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The whole error answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The code and a human-readable message.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// Stable, machine-readable.
    pub code: ErrorCode,
    /// For people; may change between versions.
    pub message: String,
}

impl ErrorBody {
    /// Builds an error body.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            error: ErrorDetail {
                code,
                message: message.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_to_the_contract_shape() {
        let body = ErrorBody::new(ErrorCode::TokenInvalid, "used");
        let json = serde_json::to_value(&body).expect("serialises");
        assert_eq!(
            json,
            serde_json::json!({"error": {"code": "TOKEN_INVALID", "message": "used"}})
        );
    }

    #[test]
    fn as_str_matches_serde() {
        for code in [
            ErrorCode::TokenStoreUnavailable,
            ErrorCode::SignatureInvalid,
            ErrorCode::OrderNotPayable,
            ErrorCode::Unauthenticated,
            ErrorCode::InvalidCredentials,
            ErrorCode::CsrfRejected,
            ErrorCode::RateLimited,
            ErrorCode::IdempotencyKeyReused,
            ErrorCode::IdempotencyKeyInUse,
            ErrorCode::UnsupportedMediaType,
            ErrorCode::OrderNotRefundable,
            ErrorCode::RefundExceedsCharge,
        ] {
            let json = serde_json::to_string(&code).expect("serialises");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }
}
