//! Request and answer bodies of the HTTP API, exactly as they travel.
//!
//! Timestamps are [`OffsetDateTime`]s that travel as RFC 3339 text (the
//! backend sends UTC), written by `time::serde::rfc3339`: the same text as
//! `OffsetDateTime::format(&Rfc3339)`. The exception is a callback's
//! [`EventTimestamp`], which is whatever the platform sends. Amounts are
//! integer minor units.

pub use crate::enums::CallbackType;
use crate::enums::{AnomalyKind, CallbackOutcome, LedgerKind, ReconClass};
use crate::money::Currency;
use crate::platform::PlatformPaymentId;
use crate::status::OrderStatus;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// `GET /healthz`: each part is `"ok"` or `"down"`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// PostgreSQL.
    pub database: String,
    /// Redis (the request-token store).
    pub redis: String,
}

/// `GET /readyz`: `"ready"` (send requests here) or `"draining"` (SIGTERM
/// arrived: finish what was sent, send nothing new).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// `ready` or `draining`.
    pub status: String,
}

/// `PUT /api/admin/products/{sku}`: a product's name and price.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductPrice {
    /// What a shopper sees; 1 to 200 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub name: String,
    /// Unit price in minor units; positive.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub price_cents: i64,
    /// Currency of the price.
    pub currency: Currency,
}

/// An account, as `GET /api/me` lists it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountDetails {
    /// The account's id.
    pub account_id: Uuid,
    /// Current balance in minor units.
    pub balance_cents: i64,
    /// Balance when the account was opened; minus the sum of charges, it is the current balance.
    pub opening_balance_cents: i64,
    /// Held for payments in flight: the balance minus this is what can be spent.
    pub held_cents: i64,
    /// The account's currency.
    pub currency: Currency,
    /// Ledger rows, oldest first.
    pub ledger: Vec<LedgerEntry>,
}

/// One money movement, written by exactly one callback.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// `POST /api/admin/shoppers`: a shopper with one account.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateShopper {
    /// Sign-in name; unique whatever its case.
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^[^@\\s]+@[^@\\s]+$", max_length = 254)
    )]
    pub email: String,
    /// 15 to 256 characters of any kind, not a common or breached password
    /// nor one made from the email or the product's name (else 400
    /// `BAD_REQUEST` saying why); stored only as an argon2id hash.
    #[cfg_attr(feature = "openapi", schema(min_length = 15, max_length = 256))]
    pub password: String,
    /// Opening balance of the shopper's wallet, in minor units; not negative.
    /// Absent: 0, a shopper who pays through the platform only.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    #[serde(default)]
    pub balance_cents: i64,
    /// The account's currency.
    pub currency: Currency,
}

impl std::fmt::Debug for CreateShopper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateShopper")
            .field("email", &self.email)
            .field("password", &"[redacted]")
            .field("balance_cents", &self.balance_cents)
            .field("currency", &self.currency)
            .finish()
    }
}

/// The 201 answer to `POST /api/admin/shoppers`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopperCreated {
    /// The new shopper.
    pub shopper_id: Uuid,
    /// The shopper's account in the requested currency.
    pub account_id: Uuid,
}

/// `POST /api/session`: sign in.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignIn {
    /// The shopper's email.
    pub email: String,
    /// The shopper's password.
    pub password: String,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("email", &self.email)
            .field("password", &"[redacted]")
            .finish()
    }
}

/// The 200 answer to `POST /api/session` (with the session cookie).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Who is signed in.
    pub shopper_id: Uuid,
    /// Their email.
    pub email: String,
}

/// `GET /api/me`: the signed-in shopper and their accounts.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Me {
    /// Who is signed in.
    pub shopper_id: Uuid,
    /// Their email.
    pub email: String,
    /// One account per currency.
    pub accounts: Vec<Account>,
}

/// One entry of `GET /api/products`, the catalogue.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Product {
    /// Stock-keeping unit: the product's id.
    pub sku: String,
    /// What a shopper sees.
    pub name: String,
    /// Unit price in minor units.
    pub price_cents: i64,
    /// Currency of the price.
    pub currency: Currency,
}

/// `POST /api/orders` (with an `Idempotency-Key` header): buy `quantity` of a
/// product at the catalogue's price, on the signed-in shopper's account.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateOrder {
    /// The product.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub sku: String,
    /// How many, 1 to 100.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub quantity: u32,
}

/// `POST /api/merchant/orders` (Bearer `MERCHANT_API_KEY`, with an
/// `Idempotency-Key` header): an order a merchant's own shop priced.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateMerchantOrder {
    /// The shopper who will pay it.
    pub shopper_id: Uuid,
    /// Amount in minor units; positive.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub amount_cents: i64,
    /// The currency of one of the shopper's accounts.
    pub currency: Currency,
    /// What is being bought, shown to the shopper; 1 to 500 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 500))]
    pub description: String,
    /// The merchant's own id for the order (1 to 64 characters, no control
    /// characters, no spaces at either end; unique per merchant), so it can
    /// find ours by its own; `409 MERCHANT_REFERENCE_IN_USE` when another of
    /// its orders has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub merchant_reference: Option<String>,
    /// Where the payment page sends the shopper once the order is final, with
    /// `order_no` and `status` appended: `https` (or `http` on a loopback
    /// host), its origin one of the merchant's `return_origins`, else `422
    /// RETURN_URL_NOT_ALLOWED`. The return proves nothing: read the order
    /// before shipping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 2048))]
    pub return_url: Option<String>,
    /// Where the page sends a shopper who gives up, with `order_no` appended;
    /// the same rules as `return_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 2048))]
    pub cancel_url: Option<String>,
}

/// An order, as answered by `POST /api/orders` and `GET /api/orders/{order_no}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it was charged; null unless PAID.
    // `default`: a missing field reads as null, as it did for `Option<String>`.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub paid_at: Option<OffsetDateTime>,
    /// When it stops being payable; an unpaid order is CLOSED after this.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Why it failed; null unless FAILED.
    pub failure_reason: Option<String>,
    /// What is being bought.
    #[serde(default)]
    pub description: Option<String>,
    /// Where the shopper pays it: the payment page of this order.
    #[serde(default)]
    pub pay_url: String,
    /// Where its payment stands with the platform; null until a pay started
    /// one. `UNKNOWN` while the hand-over's answer was lost and the platform is
    /// being asked: the page says it is confirming, never that it failed.
    #[serde(default)]
    pub payment_status: Option<crate::AttemptStatus>,
    /// What pays for it, `wallet` or `platform`: the method of its payment
    /// attempt; null until a pay started one.
    #[serde(default)]
    pub payment_method: Option<crate::PaymentMethod>,
    /// What refunds gave back so far, in minor units.
    #[serde(default)]
    pub refunded_cents: i64,
    /// The merchant's name, for "Return to {name}", when the order has a
    /// `return_url` or `cancel_url`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant_name: Option<String>,
    /// Where the page sends the shopper once the order is final (with
    /// `order_no` and `status` appended); absent: no way back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_url: Option<String>,
    /// Where the page sends a shopper who gives up (with `order_no` appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_url: Option<String>,
}

/// `POST /api/merchant/orders/{order_no}/refunds` (and the operator's
/// `/api/admin/...`) body, with an `Idempotency-Key`: give part or all of a
/// paid order's charge back.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRefund {
    /// Amount to give back, in the order's minor units; positive. With the
    /// order's pending and succeeded refunds it may not exceed the charge.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub amount_cents: i64,
    /// Why, for the shopper and the books; 1 to 500 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 500))]
    pub reason: String,
}

/// A refund, as answered by the refund routes and shown on the receipt.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refund {
    /// Our refund number (`rfd_<32 hex>`), the platform's idempotency key for it.
    pub refund_no: String,
    /// The order refunded.
    pub order_no: String,
    /// Amount given back, in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// Where it stands.
    pub status: crate::RefundStatus,
    /// Why.
    pub reason: String,
    /// Who asked: the merchant, an operator, or the checkout itself
    /// (`automatic`: a payment it could not book, given back in full).
    #[serde(default = "merchant")]
    pub requested_by: crate::RefundRequester,
    /// Why the platform refused it outright; null unless FAILED that way.
    #[serde(default)]
    pub failure_reason: Option<String>,
    /// When it was asked for.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When the platform's answer settled it; null while PENDING.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub settled_at: Option<OffsetDateTime>,
}

const fn merchant() -> crate::RefundRequester {
    crate::RefundRequester::Merchant
}

/// `POST /api/orders/{order_no}/request-token`: a one-time token for one "Pay now".
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestToken {
    /// UUID v4, usable once.
    pub request_token: Uuid,
    /// When the token stops being accepted.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// `POST /api/orders/{order_no}/pay`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayRequest {
    /// The token from `request-token`.
    pub request_token: Uuid,
    /// What pays: `wallet` or `platform`, one of `GET /api/platform`'s
    /// `methods` (else 422 `PAYMENT_METHOD_UNAVAILABLE`, nothing changed).
    /// Absent: `wallet` under the sandbox, `platform` under every real platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<crate::PaymentMethod>,
}

/// The 202 answer to a pay request; replayed unchanged for the same token.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayAccepted {
    /// The order being paid.
    pub order_no: String,
    /// Our id of the payment attempt.
    pub payment_id: Uuid,
    /// The order's status when the attempt was accepted: `PENDING`.
    pub status: OrderStatus,
    /// What pays for the order: the method of its one payment attempt (a
    /// second submit for the order, with another token, joins that attempt
    /// whatever method it named).
    #[serde(default = "wallet")]
    pub method: crate::PaymentMethod,
}

/// What a pay accepted before payment methods existed was paid with.
const fn wallet() -> crate::PaymentMethod {
    crate::PaymentMethod::Wallet
}

/// The event time inside a callback body: RFC 3339 text or Unix seconds.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EventTimestamp {
    /// RFC 3339 text.
    Text(String),
    /// Seconds since the Unix epoch.
    Unix(i64),
}

/// `POST /api/payments/callback` body (Standard Webhooks payload).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackData {
    /// Our order number.
    pub order_no: String,
    /// Amount the platform took, in minor units.
    pub amount_cents: i64,
    /// Currency of the amount.
    pub currency: Currency,
    /// The platform's payment id (never empty: a result names the payment it is about).
    pub payment_id: PlatformPaymentId,
    /// The checkout's payment id (the attempt) the platform was handed, echoed
    /// back. When present it must name the order's attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant_reference: Option<String>,
    /// For `refund.*` events: our refund number (the refund's idempotency key at the platform).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_no: Option<String>,
    /// For `refund.*` events: the platform's id for the refund.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_id: Option<String>,
}

/// The 200 answer to a callback, applied or duplicate: the platform may stop retrying.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackAck {
    /// Always `SUCCESS`.
    pub code: String,
    /// True when this callback id had already been processed.
    pub duplicate: bool,
}

/// `GET /api/admin/callbacks/{callback_id}`: everything that happened to one callback id.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[serde(with = "time::serde::rfc3339")]
    pub processed_at: OffsetDateTime,
}

/// One received delivery.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackDelivery {
    /// What became of it: `CHARGED`, `DUPLICATE`, `AMOUNT_MISMATCH`, `ORDER_NOT_FOUND`, ...
    pub outcome: CallbackOutcome,
    /// What we answered.
    pub http_status: u16,
    /// When it arrived.
    #[serde(with = "time::serde::rfc3339")]
    pub received_at: OffsetDateTime,
}

/// Something a person must review.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// `GET /api/admin/reconciliations/{date}`: how the platform's bill of a UTC
/// day compared with the ledger.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconciliation {
    /// The bill's day, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// When the date was reconciled; null when it has not been yet.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub reconciled_at: Option<OffsetDateTime>,
    /// Rows the bill had when the date was reconciled; null when it has not been yet.
    pub bill_rows: Option<i32>,
    /// How many rows fell into each class (every class is listed, 0 included).
    pub counts: Vec<ReconCount>,
    /// Every row, mismatches first, then by key.
    pub items: Vec<ReconItem>,
}

/// How many rows of a reconciliation fell into one class.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconCount {
    /// The class.
    pub class: ReconClass,
    /// Its rows.
    pub count: i64,
}

/// One row of a reconciliation: a bill row, or a ledger row the bill lacks.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReconItem {
    /// `payment:<platform payment id>` or `refund:<refund number>`.
    pub row_key: String,
    /// How it compared.
    pub class: ReconClass,
    /// The order concerned.
    pub order_no: String,
    /// What the bill said; null when the bill lacks the row.
    pub bill: Option<serde_json::Value>,
    /// What we hold; null when we hold nothing.
    pub ledger: Option<serde_json::Value>,
}

/// `GET /api/platform`: which payment platform takes the payments.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformInfo {
    /// `sandbox` (the in-process simulator: no money moves), `remote`, `wechatpay` or `alipay`.
    pub platform: String,
    /// True for the sandbox, so a page can mark itself as one.
    pub sandbox: bool,
    /// True when the shopper pays by scanning the platform's QR code (WeChat
    /// Pay, Alipay): the payment page shows `/api/orders/{order_no}/payment-code.svg`.
    #[serde(default)]
    pub pays_by_qr_code: bool,
    /// The payment methods a pay may name, the default first: `wallet` and
    /// `platform` in the sandbox (its simulated platform charges no wallet),
    /// `platform` alone under a real platform.
    #[serde(default = "wallet_only")]
    pub methods: Vec<crate::PaymentMethod>,
    /// The demo shoppers' sign-in details, for the sign-in page: only in a
    /// sandbox running in demo mode, empty everywhere else.
    #[serde(default)]
    pub demo_shoppers: Vec<DemoShopper>,
}

/// What a backend that predates payment methods offered.
fn wallet_only() -> Vec<crate::PaymentMethod> {
    vec![crate::PaymentMethod::Wallet]
}

/// A demo shopper anybody may sign in as (sandbox demo mode only).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoShopper {
    /// Sign-in email.
    pub email: String,
    /// Sign-in password (public: the sandbox moves no money).
    pub password: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::format_description::well_known::Rfc3339;
    use time::macros::{datetime, offset};

    /// What the backend put in the `String` fields before they were typed.
    fn old_text(at: OffsetDateTime) -> String {
        at.format(&Rfc3339).expect("formats")
    }

    /// `value`'s field `name` as JSON, after checking `value` survives a round trip.
    fn wire_field<T>(value: &T, name: &str) -> serde_json::Value
    where
        T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let json = serde_json::to_string(value).expect("serialises");
        let back: T = serde_json::from_str(&json).expect("parses");
        assert_eq!(&back, value);
        let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        json[name].clone()
    }

    fn order(created_at: OffsetDateTime, paid_at: Option<OffsetDateTime>) -> Order {
        Order {
            order_no: "ord_1".into(),
            account_id: Uuid::nil(),
            amount_cents: 1_250,
            currency: "EUR".parse().expect("valid currency"),
            status: OrderStatus::Paid,
            created_at,
            paid_at,
            expires_at: datetime!(2025-01-31 14:35:09 UTC),
            failure_reason: None,
            description: None,
            pay_url: "http://127.0.0.1:3000/pay/ord_1".into(),
            payment_status: Some(crate::AttemptStatus::Succeeded),
            payment_method: Some(crate::PaymentMethod::Wallet),
            refunded_cents: 0,
            merchant_name: None,
            return_url: None,
            cancel_url: None,
        }
    }

    #[test]
    fn an_order_serialises_byte_for_byte_as_before_and_round_trips() {
        let created_at = datetime!(2025-01-31 14:05:09.123456 UTC);
        let paid_at = datetime!(2025-01-31 16:05:10.5 +02:00);
        let order = order(created_at, Some(paid_at));

        let json = serde_json::to_string(&order).expect("serialises");

        assert_eq!(old_text(created_at), "2025-01-31T14:05:09.123456Z");
        assert_eq!(old_text(paid_at), "2025-01-31T16:05:10.5+02:00");
        assert_eq!(
            json,
            r#"{"order_no":"ord_1","account_id":"00000000-0000-0000-0000-000000000000","amount_cents":1250,"currency":"EUR","status":"PAID","created_at":"2025-01-31T14:05:09.123456Z","paid_at":"2025-01-31T16:05:10.5+02:00","expires_at":"2025-01-31T14:35:09Z","failure_reason":null,"description":null,"pay_url":"http://127.0.0.1:3000/pay/ord_1","payment_status":"SUCCEEDED","payment_method":"wallet","refunded_cents":0}"#
        );
        let back: Order = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, order);
        assert_eq!(back.paid_at.map(OffsetDateTime::offset), Some(offset!(+2)));
    }

    #[test]
    fn a_pay_request_names_a_method_or_none_and_nothing_else() {
        let token = Uuid::nil();
        let none: PayRequest =
            serde_json::from_value(serde_json::json!({"request_token": token})).expect("parses");
        assert_eq!(none.method, None);
        assert_eq!(
            serde_json::to_value(&none).expect("serialises"),
            serde_json::json!({"request_token": token})
        );
        let platform: PayRequest = serde_json::from_value(
            serde_json::json!({"request_token": token, "method": "platform"}),
        )
        .expect("parses");
        assert_eq!(platform.method, Some(crate::PaymentMethod::Platform));
        for bad in ["card", "Wallet", "", "WALLET"] {
            assert!(
                serde_json::from_value::<PayRequest>(
                    serde_json::json!({"request_token": token, "method": bad})
                )
                .is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn answers_from_before_payment_methods_read_as_the_wallet() {
        let accepted: PayAccepted = serde_json::from_value(serde_json::json!(
            {"order_no": "ord_1", "payment_id": Uuid::nil(), "status": "PENDING"}
        ))
        .expect("parses");
        assert_eq!(accepted.method, crate::PaymentMethod::Wallet);
        let info: PlatformInfo =
            serde_json::from_value(serde_json::json!({"platform": "sandbox", "sandbox": true}))
                .expect("parses");
        assert_eq!(info.methods, vec![crate::PaymentMethod::Wallet]);
    }

    #[test]
    fn an_unpaid_order_has_a_null_paid_at_and_reads_one_that_is_missing() {
        let order = order(datetime!(2025-01-31 14:00:00 UTC), None);

        let json = serde_json::to_value(&order).expect("serialises");

        assert_eq!(json["created_at"], "2025-01-31T14:00:00Z");
        assert_eq!(json["paid_at"], serde_json::Value::Null);
        let mut without = json.clone();
        without.as_object_mut().expect("object").remove("paid_at");
        let back: Order = serde_json::from_value(without).expect("parses");
        assert_eq!(back, order);
    }

    #[test]
    fn every_timestamp_field_travels_as_the_old_rfc3339_text() {
        // Nanoseconds, as `now_utc()` gives for a token's expiry.
        let at = datetime!(2025-01-31 14:15:00.123456789 UTC);
        let text = serde_json::Value::from(old_text(at));
        let token = RequestToken {
            request_token: Uuid::nil(),
            expires_at: at,
        };
        let entry = LedgerEntry {
            callback_id: "cb_1".into(),
            order_no: "ord_1".into(),
            amount_cents: 1,
            currency: "EUR".parse().expect("valid currency"),
            kind: LedgerKind::Charge,
            payment_id: "pay_1".into(),
            created_at: at,
        };
        let processed = ProcessedCallback {
            event_type: CallbackType::PaymentSucceeded,
            order_no: "ord_1".into(),
            payment_id: "pay_1".into(),
            outcome: CallbackOutcome::Charged,
            processed_at: at,
        };
        let delivery = CallbackDelivery {
            outcome: CallbackOutcome::Charged,
            http_status: 200,
            received_at: at,
        };
        let anomaly = Anomaly {
            callback_id: "cb_1".into(),
            order_no: "ord_1".into(),
            kind: AnomalyKind::AmountMismatch,
            details: serde_json::json!({}),
            created_at: at,
        };

        assert_eq!(text, "2025-01-31T14:15:00.123456789Z");
        assert_eq!(wire_field(&token, "expires_at"), text);
        assert_eq!(wire_field(&entry, "created_at"), text);
        assert_eq!(wire_field(&processed, "processed_at"), text);
        assert_eq!(wire_field(&delivery, "received_at"), text);
        assert_eq!(wire_field(&anomaly, "created_at"), text);
    }
}
