//! Request and answer bodies of the HTTP API, exactly as they travel.
//!
//! Timestamps are RFC 3339 text in UTC. Amounts are integer minor units.

pub use crate::enums::CallbackType;
use crate::enums::{AnomalyKind, CallbackOutcome, LedgerKind};
use crate::money::Currency;
use crate::status::OrderStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `GET /healthz`: each part is `"ok"` or `"down"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// PostgreSQL.
    pub database: String,
    /// Redis (the request-token store).
    pub redis: String,
}

/// `POST /api/admin/accounts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateAccount {
    /// Opening balance in minor units; not negative.
    pub balance_cents: i64,
    /// The account's currency; orders on it use the same one.
    pub currency: Currency,
}

/// An account as answered by `POST /api/admin/accounts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The account's id.
    pub account_id: Uuid,
    /// Current balance in minor units.
    pub balance_cents: i64,
    /// The account's currency.
    pub currency: Currency,
}

/// `GET /api/admin/accounts/{account_id}`: the account with every ledger row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountDetails {
    /// The account's id.
    pub account_id: Uuid,
    /// Current balance in minor units.
    pub balance_cents: i64,
    /// Balance when the account was opened; minus the sum of charges, it is the current balance.
    pub opening_balance_cents: i64,
    /// The account's currency.
    pub currency: Currency,
    /// Ledger rows, oldest first.
    pub ledger: Vec<LedgerEntry>,
}

/// One money movement, written by exactly one callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The platform's notification id that caused the movement.
    pub callback_id: String,
    /// The order charged.
    pub order_no: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// What kind of movement: `CHARGE`.
    pub kind: LedgerKind,
    /// The platform's payment id.
    pub payment_id: String,
    /// When it was written.
    pub created_at: String,
}

/// `POST /api/orders`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateOrder {
    /// The account to charge.
    pub account_id: Uuid,
    /// Amount in minor units; positive.
    pub amount_cents: i64,
    /// Must equal the account's currency.
    pub currency: Currency,
}

/// An order, as answered by `POST /api/orders` and `GET /api/orders/{order_no}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// Unguessable order number.
    pub order_no: String,
    /// The account it charges.
    pub account_id: Uuid,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// Where the order stands.
    pub status: OrderStatus,
    /// When it was created.
    pub created_at: String,
    /// When it was charged; null unless PAID.
    pub paid_at: Option<String>,
    /// Why it failed; null unless FAILED.
    pub failure_reason: Option<String>,
}

/// `POST /api/orders/{order_no}/request-token`: a one-time token for one "Pay now".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestToken {
    /// UUID v4, usable once.
    pub request_token: Uuid,
    /// When the token stops being accepted.
    pub expires_at: String,
}

/// `POST /api/orders/{order_no}/pay`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayRequest {
    /// The token from `request-token`.
    pub request_token: Uuid,
}

/// The 202 answer to a pay request; replayed unchanged for the same token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayAccepted {
    /// The order being paid.
    pub order_no: String,
    /// Our id of the payment attempt.
    pub payment_id: Uuid,
    /// The order's status when the attempt was accepted: `PENDING`.
    pub status: OrderStatus,
}

/// The event time inside a callback body: RFC 3339 text or Unix seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EventTimestamp {
    /// RFC 3339 text.
    Text(String),
    /// Seconds since the Unix epoch.
    Unix(i64),
}

/// `POST /api/payments/callback` body (Standard Webhooks payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackEvent {
    /// `payment.succeeded` or `payment.failed`.
    #[serde(rename = "type")]
    pub kind: CallbackType,
    /// When the platform produced the event.
    pub timestamp: EventTimestamp,
    /// What the event is about.
    pub data: CallbackData,
}

/// The payment a callback reports on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackData {
    /// Our order number.
    pub order_no: String,
    /// Amount the platform took, in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// The platform's payment id.
    pub payment_id: String,
}

/// The 200 answer to a callback, applied or duplicate: the platform may stop retrying.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackAck {
    /// Always `SUCCESS`.
    pub code: String,
    /// True when this callback id had already been processed.
    pub duplicate: bool,
}

/// `GET /api/demo`: the demo shop's account, when demo mode is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoShop {
    /// The demo account.
    pub account: Account,
    /// Its orders, newest first.
    pub orders: Vec<Order>,
}

/// `GET /api/admin/callbacks/{callback_id}`: everything that happened to one callback id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallbackHistory {
    /// The platform's notification id.
    pub callback_id: String,
    /// How it was applied the first time; null if it never was (refused or never received).
    pub processed: Option<ProcessedCallback>,
    /// Every signed delivery received, oldest first.
    pub deliveries: Vec<CallbackDelivery>,
    /// What it put in front of a person.
    pub anomalies: Vec<Anomaly>,
}

/// The one time a callback id was applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessedCallback {
    /// `payment.succeeded` or `payment.failed`.
    pub event_type: CallbackType,
    /// The order it was about.
    pub order_no: String,
    /// The platform's payment id.
    pub payment_id: String,
    /// What it did: `CHARGED`, `ORDER_FAILED`, `IGNORED_ANOMALY`, ...
    pub outcome: CallbackOutcome,
    /// When.
    pub processed_at: String,
}

/// One received delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackDelivery {
    /// What became of it: `CHARGED`, `DUPLICATE`, `AMOUNT_MISMATCH`, `ORDER_NOT_FOUND`, ...
    pub outcome: CallbackOutcome,
    /// What we answered.
    pub http_status: u16,
    /// When it arrived.
    pub received_at: String,
}

/// Something a person must review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// The callback that raised it.
    pub callback_id: String,
    /// The order concerned.
    pub order_no: String,
    /// Why it needs a person.
    pub kind: AnomalyKind,
    /// The facts behind it.
    pub details: serde_json::Value,
    /// When it was raised.
    pub created_at: String,
}

/// `GET /api/platform`: which payment platform takes the payments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformInfo {
    /// `sandbox` (the in-process simulator: no money moves) or `remote`.
    pub platform: String,
    /// True for the sandbox, so a page can mark itself as one.
    pub sandbox: bool,
}
