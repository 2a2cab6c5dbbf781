//! The fixed sets of names the backend keeps in text columns and the API shows:
//! callback event types, callback outcomes, anomaly kinds and ledger kinds.
//!
//! Each spelling is written once, in the table passed to `text_enum!`, and that
//! one spelling is used on the wire (serde), in the database (the `sqlx` feature)
//! and by [`FromStr`]/`as_str`, so the three can never drift apart. The database
//! CHECK constraints in `migrations/` list the same spellings; the tests below
//! compare them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The text is not one of the spellings of the named set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {set} {text:?}")]
pub struct UnknownName {
    /// Which set was asked for, e.g. `"anomaly kind"`.
    pub set: &'static str,
    /// The text that matched none of its spellings.
    pub text: String,
}

/// Declares an enum whose variants each have one text spelling, with `ALL`,
/// `as_str`, `Display`, `FromStr` and serde all derived from that spelling.
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($set:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        // Written out, not derived: the derive reads `rename = $text` from
        // inside a macro as no rename at all and would describe the variants'
        // Rust names instead of their wire spellings.
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$(Self::$variant),+];

            /// The one spelling, on the wire and in the database.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|value| value.as_str() == s)
                    .ok_or_else(|| UnknownName { set: $set, text: s.to_owned() })
            }
        }
    };
}

text_enum! {
    /// What a payment result callback reports (its `type`, and
    /// `payment_callbacks.event_type` / `callback_deliveries.event_type`).
    pub enum CallbackType ("callback event type") {
        /// The platform took the money.
        PaymentSucceeded = "payment.succeeded",
        /// The platform will not take the money.
        PaymentFailed = "payment.failed",
        /// The platform gave a refund's money back.
        RefundSucceeded = "refund.succeeded",
        /// The platform will not give a refund's money back.
        RefundFailed = "refund.failed",
    }
}

text_enum! {
    /// What became of a callback delivery (`callback_deliveries.outcome`), and
    /// for the first delivery that applied an id, what it did
    /// (`payment_callbacks.outcome`, one of the first five or the last five).
    pub enum CallbackOutcome ("callback outcome") {
        /// A ledger row was written and the order is PAID (a wallet payment's balance deducted).
        Charged = "CHARGED",
        /// A `payment.failed` moved a PENDING order to FAILED.
        OrderFailed = "ORDER_FAILED",
        /// A success arrived but the balance was too low: the order FAILED and an anomaly was raised.
        OrderFailedInsufficientFunds = "ORDER_FAILED_INSUFFICIENT_FUNDS",
        /// Nothing to change and nothing suspicious: the order was already final
        /// (the same payment reported again), or a failure named no payment of ours.
        IgnoredOrderFinal = "IGNORED_ORDER_FINAL",
        /// The order was already final and the combination is suspicious: an anomaly was raised.
        IgnoredAnomaly = "IGNORED_ANOMALY",
        /// The same callback id with the same body again: answered 200, nothing changed.
        Duplicate = "DUPLICATE",
        /// The body names an order we do not have: answered 404.
        OrderNotFound = "ORDER_NOT_FOUND",
        /// Amount or currency differ from the order's: answered 422, anomaly raised.
        AmountMismatch = "AMOUNT_MISMATCH",
        /// A known callback id with another body: answered 409, anomaly raised.
        CallbackConflict = "CALLBACK_CONFLICT",
        /// Signed correctly but not a valid event: answered 400.
        MalformedBody = "MALFORMED_BODY",
        /// A success for an order with no payment attempt: nothing charged, anomaly raised, answered 200.
        IgnoredUnsolicited = "IGNORED_UNSOLICITED",
        /// A success naming another payment than the order's attempt: nothing charged, anomaly raised, answered 200.
        IgnoredReferenceMismatch = "IGNORED_REFERENCE_MISMATCH",
        /// A `refund.succeeded` wrote the REFUND ledger row (and credited the wallet, when it paid).
        Refunded = "REFUNDED",
        /// The platform confirmed a refund failed: its amount is free for another refund.
        RefundFailed = "REFUND_FAILED",
        /// A refund result for a refund already settled, or naming no refund of ours: nothing changed.
        IgnoredRefundSettled = "IGNORED_REFUND_SETTLED",
        /// A `refund.failed` notification for a PENDING refund: nothing is freed
        /// on its word alone; the platform is asked at once, and its answer settles it.
        RefundFailureToConfirm = "REFUND_FAILURE_TO_CONFIRM",
    }
}

text_enum! {
    /// Why a person must review something (`anomalies.kind`).
    pub enum AnomalyKind ("anomaly kind") {
        /// Callback amount or currency differs from the order.
        AmountMismatch = "AMOUNT_MISMATCH",
        /// A success for an order that had already failed: money may have been taken.
        SuccessAfterFailed = "SUCCESS_AFTER_FAILED",
        /// A second success, under a new callback id, for an order already paid.
        SecondSuccessForPaidOrder = "SECOND_SUCCESS_FOR_PAID_ORDER",
        /// A failure for an order we already charged.
        FailureAfterPaid = "FAILURE_AFTER_PAID",
        /// A callback id reused with a different body.
        CallbackConflict = "CALLBACK_CONFLICT",
        /// The platform took the money but the balance here was too low.
        InsufficientFunds = "INSUFFICIENT_FUNDS",
        /// A success for an order that expired and was closed unpaid.
        LateSuccess = "LATE_SUCCESS",
        /// A success for an order we never handed to the platform (no payment attempt).
        UnsolicitedPayment = "UNSOLICITED_PAYMENT",
        /// A success naming another payment than the one we handed over.
        PaymentReferenceMismatch = "PAYMENT_REFERENCE_MISMATCH",
        /// The platform still had no result after every scheduled query.
        StuckPayment = "STUCK_PAYMENT",
        /// A refund result contradicting the one booked before, or naming no refund of the order.
        RefundResultConflict = "REFUND_RESULT_CONFLICT",
        /// A refund the platform refused at hand-over, or an automatic refund that
        /// failed: the money is still with the platform.
        RefundFailed = "REFUND_FAILED",
        /// A signed notification for another merchant or app than ours: refused.
        MerchantMismatch = "MERCHANT_MISMATCH",
        /// The platform's daily bill lists money we never booked.
        MissingInLedger = "MISSING_IN_LEDGER",
        /// We booked money the platform's daily bill does not list.
        MissingInBill = "MISSING_IN_BILL",
        /// The daily bill and we disagree on where a payment or refund stands.
        StateMismatch = "STATE_MISMATCH",
    }
}

text_enum! {
    /// How a row of the platform's daily bill compares with the ledger
    /// (`reconciliation_items.class`). Every class but `MATCHED` is also an
    /// anomaly of the same name.
    pub enum ReconClass ("reconciliation class") {
        /// The bill and the ledger agree: same money, same state.
        Matched = "MATCHED",
        /// The platform collected (or gave back) money we never booked.
        MissingInLedger = "MISSING_IN_LEDGER",
        /// We booked money the platform does not list.
        MissingInBill = "MISSING_IN_BILL",
        /// The same payment or refund with another amount or currency.
        AmountMismatch = "AMOUNT_MISMATCH",
        /// The bill lists it as done while we hold it as closed, failed or pending.
        StateMismatch = "STATE_MISMATCH",
    }
}

impl ReconClass {
    /// The anomaly a row of this class raises; `None` for a match.
    pub const fn anomaly(self) -> Option<AnomalyKind> {
        match self {
            Self::Matched => None,
            Self::MissingInLedger => Some(AnomalyKind::MissingInLedger),
            Self::MissingInBill => Some(AnomalyKind::MissingInBill),
            Self::AmountMismatch => Some(AnomalyKind::AmountMismatch),
            Self::StateMismatch => Some(AnomalyKind::StateMismatch),
        }
    }
}

text_enum! {
    /// What kind of money movement a ledger row is (`payment_ledger.kind`).
    pub enum LedgerKind ("ledger kind") {
        /// Money taken from an account for an order, once per order.
        Charge = "CHARGE",
        /// Money given back to an account, once per refund number.
        Refund = "REFUND",
    }
}

text_enum! {
    /// Whose money a ledger account holds (`ledger_accounts.kind`): the
    /// double-entry books' accounts, one per owner and currency.
    pub enum LedgerAccountKind ("ledger account kind") {
        /// A shopper's stored value: what we owe the shopper.
        Wallet = "WALLET",
        /// What we owe the merchant whose sales these are.
        Merchant = "MERCHANT",
        /// What the payment platform owes us: the money it took for us.
        Clearing = "CLEARING",
        /// Money a platform took that we could not book: ours to give back.
        Suspense = "SUSPENSE",
        /// Where wallet money comes from (opening balances paid in outside the checkout).
        Funding = "FUNDING",
    }
}

text_enum! {
    /// What pays for an order (`payment_attempts.method`; the pay request's
    /// `method`, and `GET /api/platform`'s `methods`).
    pub enum PaymentMethod ("payment method") {
        /// The shopper's stored-value account in the order's currency: pay holds
        /// the amount, the platform's success deducts it once.
        Wallet = "wallet",
        /// The payment platform takes the money from the shopper's own WeChat,
        /// Alipay or card account (or, in the sandbox, its simulated one): no
        /// wallet is involved, nothing is held and no balance is needed.
        Platform = "platform",
    }
}

text_enum! {
    /// Where a refund stands (`refunds.status`).
    pub enum RefundStatus ("refund status") {
        /// Asked for; its amount is reserved on the order until the platform answers.
        Pending = "PENDING",
        /// The platform gave the money back; the account was credited once. Final.
        Succeeded = "SUCCEEDED",
        /// The platform refused it; its amount is free for another refund. Final.
        Failed = "FAILED",
    }
}

text_enum! {
    /// Who asked for a refund (`refunds.requested_by`).
    pub enum RefundRequester ("refund requester") {
        /// The merchant, through `/api/merchant/`.
        Merchant = "merchant",
        /// An operator, through `/api/admin/`.
        Operator = "operator",
        /// The checkout itself: a success it could not book is given back in full.
        Automatic = "automatic",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OrderStatus;
    use serde::de::DeserializeOwned;
    use std::fmt::Debug;

    fn round_trips<T>(all: &[T], as_str: fn(T) -> &'static str)
    where
        T: Copy + Debug + PartialEq + Serialize + DeserializeOwned + FromStr,
        <T as FromStr>::Err: Debug,
    {
        for &value in all {
            let text = as_str(value);
            let json = serde_json::to_string(&value).expect("serialises");
            assert_eq!(json, format!("\"{text}\""), "serde spelling of {value:?}");
            let back: T = serde_json::from_str(&json).expect("deserialises");
            assert_eq!(back, value);
            assert_eq!(text.parse::<T>().ok(), Some(value), "FromStr of {text}");
        }
        assert!("NOT_A_NAME".parse::<T>().is_err());
        assert!(serde_json::from_str::<T>("\"NOT_A_NAME\"").is_err());
    }

    #[test]
    fn every_enum_round_trips_its_wire_spelling() {
        round_trips(CallbackType::ALL, CallbackType::as_str);
        round_trips(CallbackOutcome::ALL, CallbackOutcome::as_str);
        round_trips(AnomalyKind::ALL, AnomalyKind::as_str);
        round_trips(LedgerKind::ALL, LedgerKind::as_str);
        round_trips(RefundStatus::ALL, RefundStatus::as_str);
        round_trips(RefundRequester::ALL, RefundRequester::as_str);
        round_trips(PaymentMethod::ALL, PaymentMethod::as_str);
        round_trips(LedgerAccountKind::ALL, LedgerAccountKind::as_str);
        round_trips(ReconClass::ALL, ReconClass::as_str);
        round_trips(&OrderStatus::ALL, OrderStatus::as_str);
    }

    #[test]
    fn spellings_are_unique_within_each_set() {
        let sets: [Vec<&str>; 5] = [
            ReconClass::ALL.iter().map(|v| v.as_str()).collect(),
            CallbackType::ALL.iter().map(|v| v.as_str()).collect(),
            CallbackOutcome::ALL.iter().map(|v| v.as_str()).collect(),
            AnomalyKind::ALL.iter().map(|v| v.as_str()).collect(),
            LedgerKind::ALL.iter().map(|v| v.as_str()).collect(),
        ];
        for set in sets {
            let mut sorted = set.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), set.len(), "duplicate spelling in {set:?}");
        }
    }

    /// The values of `CHECK (<column> IN (...))` on `table`, as the migrations
    /// leave them: the last `CREATE TABLE` / `ALTER TABLE` statement of that
    /// table that declares such a CHECK wins.
    fn database_check_list(table: &str, column: &str) -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("migrations/ is readable")
            .map(|entry| entry.expect("directory entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sql"))
            .collect();
        files.sort();
        let needle = format!("CHECK ({column} IN (");
        let mut found = None;
        for file in files {
            let text = std::fs::read_to_string(&file).expect("migration is readable");
            let code: String = text
                .lines()
                .map(|line| line.split("--").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            for statement in code.split(';') {
                let statement = statement.trim();
                let about_table = [
                    format!("CREATE TABLE {table} "),
                    format!("ALTER TABLE {table} "),
                ]
                .iter()
                .any(|head| statement.starts_with(head.as_str()));
                let Some(at) = statement.find(&needle).filter(|_| about_table) else {
                    continue;
                };
                let list = &statement[at + needle.len()..];
                let list = &list[..list.find(')').expect("closing parenthesis")];
                found = Some(
                    list.split(',')
                        .map(|item| item.trim().trim_matches('\'').to_owned())
                        .collect(),
                );
            }
        }
        found.unwrap_or_else(|| panic!("no CHECK ({column} IN ...) on {table} in migrations/"))
    }

    fn sorted(mut names: Vec<String>) -> Vec<String> {
        names.sort();
        names
    }

    fn names<T: Copy>(all: &[T], as_str: fn(T) -> &'static str) -> Vec<String> {
        sorted(all.iter().map(|&v| as_str(v).to_owned()).collect())
    }

    #[test]
    fn every_mismatch_class_is_an_anomaly_of_its_own_name() {
        for class in ReconClass::ALL {
            match class.anomaly() {
                None => assert_eq!(*class, ReconClass::Matched),
                Some(kind) => assert_eq!(kind.as_str(), class.as_str()),
            }
        }
    }

    #[test]
    fn each_set_equals_its_database_check_list() {
        assert_eq!(
            names(&OrderStatus::ALL, OrderStatus::as_str),
            sorted(database_check_list("orders", "status"))
        );
        assert_eq!(
            names(CallbackType::ALL, CallbackType::as_str),
            sorted(database_check_list("payment_callbacks", "event_type"))
        );
        assert_eq!(
            names(AnomalyKind::ALL, AnomalyKind::as_str),
            sorted(database_check_list("anomalies", "kind"))
        );
        assert_eq!(
            names(LedgerKind::ALL, LedgerKind::as_str),
            sorted(database_check_list("payment_ledger", "kind"))
        );
        assert_eq!(
            names(RefundStatus::ALL, RefundStatus::as_str),
            sorted(database_check_list("refunds", "status"))
        );
        assert_eq!(
            names(RefundRequester::ALL, RefundRequester::as_str),
            sorted(database_check_list("refunds", "requested_by"))
        );
        assert_eq!(
            names(PaymentMethod::ALL, PaymentMethod::as_str),
            sorted(database_check_list("payment_attempts", "method"))
        );
        assert_eq!(
            names(ReconClass::ALL, ReconClass::as_str),
            sorted(database_check_list("reconciliation_items", "class"))
        );
        assert_eq!(
            names(LedgerAccountKind::ALL, LedgerAccountKind::as_str),
            sorted(database_check_list("ledger_accounts", "kind"))
        );
        // `outcome` columns carry no CHECK: the enum is the only list.
    }
}
