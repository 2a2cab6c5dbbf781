//! The payment attempt state machine: what we know of one hand-over to the
//! payment platform.
//!
//! ```text
//! CREATED ──> SUBMITTED ──> SUCCEEDED | FAILED | CLOSED
//!    │            │ ^
//!    │            v │
//!    └──────> UNKNOWN ────> SUCCEEDED | FAILED | CLOSED
//! ```
//! - `CREATED`: committed by the pay that won its request token, not yet handed over;
//! - `SUBMITTED`: the platform accepted it;
//! - `UNKNOWN`: the hand-over's answer was lost (timeout, 5xx, a platform that
//!   died with the process). Never a failure and never a reason for a second
//!   payment: it is handed over again with the same idempotency key, and the
//!   platform's answer (a re-send, a callback, a query) settles it;
//! - `SUCCEEDED`, `FAILED`, `CLOSED`: final, matching the order.
//!
//! A result can arrive before we have recorded the hand-over (the platform's
//! callback races our own bookkeeping), so every open state may move straight
//! to a final one (`checkout_rules::state::attempt_may_move`). The database's
//! trigger `payment_attempts_status_transition` refuses anything else.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a payment attempt stands. Spelled the same on the wire and in the database.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AttemptStatus {
    /// Committed, not yet handed over.
    Created,
    /// The platform accepted it.
    Submitted,
    /// The hand-over's outcome is not known; it will be sent again and settled.
    Unknown,
    /// The platform took the money; the order is PAID. Final.
    Succeeded,
    /// The platform refused it; the order is FAILED. Final.
    Failed,
    /// Closed before it was paid. Final.
    Closed,
}

impl AttemptStatus {
    /// Every state, in declaration order.
    pub const ALL: [AttemptStatus; 6] = [
        Self::Created,
        Self::Submitted,
        Self::Unknown,
        Self::Succeeded,
        Self::Failed,
        Self::Closed,
    ];

    /// The spelling used on the wire and in the `payment_attempts.status` column.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Created => "CREATED",
            Self::Submitted => "SUBMITTED",
            Self::Unknown => "UNKNOWN",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Closed => "CLOSED",
        }
    }

    /// A final state never changes again.
    pub const fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Closed)
    }
}

impl fmt::Display for AttemptStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text was not an attempt status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown attempt status {0:?}")]
pub struct UnknownAttemptStatus(pub String);

impl FromStr for AttemptStatus {
    type Err = UnknownAttemptStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownAttemptStatus(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_status() -> impl Strategy<Value = AttemptStatus> {
        prop::sample::select(AttemptStatus::ALL.to_vec())
    }

    #[test]
    fn wire_spelling_matches_the_database_spelling() {
        for status in AttemptStatus::ALL {
            let json = serde_json::to_string(&status).expect("serialises");
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
    }

    proptest! {
        #[test]
        fn parsing_round_trips(status in any_status()) {
            prop_assert_eq!(status.as_str().parse::<AttemptStatus>(), Ok(status));
        }
    }
}
