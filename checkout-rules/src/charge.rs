//! The charge rule: what a payment result does to its order ([`decide`]),
//! decided from the order as the backend locked it, and what pays for it
//! ([`Funds`]: a wallet, which may spend [`spendable_cents`], or the platform). The backend's `charge.rs` carries the decision
//! out in the callback's transaction.

use api_types::api::CallbackType;
use api_types::{AnomalyKind, CallbackOutcome, OrderStatus, PaymentMethod};

/// What a new callback does to its order, decided from the order as locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Write the ledger row, mark PAID, deduct the wallet (when it pays).
    Charge,
    /// Mark FAILED with a reason; maybe flag it for review.
    FailOrder {
        /// Stored in `orders.failure_reason`.
        reason: &'static str,
        /// Set when a person must look (the platform took money we could not book).
        anomaly: Option<AnomalyKind>,
    },
    /// Change nothing (the order is final); maybe flag it for review.
    Ignore {
        /// Set when the combination is suspicious.
        anomaly: Option<AnomalyKind>,
    },
}

impl Decision {
    /// The outcome recorded for the callback and its delivery.
    pub const fn outcome(self) -> CallbackOutcome {
        match self {
            Self::Charge => CallbackOutcome::Charged,
            Self::FailOrder { anomaly: None, .. } => CallbackOutcome::OrderFailed,
            Self::FailOrder {
                anomaly: Some(_), ..
            } => CallbackOutcome::OrderFailedInsufficientFunds,
            Self::Ignore { anomaly: None } => CallbackOutcome::IgnoredOrderFinal,
            Self::Ignore {
                anomaly: Some(AnomalyKind::UnsolicitedPayment),
            } => CallbackOutcome::IgnoredUnsolicited,
            Self::Ignore {
                anomaly: Some(AnomalyKind::PaymentReferenceMismatch),
            } => CallbackOutcome::IgnoredReferenceMismatch,
            Self::Ignore { anomaly: Some(_) } => CallbackOutcome::IgnoredAnomaly,
        }
    }
}

impl Decision {
    /// For a success the platform reports: the anomaly saying why it could not
    /// be booked, when the platform holds money that never entered our books (it
    /// is then given back in full, the backend's `refunds::start_automatic`). `None`
    /// when it was charged, when it is our charged payment again, and for failures.
    pub const fn unbooked_success(self, kind: CallbackType) -> Option<AnomalyKind> {
        match (kind, self) {
            (
                CallbackType::PaymentSucceeded,
                Self::FailOrder {
                    anomaly: Some(why), ..
                }
                | Self::Ignore { anomaly: Some(why) },
            ) => Some(why),
            _ => None,
        }
    }
}

/// What pays for an order, as the charge rule weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Funds {
    /// The shopper's wallet, which can spend this much for the order
    /// ([`spendable_cents`]).
    Wallet {
        /// The account's available money plus the order's own hold.
        spendable_cents: i64,
    },
    /// The platform took the money from the shopper's own account: no money of
    /// ours is needed, so a success the platform reports always covers the order.
    Platform,
}

impl Funds {
    /// What pays for an order whose attempt is paid by `method` (a wallet
    /// spending `spendable_cents`); an order with no attempt is weighed as the
    /// wallet (it is never charged: [`Reference::NoAttempt`]).
    pub const fn of(method: Option<PaymentMethod>, spendable_cents: i64) -> Self {
        match method {
            Some(PaymentMethod::Platform) => Self::Platform,
            Some(PaymentMethod::Wallet) | None => Self::Wallet { spendable_cents },
        }
    }

    /// Whether they cover `amount_cents`.
    pub const fn cover(self, amount_cents: i64) -> bool {
        match self {
            Self::Wallet { spendable_cents } => spendable_cents >= amount_cents,
            Self::Platform => true,
        }
    }
}

/// Whether a result is about the payment we handed over for its order
/// (the backend's `LockedOrder::reference` compares the names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    /// It names the order's attempt.
    Matches,
    /// The order has no attempt: we never handed a payment over for it.
    NoAttempt,
    /// It names another payment than the order's attempt.
    Mismatch,
}

/// The rule, as a pure function of the event, the locked order and whether
/// the event names our payment: a success charges only a PENDING order whose
/// attempt it names and whose [`Funds`] cover its amount (a platform payment
/// always; a wallet's [`spendable_cents`] is the account's available money plus
/// the order's own hold, so an order held at pay always can). A success we never asked for, or naming another payment,
/// charges nothing and is flagged. The same payment reported again on a PAID
/// order (a query's answer and a callback, or a second notification) is no
/// news. A failure fails only a PENDING order whose attempt it names. It never
/// asks for a move the state machine forbids.
///
/// Its SQL twin is the callback's fast path, `backend/sql/callback/charge_in_one.sql`,
/// which charges only where this says `Charge`; `backend/tests/api/one_statement.rs`
/// feeds both the same cases and compares every row they write.
pub fn decide(
    kind: CallbackType,
    status: OrderStatus,
    reference: Reference,
    funds: Funds,
    amount_cents: i64,
) -> Decision {
    use CallbackType::{PaymentFailed, PaymentSucceeded, RefundFailed, RefundSucceeded};
    use OrderStatus::{Closed, Failed, Paid, Pending, Refunded};
    let ignore = |anomaly| Decision::Ignore { anomaly };
    match (kind, status, reference) {
        // Refund results never reach this rule (`crate::refund::decide_refund`).
        (RefundSucceeded | RefundFailed, _, _) => ignore(None),
        (PaymentSucceeded, _, Reference::NoAttempt) => {
            ignore(Some(AnomalyKind::UnsolicitedPayment))
        }
        (PaymentSucceeded, Pending, Reference::Mismatch) => {
            ignore(Some(AnomalyKind::PaymentReferenceMismatch))
        }
        (PaymentSucceeded, Pending, Reference::Matches) if funds.cover(amount_cents) => {
            Decision::Charge
        }
        (PaymentSucceeded, Pending, Reference::Matches) => Decision::FailOrder {
            reason: "INSUFFICIENT_FUNDS",
            anomaly: Some(AnomalyKind::InsufficientFunds),
        },
        (PaymentSucceeded, Paid | Refunded, Reference::Matches) => ignore(None),
        (PaymentSucceeded, Paid | Refunded, Reference::Mismatch) => {
            ignore(Some(AnomalyKind::SecondSuccessForPaidOrder))
        }
        (PaymentSucceeded, Failed, _) => ignore(Some(AnomalyKind::SuccessAfterFailed)),
        (PaymentSucceeded, Closed, _) => ignore(Some(AnomalyKind::LateSuccess)),
        (PaymentFailed, Pending, Reference::Matches) => Decision::FailOrder {
            reason: "PAYMENT_FAILED",
            anomaly: None,
        },
        (PaymentFailed, Paid | Refunded, Reference::Matches) => {
            ignore(Some(AnomalyKind::FailureAfterPaid))
        }
        (PaymentFailed, _, _) => ignore(None),
    }
}

/// What an order may spend: the account's available money (its balance less
/// what it holds for all its payments in flight) plus the order's own hold, so
/// an order held at pay can always spend its amount.
pub fn spendable_cents(balance_cents: i64, held_cents: i64, hold_cents: i64) -> i64 {
    balance_cents - held_cents + hold_cents
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_status() -> impl Strategy<Value = OrderStatus> {
        prop::sample::select(OrderStatus::ALL.to_vec())
    }

    fn any_kind() -> impl Strategy<Value = CallbackType> {
        prop::sample::select(vec![
            CallbackType::PaymentSucceeded,
            CallbackType::PaymentFailed,
        ])
    }

    /// A wallet that can spend 0..1000, or the platform.
    fn any_funds() -> impl Strategy<Value = Funds> {
        prop_oneof![
            (0_i64..1_000).prop_map(|spendable_cents| Funds::Wallet { spendable_cents }),
            Just(Funds::Platform),
        ]
    }

    fn any_reference() -> impl Strategy<Value = Reference> {
        prop::sample::select(vec![
            Reference::Matches,
            Reference::NoAttempt,
            Reference::Mismatch,
        ])
    }

    proptest! {
        #[test]
        fn decisions_only_ask_for_moves_the_state_machine_allows(
            kind in any_kind(), status in any_status(), reference in any_reference(),
            funds in any_funds(), amount in 1_i64..1_000
        ) {
            match decide(kind, status, reference, funds, amount) {
                Decision::Charge => {
                    prop_assert!(crate::state::order_may_move(status, OrderStatus::Paid));
                    prop_assert!(funds.cover(amount));
                    prop_assert_eq!(kind, CallbackType::PaymentSucceeded);
                }
                Decision::FailOrder { .. } => prop_assert!(crate::state::order_may_move(status, OrderStatus::Failed)),
                Decision::Ignore { .. } => prop_assert!(status.is_final() || reference != Reference::Matches),
            }
        }

        #[test]
        fn every_success_is_charged_known_or_given_back(
            status in any_status(), reference in any_reference(),
            funds in any_funds(), amount in 1_i64..1_000
        ) {
            let decision = decide(CallbackType::PaymentSucceeded, status, reference, funds, amount);
            let given_back = decision.unbooked_success(CallbackType::PaymentSucceeded).is_some();
            let charged = decision == Decision::Charge;
            // Our own payment again, already charged: the one success that is neither.
            let known = matches!(status, OrderStatus::Paid | OrderStatus::Refunded)
                && reference == Reference::Matches;
            prop_assert_eq!(u8::from(given_back) + u8::from(charged) + u8::from(known), 1,
                "{:?} {:?} -> {:?}", status, reference, decision);
        }

        #[test]
        fn a_failure_never_starts_a_refund(
            status in any_status(), reference in any_reference(), funds in any_funds(), amount in 1_i64..1_000
        ) {
            let decision = decide(CallbackType::PaymentFailed, status, reference, funds, amount);
            prop_assert_eq!(decision.unbooked_success(CallbackType::PaymentFailed), None);
        }

        #[test]
        fn a_failure_never_charges(
            status in any_status(), reference in any_reference(), funds in any_funds(), amount in 1_i64..1_000
        ) {
            prop_assert_ne!(decide(CallbackType::PaymentFailed, status, reference, funds, amount), Decision::Charge);
        }

        #[test]
        fn only_a_result_naming_our_attempt_changes_an_order(
            kind in any_kind(), status in any_status(), funds in any_funds(), amount in 1_i64..1_000,
            reference in prop::sample::select(vec![Reference::NoAttempt, Reference::Mismatch]),
        ) {
            let decision = decide(kind, status, reference, funds, amount);
            prop_assert!(matches!(decision, Decision::Ignore { .. }), "{decision:?}");
            if kind == CallbackType::PaymentSucceeded {
                // A success we cannot book is always put in front of a person.
                prop_assert!(matches!(decision, Decision::Ignore { anomaly: Some(_) }), "{decision:?}");
            }
        }

        #[test]
        fn the_same_payment_reported_again_on_a_paid_order_is_no_news(funds in any_funds(), amount in 1_i64..1_000) {
            prop_assert_eq!(
                decide(CallbackType::PaymentSucceeded, OrderStatus::Paid, Reference::Matches, funds, amount),
                Decision::Ignore { anomaly: None }
            );
        }

        #[test]
        fn a_platform_payment_is_charged_whatever_the_wallet_holds(amount in 1_i64..1_000, spendable_cents in -1_000_i64..1_000) {
            // The platform took the money from the shopper's own account: the
            // wallet, whatever it holds, is not asked.
            let funds = Funds::of(Some(PaymentMethod::Platform), spendable_cents);
            prop_assert_eq!(funds, Funds::Platform);
            prop_assert_eq!(
                decide(CallbackType::PaymentSucceeded, OrderStatus::Pending, Reference::Matches, funds, amount),
                Decision::Charge
            );
        }

        #[test]
        fn a_wallet_payment_is_charged_only_when_the_wallet_covers_it(amount in 1_i64..1_000, spendable_cents in 0_i64..2_000) {
            let funds = Funds::of(Some(PaymentMethod::Wallet), spendable_cents);
            let decision = decide(CallbackType::PaymentSucceeded, OrderStatus::Pending, Reference::Matches, funds, amount);
            prop_assert_eq!(decision == Decision::Charge, spendable_cents >= amount);
        }
    }

    proptest! {
        #[test]
        fn an_order_held_at_pay_can_always_spend_its_amount(
            available in 0_i64..1_000, other_holds in 0_i64..1_000, amount in 1_i64..1_000
        ) {
            // The account holds this order's amount besides what its other orders hold.
            let balance = available + other_holds + amount;
            let held = other_holds + amount;
            prop_assert!(spendable_cents(balance, held, amount) >= amount);
        }
    }

    #[test]
    fn a_success_on_a_pending_order_with_too_little_balance_fails_it_and_flags_it() {
        assert_eq!(
            decide(
                CallbackType::PaymentSucceeded,
                OrderStatus::Pending,
                Reference::Matches,
                Funds::Wallet {
                    spendable_cents: 99
                },
                100
            ),
            Decision::FailOrder {
                reason: "INSUFFICIENT_FUNDS",
                anomaly: Some(AnomalyKind::InsufficientFunds)
            }
        );
    }

    #[test]
    fn unsolicited_and_mismatched_successes_are_flagged_by_their_own_kind() {
        let flagged = |reference| {
            decide(
                CallbackType::PaymentSucceeded,
                OrderStatus::Pending,
                reference,
                Funds::Wallet {
                    spendable_cents: 1_000,
                },
                100,
            )
        };
        assert_eq!(
            flagged(Reference::NoAttempt).outcome(),
            CallbackOutcome::IgnoredUnsolicited
        );
        assert_eq!(
            flagged(Reference::Mismatch).outcome(),
            CallbackOutcome::IgnoredReferenceMismatch
        );
    }
}
