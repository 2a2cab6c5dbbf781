//! The order state machine: `PENDING -> PAID`, `PENDING -> FAILED` or
//! `PENDING -> CLOSED` (expired unpaid), and `PAID -> REFUNDED` once refunds
//! gave the whole charge back; nothing else.
//!
//! ```text
//! PENDING ──> PAID ──> REFUNDED
//!    ├──────> FAILED
//!    └──────> CLOSED
//! ```
//!
//! The backend's SQL mirrors this rule with conditional updates
//! (`UPDATE orders ... WHERE order_no = $1 AND status = 'PENDING'`); the
//! database CHECK constraint spells the states exactly as [`OrderStatus::as_str`].

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where an order stands. Spelled the same on the wire and in the database.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderStatus {
    /// Created and not yet settled: the only state a payment can start from.
    Pending,
    /// Charged exactly once. Settled; only refunds move it on (to `REFUNDED`).
    Paid,
    /// Will never be charged. Final.
    Failed,
    /// Expired before it was paid; will never be charged. Final.
    Closed,
    /// Charged once, then given back in full by refunds. Final.
    Refunded,
}

impl OrderStatus {
    /// Every state, in declaration order.
    pub const ALL: [OrderStatus; 5] = [
        Self::Pending,
        Self::Paid,
        Self::Failed,
        Self::Closed,
        Self::Refunded,
    ];

    /// The spelling used on the wire and in the `orders.status` column.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Paid => "PAID",
            Self::Failed => "FAILED",
            Self::Closed => "CLOSED",
            Self::Refunded => "REFUNDED",
        }
    }

    /// Settled: the payment's outcome is decided and no payment can start or
    /// be charged any more (every state but `PENDING`). A PAID order may still
    /// be refunded.
    pub const fn is_final(self) -> bool {
        !matches!(self, Self::Pending)
    }

    /// Nothing will ever change it again.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Failed | Self::Closed | Self::Refunded)
    }
}

impl fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text was not one of `PENDING`, `PAID`, `FAILED`, `CLOSED`, `REFUNDED`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown order status {0:?}")]
pub struct UnknownStatus(pub String);

impl FromStr for OrderStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_status() -> impl Strategy<Value = OrderStatus> {
        prop::sample::select(OrderStatus::ALL.to_vec())
    }

    #[test]
    fn wire_spelling_matches_the_database_spelling() {
        for status in OrderStatus::ALL {
            let json = serde_json::to_string(&status).expect("serialises");
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
    }

    proptest! {
        #[test]
        fn parsing_round_trips(status in any_status()) {
            prop_assert_eq!(status.as_str().parse::<OrderStatus>(), Ok(status));
        }

        #[test]
        fn parsing_rejects_other_text(text in "[a-zA-Z_]{0,10}") {
            let known = OrderStatus::ALL.iter().any(|s| s.as_str() == text);
            prop_assert_eq!(text.parse::<OrderStatus>().is_ok(), known);
        }
    }
}
