//! The refund rule: what a refund result does to its refund
//! ([`decide_refund`]), decided from the refund as the backend locked it. The
//! backend's `refunds.rs` carries the decision out in the callback's transaction.

use crate::origin::Origin;
use api_types::{AnomalyKind, CallbackOutcome, CallbackType, RefundStatus};

/// What a refund result does to its refund, decided from the refund as locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundDecision {
    /// Book it: ledger row, refunded total, credit.
    Book,
    /// Free its amount: the platform, asked by us, says it will not give it back.
    Release,
    /// A failure only notified: ask the platform at once before freeing anything.
    ConfirmFailure,
    /// Nothing changes; maybe flag it.
    Ignore {
        /// Set when the platform contradicts what it said before.
        anomaly: Option<AnomalyKind>,
    },
}

impl RefundDecision {
    /// The outcome recorded for the callback and its delivery.
    pub const fn outcome(self) -> CallbackOutcome {
        match self {
            Self::Book => CallbackOutcome::Refunded,
            Self::Release => CallbackOutcome::RefundFailed,
            Self::ConfirmFailure => CallbackOutcome::RefundFailureToConfirm,
            Self::Ignore { anomaly: None } => CallbackOutcome::IgnoredRefundSettled,
            Self::Ignore { anomaly: Some(_) } => CallbackOutcome::IgnoredAnomaly,
        }
    }
}

/// The rule, a pure function: only a PENDING refund moves; the same result
/// again is no news; the opposite result after a final one is flagged. A
/// failure frees the refund's amount only when the platform says so in answer
/// to our query: a notified failure is checked first, since freeing money on
/// a false one (a platform that reports a failure and then the success, as
/// out-of-order deliveries do) would let the merchant give it back twice.
pub fn decide_refund(kind: CallbackType, status: RefundStatus, origin: Origin) -> RefundDecision {
    match (kind, status) {
        (CallbackType::RefundSucceeded, RefundStatus::Pending) => RefundDecision::Book,
        (CallbackType::RefundFailed, RefundStatus::Pending) => match origin {
            Origin::QueryAnswer => RefundDecision::Release,
            Origin::Notification => RefundDecision::ConfirmFailure,
        },
        (CallbackType::RefundSucceeded, RefundStatus::Succeeded)
        | (CallbackType::RefundFailed, RefundStatus::Failed) => {
            RefundDecision::Ignore { anomaly: None }
        }
        (CallbackType::RefundSucceeded, RefundStatus::Failed)
        | (CallbackType::RefundFailed, RefundStatus::Succeeded) => RefundDecision::Ignore {
            anomaly: Some(AnomalyKind::RefundResultConflict),
        },
        // Not a refund result: the payment rules in `charge::decide` handle those.
        (CallbackType::PaymentSucceeded | CallbackType::PaymentFailed, _) => {
            RefundDecision::Ignore { anomaly: None }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_refund_kind() -> impl Strategy<Value = CallbackType> {
        prop::sample::select(vec![
            CallbackType::RefundSucceeded,
            CallbackType::RefundFailed,
        ])
    }

    fn any_status() -> impl Strategy<Value = RefundStatus> {
        prop::sample::select(RefundStatus::ALL.to_vec())
    }

    fn any_origin() -> impl Strategy<Value = Origin> {
        prop::sample::select(vec![Origin::Notification, Origin::QueryAnswer])
    }

    proptest! {
        #[test]
        fn only_a_pending_refund_is_booked_or_released(kind in any_refund_kind(), status in any_status(), origin in any_origin()) {
            let decision = decide_refund(kind, status, origin);
            if status != RefundStatus::Pending {
                let ignored = matches!(decision, RefundDecision::Ignore { .. });
                prop_assert!(ignored, "{:?}", decision);
            }
            if decision == RefundDecision::Book {
                prop_assert_eq!(kind, CallbackType::RefundSucceeded);
            }
        }

        #[test]
        fn only_the_platform_s_answer_to_our_query_frees_a_refund_s_amount(
            kind in any_refund_kind(), status in any_status(), origin in any_origin()
        ) {
            let decision = decide_refund(kind, status, origin);
            if decision == RefundDecision::Release {
                prop_assert_eq!(origin, Origin::QueryAnswer);
                prop_assert_eq!(kind, CallbackType::RefundFailed);
            }
            if origin == Origin::Notification && kind == CallbackType::RefundFailed && status == RefundStatus::Pending {
                prop_assert_eq!(decision, RefundDecision::ConfirmFailure);
            }
        }

        #[test]
        fn a_result_contradicting_a_final_one_is_flagged(kind in any_refund_kind(), status in any_status(), origin in any_origin()) {
            let contradicts = matches!(
                (kind, status),
                (CallbackType::RefundSucceeded, RefundStatus::Failed)
                    | (CallbackType::RefundFailed, RefundStatus::Succeeded)
            );
            prop_assert_eq!(
                contradicts,
                matches!(decide_refund(kind, status, origin), RefundDecision::Ignore { anomaly: Some(_) })
            );
        }
    }
}
