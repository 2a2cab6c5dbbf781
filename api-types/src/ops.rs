//! The operator console's API (`/api/ops/*`): the operator's session, the
//! anomalies queue, an order's timeline, search, the last hour's activity, the
//! books' balances.
//! Timestamps travel as RFC 3339 text, amounts as integer minor units.

use crate::enums::{AnomalyKind, LedgerAccountKind};
use crate::money::Currency;
use crate::status::OrderStatus;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// `POST /api/ops/session`: the admin token, exchanged for an operator session.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorSignIn {
    /// The backend's `ADMIN_TOKEN`.
    pub admin_token: String,
    /// Who is signing in (1 to 64 characters): kept with every anomaly they resolve.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub name: String,
}

/// The token never shows in a log line or a panic message.
impl std::fmt::Debug for OperatorSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorSignIn")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// `GET /api/ops/me`, and the answer to a sign-in: who the session belongs to.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorInfo {
    /// The name given at sign-in.
    pub operator: String,
}

/// An anomaly in the review queue, with its resolution once resolved.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewAnomaly {
    /// Its number.
    pub anomaly_id: i64,
    /// The callback (or `query:...`, `reconcile:...` key) that raised it.
    pub callback_id: String,
    /// The order concerned.
    pub order_no: String,
    /// Why it needs a person.
    pub kind: AnomalyKind,
    /// The facts behind it.
    pub details: serde_json::Value,
    /// When it was raised.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it was resolved; null while open.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub resolved_at: Option<OffsetDateTime>,
    /// Who resolved it.
    pub resolved_by: Option<String>,
    /// What they wrote.
    pub resolution_note: Option<String>,
}

/// `POST /api/ops/anomalies/{anomaly_id}/resolve`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolveAnomaly {
    /// What was found and done (1 to 2000 characters).
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 2000))]
    pub note: String,
}

/// Which anomalies a queue shows.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnomalyState {
    /// Not resolved yet (the default).
    #[default]
    Open,
    /// Resolved.
    Resolved,
    /// Both.
    All,
}

/// What happened to an order, in time order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderTimeline {
    /// The order now.
    pub order: OpsOrder,
    /// Everything that happened to it, oldest first.
    pub events: Vec<TimelineEvent>,
}

/// An order as the operator sees it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpsOrder {
    /// Its number.
    pub order_no: String,
    /// The shopper's email.
    pub shopper_email: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// Its currency.
    pub currency: Currency,
    /// Where it stands.
    pub status: OrderStatus,
    /// Refunded so far, in minor units.
    pub refunded_cents: i64,
    /// When it was placed.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// What kind of thing a timeline event is.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineKind {
    /// The order was placed.
    OrderPlaced,
    /// A request token was issued (a page load).
    TokenIssued,
    /// A payment attempt was created by the winning pay.
    AttemptCreated,
    /// The attempt was handed to the platform.
    AttemptSubmitted,
    /// The platform was asked where the payment stands.
    Query,
    /// A callback delivery, with our answer.
    Delivery,
    /// A ledger row (a charge or a refund).
    Ledger,
    /// A refund was asked for, or settled.
    Refund,
    /// An anomaly was raised (or resolved).
    Anomaly,
    /// The order reached its final state.
    OrderFinal,
}

/// One thing that happened to an order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEvent {
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// What kind of thing.
    pub kind: TimelineKind,
    /// One line for people, e.g. `delivery cb_123: DUPLICATE, answered 200`.
    pub title: String,
    /// The facts (ids, amounts, statuses).
    pub details: serde_json::Value,
}

/// One order a search found, and what matched.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The order.
    pub order: OpsOrder,
    /// `order_no`, `callback_id`, `payment_id`, `shopper_email`, or `merchant`
    /// (a merchant's orders listed without a search text).
    pub matched_by: String,
}

/// `GET /api/ops/activity`: the last hour, minute by minute, oldest first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activity {
    /// 60 minutes, the current one last; minutes without traffic are zeros.
    pub minutes: Vec<ActivityMinute>,
}

/// One minute of traffic.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityMinute {
    /// The minute's start (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub minute: OffsetDateTime,
    /// Callback deliveries received (every instance: the delivery log).
    pub deliveries: i64,
    /// Of those, duplicates acknowledged without any change.
    pub duplicates: i64,
    /// Pays that created a payment attempt (every instance).
    pub pays: i64,
    /// Pays answered with a replay of the stored answer (this instance only:
    /// replays change nothing, so nothing of them is written down).
    pub replays: i64,
}

/// `GET /api/ops/books`: every ledger account's balance, read from its
/// entries, the shoppers' wallets summed per currency.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Books {
    /// By currency, then kind (merchant, clearing, suspense, funding, wallets), then owner.
    pub accounts: Vec<LedgerBalance>,
}

/// One line of the books: a ledger account, or every wallet of one currency.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerBalance {
    /// Whose money it is.
    pub kind: LedgerAccountKind,
    /// The owner's name: the merchant's, `platform` (clearing), `checkout`
    /// (suspense, funding), `shoppers` (the wallets); `default` for what the
    /// one merchant held before merchants had accounts of their own.
    pub owner: String,
    /// The account's currency.
    pub currency: Currency,
    /// How many accounts the line sums: 1, or the number of wallets.
    pub accounts: i64,
    /// Every posted entry that took money out.
    pub debits_posted_cents: i64,
    /// Every posted entry that put money in.
    pub credits_posted_cents: i64,
    /// Holds not yet posted or voided (wallets only).
    pub debits_pending_cents: i64,
    /// Credits less debits posted: what the checkout owes the owner; negative
    /// for clearing and funding, whose owners owe the checkout.
    pub balance_cents: i64,
}
