//! The payment platform's side of the contract: what the checkout sends a
//! platform to start, query and close a payment, and what the platform answers.
//! (What the platform sends back on its own, the signed result callback, is
//! [`crate::api::CallbackEvent`].)
//!
//! The checkout's own payment id (the attempt's `payment_id`) travels as the
//! `merchant_reference`: the platform echoes it in every callback and can be
//! asked about a payment by it, even when the answer to the hand-over was lost
//! and the platform's own payment id was never learned.

use crate::Currency;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A payment platform's id for a payment: WeChat Pay's `transaction_id`,
/// Alipay's `trade_no`, the generic protocol's `payment_id`. Never empty.
///
/// Platforms leave the id out until they have one (WeChat Pay and Alipay
/// before the shopper pays), so where it may be missing it is an
/// `Option<PlatformPaymentId>`: a missing id is `None`, never `""`. An empty
/// id recorded as if it were one would later name "another payment" than
/// the platform's real one, and the real success would be refused as a
/// `PAYMENT_REFERENCE_MISMATCH` (issue 39). So the constructor and the serde
/// reader both refuse `""`, and the database column has a CHECK to match
/// (`payment_attempts_platform_payment_id_not_empty`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PlatformPaymentId(String);

/// The text offered as a platform payment id was empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a platform payment id is never empty")]
pub struct EmptyPlatformPaymentId;

impl PlatformPaymentId {
    /// The id, or [`EmptyPlatformPaymentId`] for `""`.
    pub fn new(id: impl Into<String>) -> Result<Self, EmptyPlatformPaymentId> {
        let id = id.into();
        if id.is_empty() {
            return Err(EmptyPlatformPaymentId);
        }
        Ok(Self(id))
    }

    /// An optional id as a platform's answer carries it: absent is `None`,
    /// and so is an empty value, which names no payment either.
    pub fn from_optional(id: Option<&str>) -> Option<Self> {
        id.and_then(|id| Self::new(id).ok())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl FromStr for PlatformPaymentId {
    type Err = EmptyPlatformPaymentId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for PlatformPaymentId {
    type Error = EmptyPlatformPaymentId;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl TryFrom<&str> for PlatformPaymentId {
    type Error = EmptyPlatformPaymentId;

    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<PlatformPaymentId> for String {
    fn from(value: PlatformPaymentId) -> Self {
        value.0
    }
}

impl AsRef<str> for PlatformPaymentId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PlatformPaymentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for PlatformPaymentId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for PlatformPaymentId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for PlatformPaymentId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for PlatformPaymentId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .min_length(Some(1))
            .description(Some(
                "The payment platform's id for the payment; never empty",
            ))
            .examples(["4200000991202612036853086457"])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for PlatformPaymentId {}

/// `POST /v1/payments` body (with an `Idempotency-Key` header): what the
/// merchant asks the platform to charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatePayment {
    /// The merchant's order number, echoed in the callback.
    pub order_no: String,
    /// Amount in minor units; positive.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where result callbacks are posted.
    pub notify_url: String,
    /// The merchant's id for this payment (the checkout's attempt id), echoed in
    /// every callback and usable to query or close the payment. Optional on the
    /// wire for merchants that only know the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant_reference: Option<String>,
}

/// Where a payment stands at the platform, spelled as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentStatus {
    /// Accepted; the outcome is not decided yet.
    Processing,
    /// The money was taken.
    Succeeded,
    /// The money will not be taken.
    Failed,
    /// Closed by the merchant before it was decided: the money will not be taken.
    Closed,
}

impl PaymentStatus {
    /// True once the platform will not change its mind.
    pub const fn is_final(self) -> bool {
        !matches!(self, Self::Processing)
    }
}

/// What a platform says about one payment when asked (`GET` by reference or
/// id) or when told to close it. Unknown fields are ignored, so a platform's
/// fuller answer (the simulator adds its callbacks) reads as this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentState {
    /// The platform's payment id, when it has given the payment one: WeChat
    /// Pay and Alipay name none before the shopper pays. Absent or `null` on
    /// the wire is `None`; an empty string is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<PlatformPaymentId>,
    /// The merchant's order number.
    pub order_no: String,
    /// The merchant's id for the payment, when it gave one.
    #[serde(default)]
    pub merchant_reference: Option<String>,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where it stands.
    pub status: PaymentStatus,
}

/// The error code a platform answers a close with when the payment was
/// already paid (409): the merchant must treat the payment as a success.
pub const ALREADY_PAID: &str = "PAYMENT_ALREADY_SUCCEEDED";

/// `POST /v1/refunds` body (with the refund number as `Idempotency-Key`): give
/// part or all of a succeeded payment back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateRefund {
    /// The platform's id of the payment to refund.
    pub payment_id: String,
    /// The merchant's refund number, echoed in the refund's callbacks.
    pub refund_no: String,
    /// Amount to give back, in minor units; positive.
    pub amount_cents: i64,
    /// ISO 4217 code; the payment's.
    pub currency: Currency,
    /// Where the refund's result callbacks are posted.
    pub notify_url: String,
}

/// Where a refund stands at the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundStatus {
    /// Accepted; not decided yet.
    Processing,
    /// The money was given back.
    Succeeded,
    /// The money will not be given back.
    Failed,
}

/// What a platform says about one refund (`POST /v1/refunds`, `GET
/// /v1/refunds/by-reference/{refund_no}`). Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundState {
    /// The platform's id for the refund.
    pub refund_id: String,
    /// The payment refunded.
    pub payment_id: String,
    /// The merchant's refund number.
    pub refund_no: String,
    /// Amount in minor units.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: Currency,
    /// Where it stands.
    pub status: RefundStatus,
}

/// The error code a platform answers a refund with when the payment's
/// refunds would exceed what it took (422).
pub const REFUND_EXCEEDS_PAYMENT: &str = "REFUND_EXCEEDS_PAYMENT";

/// The columns of a daily bill (`GET /v1/bills/{date}`, CSV with one header
/// line), in order: a subset of a WeChat Pay trade bill's, in its order. The
/// platform writes them and the checkout's reconciliation reads them.
pub const BILL_COLUMNS: [&str; 12] = [
    "trade_time",
    "transaction_id",
    "out_trade_no",
    "trade_state",
    "currency",
    "amount",
    "refund_id",
    "out_refund_no",
    "refund_amount",
    "refund_state",
    "fee",
    "rate",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn state_json(payment_id: serde_json::Value) -> serde_json::Value {
        let mut state = serde_json::json!({
            "order_no": "ord_1",
            "merchant_reference": "2f7c",
            "amount_cents": 1250,
            "currency": "CNY",
            "status": "PROCESSING",
        });
        state["payment_id"] = payment_id;
        state
    }

    #[test]
    fn a_platform_payment_id_is_never_empty() {
        assert_eq!(PlatformPaymentId::new(""), Err(EmptyPlatformPaymentId));
        assert_eq!("".parse::<PlatformPaymentId>(), Err(EmptyPlatformPaymentId));
        assert_eq!(
            PlatformPaymentId::try_from(String::new()),
            Err(EmptyPlatformPaymentId)
        );
        let id = PlatformPaymentId::new("4200000991202612036853086457").expect("an id");
        assert_eq!(id.as_str(), "4200000991202612036853086457");
        assert_eq!(id, "4200000991202612036853086457");
    }

    #[test]
    fn an_empty_platform_payment_id_does_not_deserialise() {
        assert!(serde_json::from_str::<PlatformPaymentId>(r#""""#).is_err());
        let id: PlatformPaymentId = serde_json::from_str(r#""pay_1""#).expect("an id");
        assert_eq!(id, "pay_1");
        assert_eq!(
            serde_json::to_string(&id).expect("serialises"),
            r#""pay_1""#
        );
    }

    #[test]
    fn an_absent_optional_id_is_none_and_never_empty() {
        assert_eq!(PlatformPaymentId::from_optional(None), None);
        assert_eq!(PlatformPaymentId::from_optional(Some("")), None);
        assert_eq!(
            PlatformPaymentId::from_optional(Some("2026120322001400000000000001")),
            PlatformPaymentId::new("2026120322001400000000000001").ok()
        );
    }

    #[test]
    fn a_payment_state_without_a_platform_id_reads_as_none() {
        let mut absent = state_json(serde_json::Value::Null);
        absent
            .as_object_mut()
            .expect("an object")
            .remove("payment_id");
        let state: PaymentState = serde_json::from_value(absent).expect("absent is None");
        assert_eq!(state.payment_id, None);
        // And is written without one, as before.
        let written = serde_json::to_value(&state).expect("serialises");
        assert!(written.get("payment_id").is_none(), "{written}");

        let null: PaymentState =
            serde_json::from_value(state_json(serde_json::Value::Null)).expect("null is None");
        assert_eq!(null.payment_id, None);

        let empty = serde_json::from_value::<PaymentState>(state_json("".into()));
        assert!(empty.is_err(), "an empty id was accepted: {empty:?}");

        let named: PaymentState =
            serde_json::from_value(state_json("pay_1".into())).expect("an id");
        assert_eq!(named.payment_id, PlatformPaymentId::new("pay_1").ok());
    }
}
