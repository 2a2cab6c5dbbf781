//! Wire types shared by the checkout backend and the payment page.
//!
//! This crate holds data only: request and answer DTOs ([`api`]), the order
//! state machine's states ([`status`]), the payment attempt's ([`attempt`]);
//! which moves they allow is a rule, in `checkout_rules::state`), money in
//! integer minor units ([`money`]), the other fixed sets of names the backend
//! stores and shows ([`enums`]) and the error body with its stable codes
//! ([`error`]), and the platform's side of the contract ([`platform`], with
//! [`PlatformPaymentId`], a platform's id for a payment, which is never
//! empty). It has no business logic and compiles for `wasm32` and native.
//! With the `sqlx` feature (the backend's), these types also read and write
//! PostgreSQL text columns.

#![warn(missing_docs)]

pub mod api;
pub mod attempt;
pub mod enums;
pub mod error;
pub mod merchant;
pub mod money;
pub mod ops;
pub mod platform;
pub mod status;

#[cfg(feature = "sqlx")]
mod pg_text;

pub use attempt::AttemptStatus;
pub use enums::{
    AnomalyKind, CallbackOutcome, CallbackType, LedgerAccountKind, LedgerKind, PaymentMethod,
    ReconClass, RefundRequester, RefundStatus, UnknownName,
};
pub use error::{ErrorBody, ErrorCode, ErrorDetail};
pub use money::{Currency, CurrencyError, format_minor};
pub use platform::{EmptyPlatformPaymentId, PlatformPaymentId};
pub use status::OrderStatus;
