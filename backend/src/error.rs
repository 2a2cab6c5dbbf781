//! The one API error type. Every handler returns `Result<_, ApiError>`; each variant
//! maps to an HTTP status and a stable [`ErrorCode`] in the shared error body.
//! Database and internal failures are logged with their cause chain and answered
//! with a generic message: SQL text never leaves the process.

use api_types::{Currency, ErrorBody, ErrorCode, OrderStatus};
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Seconds a client should wait before retrying after a 503.
pub const RETRY_AFTER_SECS: u32 = 1;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Malformed body or parameter.
    #[error("{0}")]
    BadRequest(String),
    /// Missing or wrong admin bearer token.
    #[error("missing or wrong bearer token")]
    Unauthorized,
    /// No shopper signed in: no session cookie, or a session that ended.
    #[error("sign in first")]
    Unauthenticated,
    /// Unknown email or wrong password: one answer for both.
    #[error("email or password is wrong")]
    InvalidCredentials,
    /// A request that may come from another site (CSRF); the reason is for people.
    #[error("{0}")]
    CsrfRejected(&'static str),
    /// A state-changing body that is not JSON.
    #[error("send the body as Content-Type: application/json")]
    UnsupportedMediaType,
    /// Over a rate limit.
    #[error("too many requests; retry in {retry_after_secs} s")]
    RateLimited {
        /// Seconds until a retry can succeed (`Retry-After`).
        retry_after_secs: u64,
    },
    /// The idempotency key was used with another request.
    #[error(
        "this Idempotency-Key was used with a different request; make a new key for a new order"
    )]
    IdempotencyKeyReused,
    /// Another submit of the same request token is still being recorded.
    #[error(
        "another submit of this request token is still being recorded; retry shortly with the same token"
    )]
    PayInProgress,
    /// The first request with the idempotency key is still running.
    #[error("a request with this Idempotency-Key is still being processed; retry shortly")]
    IdempotencyKeyInUse,
    /// No such product.
    #[error("no product with that sku")]
    ProductNotFound,
    /// No such shopper.
    #[error("no shopper with that id")]
    ShopperNotFound,
    /// A shopper with that email exists.
    #[error("a shopper with that email exists")]
    EmailTaken,
    /// No such route or resource (also the admin API when it is switched off).
    #[error("not found")]
    NotFound,
    /// No such order.
    #[error("no order with that number")]
    OrderNotFound,
    /// No such account.
    #[error("no account with that id")]
    AccountNotFound,
    /// The request token cannot be used; the reason is for people.
    #[error("{0}")]
    TokenInvalid(&'static str),
    /// The order is final.
    #[error("order is {0}, only PENDING orders can be paid")]
    OrderNotPayable(OrderStatus),
    /// The order cannot be refunded (not PAID); the message says why.
    #[error("{0}")]
    OrderNotRefundable(String),
    /// The refund would give back more than was charged; the message says how much is left.
    #[error("{0}")]
    RefundExceedsCharge(String),
    /// The order is past its expiry (it is, or is about to be, CLOSED).
    #[error("the order expired before it was paid; nothing was charged, place it again")]
    OrderExpired,
    /// Available money (balance minus what payments in flight hold) below the amount.
    #[error("available balance of {available_cents} is below the amount of {amount_cents}")]
    InsufficientFunds {
        /// Balance minus holds.
        available_cents: i64,
        /// Amount asked for.
        amount_cents: i64,
    },
    /// The pay names a payment method this platform does not offer.
    #[error("payment method {asked} is not offered here; offered: {offered}")]
    PaymentMethodUnavailable {
        /// The method asked for.
        asked: api_types::PaymentMethod,
        /// What `GET /api/platform` lists, comma-separated.
        offered: String,
    },
    /// Order currency differs from the account currency.
    #[error("the account holds {account}, the order is in {order}")]
    CurrencyMismatch {
        /// The account's currency.
        account: Currency,
        /// The requested currency.
        order: Currency,
    },
    /// The shopper has no account in the order's currency.
    #[error("you have no account in {0}")]
    NoAccountInCurrency(Currency),
    /// Another order of the merchant has this `merchant_reference`.
    #[error("another of your orders has merchant_reference {0:?}; each order needs its own")]
    MerchantReferenceInUse(String),
    /// A return or cancel URL the merchant may not send shoppers to; the message says why.
    #[error("{0}")]
    ReturnUrlNotAllowed(String),
    /// Redis is unreachable or too slow.
    #[error("the request-token store is unavailable")]
    TokenStoreUnavailable(#[source] redis::RedisError),
    /// Callback signature or timestamp rejected.
    #[error("{0}")]
    SignatureInvalid(String),
    /// Callback amount or currency differs from the order.
    #[error("{0}")]
    AmountMismatch(String),
    /// Callback id reused with another body.
    #[error("callback id was already processed with a different body")]
    CallbackConflict,
    /// An anomaly resolved before: its resolution is never rewritten.
    #[error("the anomaly was already resolved; a resolution is never rewritten")]
    AnomalyAlreadyResolved,
    /// Body over the endpoint's limit.
    #[error("body larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// PostgreSQL is unreachable or the pool is exhausted.
    #[error("the database is unavailable")]
    DatabaseUnavailable(#[source] sqlx::Error),
    /// The session store (in PostgreSQL) could not be read or written: the
    /// store says no more than its message, and the database is its backend.
    #[error("the session store is unavailable")]
    SessionStoreUnavailable(String),
    /// Every password-check slot stayed taken for the whole wait (a flood of
    /// sign-ins): nothing was checked; 503 with `Retry-After`.
    #[error("too many sign-ins are being checked right now; retry in a few seconds")]
    PasswordChecksBusy,
    /// Anything else; logged, answered generically.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    /// The HTTP status and stable code of this error.
    pub fn status_and_code(&self) -> (StatusCode, ErrorCode) {
        use ApiError::*;
        match self {
            BadRequest(_) => (StatusCode::BAD_REQUEST, ErrorCode::BadRequest),
            Unauthorized => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            NotFound => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            Unauthenticated => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthenticated),
            InvalidCredentials => (StatusCode::UNAUTHORIZED, ErrorCode::InvalidCredentials),
            CsrfRejected(_) => (StatusCode::FORBIDDEN, ErrorCode::CsrfRejected),
            UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType,
            ),
            RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::RateLimited),
            IdempotencyKeyReused => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::IdempotencyKeyReused,
            ),
            IdempotencyKeyInUse => (StatusCode::CONFLICT, ErrorCode::IdempotencyKeyInUse),
            PayInProgress => (StatusCode::CONFLICT, ErrorCode::PayInProgress),
            ProductNotFound => (StatusCode::NOT_FOUND, ErrorCode::ProductNotFound),
            ShopperNotFound => (StatusCode::NOT_FOUND, ErrorCode::ShopperNotFound),
            EmailTaken => (StatusCode::CONFLICT, ErrorCode::EmailTaken),
            OrderNotFound => (StatusCode::NOT_FOUND, ErrorCode::OrderNotFound),
            AccountNotFound => (StatusCode::NOT_FOUND, ErrorCode::AccountNotFound),
            TokenInvalid(_) => (StatusCode::CONFLICT, ErrorCode::TokenInvalid),
            OrderNotPayable(_) | OrderExpired => (StatusCode::CONFLICT, ErrorCode::OrderNotPayable),
            OrderNotRefundable(_) => (StatusCode::CONFLICT, ErrorCode::OrderNotRefundable),
            RefundExceedsCharge(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::RefundExceedsCharge,
            ),
            InsufficientFunds { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::InsufficientFunds,
            ),
            PaymentMethodUnavailable { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::PaymentMethodUnavailable,
            ),
            CurrencyMismatch { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::CurrencyMismatch,
            ),
            NoAccountInCurrency(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::CurrencyMismatch,
            ),
            MerchantReferenceInUse(_) => (StatusCode::CONFLICT, ErrorCode::MerchantReferenceInUse),
            ReturnUrlNotAllowed(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::ReturnUrlNotAllowed,
            ),
            TokenStoreUnavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::TokenStoreUnavailable,
            ),
            SignatureInvalid(_) => (StatusCode::UNAUTHORIZED, ErrorCode::SignatureInvalid),
            AmountMismatch(_) => (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::AmountMismatch),
            CallbackConflict => (StatusCode::CONFLICT, ErrorCode::CallbackConflict),
            AnomalyAlreadyResolved => (StatusCode::CONFLICT, ErrorCode::AnomalyAlreadyResolved),
            PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::PayloadTooLarge),
            DatabaseUnavailable(_) | SessionStoreUnavailable(_) | PasswordChecksBusy => (
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::ServiceUnavailable,
            ),
            Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
        }
    }

    /// Wraps any internal failure.
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        Self::Internal(err.into())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        match err {
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
                Self::DatabaseUnavailable(err)
            }
            // Connection-level failures (server restarting, admin shutdown) are retryable too.
            sqlx::Error::Database(ref db)
                if db
                    .code()
                    .is_some_and(|code| code.starts_with("57") || code.starts_with("08")) =>
            {
                Self::DatabaseUnavailable(err)
            }
            other => Self::Internal(other.into()),
        }
    }
}

/// A group-committed row ([`crate::infra::group_commit`]) that was not written: its
/// batch's statement failed (the database's outage, as with any statement:
/// 503, retry), or the writer is gone (the process is stopping: a bug if seen
/// while serving).
impl From<crate::infra::group_commit::GroupCommitError> for ApiError {
    fn from(err: crate::infra::group_commit::GroupCommitError) -> Self {
        use crate::infra::group_commit::GroupCommitError;
        match err {
            GroupCommitError::Failed { message, .. } => {
                Self::DatabaseUnavailable(sqlx::Error::Protocol(message))
            }
            stopped @ GroupCommitError::Stopped { .. } => Self::internal(stopped),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = match &self {
            Self::DatabaseUnavailable(err) => {
                tracing::error!(error = %err, "database unavailable");
                "The service is temporarily unavailable; retry shortly.".to_owned()
            }
            Self::SessionStoreUnavailable(err) => {
                tracing::error!(error = %err, "session store unavailable");
                "The service is temporarily unavailable; retry shortly.".to_owned()
            }
            Self::TokenStoreUnavailable(err) => {
                tracing::warn!(error = %err, "token store unavailable");
                "Payments cannot start right now; nothing was charged. Retry shortly.".to_owned()
            }
            Self::Internal(err) => {
                tracing::error!(error = ?err, "internal error");
                "Something went wrong on our side; it was logged.".to_owned()
            }
            other => other.to_string(),
        };
        let retry_after = match &self {
            Self::RateLimited { retry_after_secs } => Some(*retry_after_secs),
            Self::IdempotencyKeyInUse | Self::PayInProgress => Some(u64::from(RETRY_AFTER_SECS)),
            _ if status == StatusCode::SERVICE_UNAVAILABLE => Some(u64::from(RETRY_AFTER_SECS)),
            _ => None,
        };
        let mut response = (status, Json(ErrorBody::new(code, message))).into_response();
        response
            .extensions_mut()
            .insert(crate::infra::metrics::ErrorCodeTag(code.as_str()));
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
