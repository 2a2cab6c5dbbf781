//! The error body every API error answers with: `{"error":{"code":"...","message":"..."}}`.
//!
//! Codes are stable and machine-readable; messages are for people and may change.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Stable error codes. Clients branch on these, never on messages.
///
/// On the wire each is its [`ErrorCode::as_str`] text. Serialised by hand from
/// that one table (not by serde's derive, which would add a second table of
/// every name to the payment page's WebAssembly).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(rename_all = "SCREAMING_SNAKE_CASE"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Another submit of this request token is still being recorded; retry
    /// after `Retry-After` seconds with the same token, which then replays its answer.
    PayInProgress,
    /// The order is not paid (or already fully refunded), so it cannot be refunded.
    OrderNotRefundable,
    /// The refund, with the refunds pending and done, would give back more than was charged.
    RefundExceedsCharge,
    /// The account balance is below the order amount.
    InsufficientFunds,
    /// The pay request names a payment method this checkout does not offer
    /// (`GET /api/platform` lists `methods`).
    PaymentMethodUnavailable,
    /// The order currency differs from the account currency.
    CurrencyMismatch,
    /// Another order of this merchant has this `merchant_reference`.
    MerchantReferenceInUse,
    /// A `return_url` or `cancel_url` is not `https` (or `http` on a loopback
    /// host), or its origin is not one of the merchant's `return_origins`.
    ReturnUrlNotAllowed,
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
    /// Every code, in declaration order.
    pub const ALL: [Self; 33] = [
        Self::BadRequest,
        Self::Unauthorized,
        Self::Unauthenticated,
        Self::InvalidCredentials,
        Self::CsrfRejected,
        Self::UnsupportedMediaType,
        Self::RateLimited,
        Self::IdempotencyKeyReused,
        Self::IdempotencyKeyInUse,
        Self::ProductNotFound,
        Self::ShopperNotFound,
        Self::EmailTaken,
        Self::NotFound,
        Self::OrderNotFound,
        Self::AccountNotFound,
        Self::TokenInvalid,
        Self::OrderNotPayable,
        Self::PayInProgress,
        Self::OrderNotRefundable,
        Self::RefundExceedsCharge,
        Self::InsufficientFunds,
        Self::PaymentMethodUnavailable,
        Self::CurrencyMismatch,
        Self::MerchantReferenceInUse,
        Self::ReturnUrlNotAllowed,
        Self::TokenStoreUnavailable,
        Self::SignatureInvalid,
        Self::AmountMismatch,
        Self::CallbackConflict,
        Self::AnomalyAlreadyResolved,
        Self::PayloadTooLarge,
        Self::ServiceUnavailable,
        Self::Internal,
    ];

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
            Self::PayInProgress => "PAY_IN_PROGRESS",
            Self::OrderNotRefundable => "ORDER_NOT_REFUNDABLE",
            Self::RefundExceedsCharge => "REFUND_EXCEEDS_CHARGE",
            Self::InsufficientFunds => "INSUFFICIENT_FUNDS",
            Self::PaymentMethodUnavailable => "PAYMENT_METHOD_UNAVAILABLE",
            Self::CurrencyMismatch => "CURRENCY_MISMATCH",
            Self::MerchantReferenceInUse => "MERCHANT_REFERENCE_IN_USE",
            Self::ReturnUrlNotAllowed => "RETURN_URL_NOT_ALLOWED",
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

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
            .ok_or_else(|| serde::de::Error::custom(format_args!("unknown error code {text:?}")))
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
    fn every_code_travels_as_its_text_and_back() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "{code:?} spelled twice");
            let json = serde_json::to_string(&code).expect("serialises");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(
                serde_json::from_str::<ErrorCode>(&json).expect("parses"),
                code
            );
        }
        assert!(serde_json::from_str::<ErrorCode>("\"NO_SUCH_CODE\"").is_err());
        assert!(serde_json::from_str::<ErrorCode>("\"token_invalid\"").is_err());
        assert!(serde_json::from_str::<ErrorCode>("7").is_err());
    }

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
