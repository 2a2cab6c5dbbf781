//! A verified callback, what applying it did, and the log of its delivery:
//! what the charge ([`crate::charge`]) and the refund ([`crate::refund`])
//! transactions share.

use crate::db::callbacks;
use crate::db::deliveries::{self, Delivery};
use crate::error::ApiError;
use api_types::CallbackOutcome;
use api_types::api::CallbackEvent;
use checkout_rules::origin::Origin;
use sqlx::{Postgres, Transaction};

/// A callback whose signature was verified and whose body parsed.
#[derive(Debug, Clone)]
pub struct VerifiedCallback {
    /// The `webhook-id` header: the idempotency key of a callback.
    pub callback_id: String,
    /// SHA-256 of the raw body, hex: tells a true duplicate from a reused id.
    pub body_sha256: String,
    /// The parsed body.
    pub event: CallbackEvent,
    /// Whether the platform told us on its own or answered our query.
    pub origin: Origin,
}

impl VerifiedCallback {
    /// What the callback's first statement (`db::callbacks::first_statement`) binds.
    pub fn incoming(&self) -> callbacks::Incoming<'_> {
        let data = &self.event.data;
        callbacks::Incoming {
            callback_id: &self.callback_id,
            order_no: &data.order_no,
            event_type: self.event.kind,
            body_sha256: &self.body_sha256,
            payment_id: data.payment_id.as_str(),
            merchant_reference: data.merchant_reference.as_deref(),
            amount_cents: data.amount_cents,
            currency: data.currency.as_str(),
        }
    }
}

/// What applying a callback in a caller's transaction did (`charge::apply_in_tx`,
/// `refund::apply_in_tx`); the caller commits (or, for `AlreadyClaimed`, rolls back).
#[derive(Debug)]
pub enum Applied {
    /// The decision was carried out and the delivery logged with this outcome.
    Done(CallbackOutcome),
    /// The event id was claimed by someone else since the caller last looked.
    AlreadyClaimed,
    /// No such order (delivery logged).
    OrderNotFound,
    /// Amount or currency differ (anomaly and delivery logged): the message says how.
    AmountMismatch(String),
}

/// The delivery row of `callback` answered `http_status` with `outcome`.
pub fn delivery(
    callback: &VerifiedCallback,
    outcome: CallbackOutcome,
    http_status: u16,
) -> Delivery<'_> {
    Delivery {
        callback_id: &callback.callback_id,
        order_no: Some(&callback.event.data.order_no),
        event_type: Some(callback.event.kind),
        outcome,
        http_status,
    }
}

/// Logs one delivery of `callback` and what we answered, in the callback's transaction.
pub async fn log_delivery(
    tx: &mut Transaction<'_, Postgres>,
    callback: &VerifiedCallback,
    outcome: CallbackOutcome,
    http_status: u16,
) -> Result<(), ApiError> {
    deliveries::record(&mut **tx, delivery(callback, outcome, http_status)).await?;
    Ok(())
}
