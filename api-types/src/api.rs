//! Request and answer bodies of the HTTP API, exactly as they travel.
//!
//! Timestamps are [`OffsetDateTime`]s that travel as RFC 3339 text (the
//! backend sends UTC), written by `time::serde::rfc3339`: the same text as
//! `OffsetDateTime::format(&Rfc3339)`. The exception is a callback's
//! [`EventTimestamp`], which is whatever the platform sends. Amounts are
//! integer minor units.

pub use crate::enums::CallbackType;
use crate::enums::{AnomalyKind, CallbackOutcome, LedgerKind};
use crate::money::Currency;
use crate::status::OrderStatus;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
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
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
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
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it was charged; null unless PAID.
    // `default`: a missing field reads as null, as it did for `Option<String>`.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub paid_at: Option<OffsetDateTime>,
    /// Why it failed; null unless FAILED.
    pub failure_reason: Option<String>,
}

/// `POST /api/orders/{order_no}/request-token`: a one-time token for one "Pay now".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestToken {
    /// UUID v4, usable once.
    pub request_token: Uuid,
    /// When the token stops being accepted.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
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
    #[serde(with = "time::serde::rfc3339")]
    pub processed_at: OffsetDateTime,
}

/// One received delivery.
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

/// `GET /api/platform`: which payment platform takes the payments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformInfo {
    /// `sandbox` (the in-process simulator: no money moves) or `remote`.
    pub platform: String,
    /// True for the sandbox, so a page can mark itself as one.
    pub sandbox: bool,
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
            failure_reason: None,
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
            r#"{"order_no":"ord_1","account_id":"00000000-0000-0000-0000-000000000000","amount_cents":1250,"currency":"EUR","status":"PAID","created_at":"2025-01-31T14:05:09.123456Z","paid_at":"2025-01-31T16:05:10.5+02:00","failure_reason":null}"#
        );
        let back: Order = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, order);
        assert_eq!(back.paid_at.map(OffsetDateTime::offset), Some(offset!(+2)));
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
