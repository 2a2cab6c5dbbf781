//! The state machines' allowed moves: an order's and a payment attempt's.
//! The states themselves are declared once, in `api-types` (spelled the same
//! on the wire and in the database); which moves are allowed is a rule, and
//! lives here. The database's triggers (`orders_status_transition`,
//! `payment_attempts_status_transition`) refuse every other move, and every
//! status change is a conditional update (`... WHERE status = 'PENDING'`).

use api_types::{AttemptStatus, OrderStatus};

/// The order's transition rule: a pending order settles once (paid, failed or
/// closed), and a paid one may afterwards become refunded.
pub const fn order_may_move(from: OrderStatus, to: OrderStatus) -> bool {
    matches!(
        (from, to),
        (OrderStatus::Pending, OrderStatus::Paid)
            | (OrderStatus::Pending, OrderStatus::Failed)
            | (OrderStatus::Pending, OrderStatus::Closed)
            | (OrderStatus::Paid, OrderStatus::Refunded)
    )
}

/// The attempt's transition rule (the diagram in `api_types::attempt`): open states move forward or to a
/// final state; `SUBMITTED` and `UNKNOWN` may swap (an answer lost after
/// acceptance; a re-send answered); final states never move.
pub const fn attempt_may_move(from: AttemptStatus, to: AttemptStatus) -> bool {
    match from {
        AttemptStatus::Created => !matches!(to, AttemptStatus::Created),
        AttemptStatus::Submitted => {
            !matches!(to, AttemptStatus::Created | AttemptStatus::Submitted)
        }
        AttemptStatus::Unknown => !matches!(to, AttemptStatus::Created | AttemptStatus::Unknown),
        AttemptStatus::Succeeded | AttemptStatus::Failed | AttemptStatus::Closed => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_order_status() -> impl Strategy<Value = OrderStatus> {
        prop::sample::select(OrderStatus::ALL.to_vec())
    }

    fn any_attempt_status() -> impl Strategy<Value = AttemptStatus> {
        prop::sample::select(AttemptStatus::ALL.to_vec())
    }

    #[test]
    fn pending_settles_once_and_only_paid_moves_on_to_refunded() {
        let allowed: Vec<_> = OrderStatus::ALL
            .into_iter()
            .flat_map(|from| OrderStatus::ALL.into_iter().map(move |to| (from, to)))
            .filter(|(from, to)| order_may_move(*from, *to))
            .collect();
        assert_eq!(
            allowed,
            vec![
                (OrderStatus::Pending, OrderStatus::Paid),
                (OrderStatus::Pending, OrderStatus::Failed),
                (OrderStatus::Pending, OrderStatus::Closed),
                (OrderStatus::Paid, OrderStatus::Refunded)
            ]
        );
    }

    #[test]
    fn the_allowed_moves_are_exactly_the_diagram() {
        use AttemptStatus::*;
        let allowed: Vec<_> = AttemptStatus::ALL
            .into_iter()
            .flat_map(|from| AttemptStatus::ALL.into_iter().map(move |to| (from, to)))
            .filter(|(from, to)| attempt_may_move(*from, *to))
            .collect();
        assert_eq!(
            allowed,
            vec![
                (Created, Submitted),
                (Created, Unknown),
                (Created, Succeeded),
                (Created, Failed),
                (Created, Closed),
                (Submitted, Unknown),
                (Submitted, Succeeded),
                (Submitted, Failed),
                (Submitted, Closed),
                (Unknown, Submitted),
                (Unknown, Succeeded),
                (Unknown, Failed),
                (Unknown, Closed),
            ]
        );
    }

    proptest! {
        #[test]
        fn any_walk_through_the_machine_takes_at_most_one_step(
            steps in prop::collection::vec(any_order_status(), 0..20)
        ) {
            let mut current = OrderStatus::Pending;
            let mut moves = 0;
            for next in steps {
                if order_may_move(current, next) {
                    current = next;
                    moves += 1;
                }
            }
            // Settling once, then at most the refund.
            prop_assert!(moves <= 2);
            prop_assert_eq!(moves >= 1, current.is_final());
            prop_assert_eq!(moves == 2, current == OrderStatus::Refunded);
        }

        #[test]
        fn terminal_states_never_move_and_settled_ones_never_go_back(from in any_order_status(), to in any_order_status()) {
            if from.is_terminal() {
                prop_assert!(!order_may_move(from, to));
            }
            if from.is_final() && order_may_move(from, to) {
                prop_assert!(to.is_terminal());
            }
            prop_assert!(!order_may_move(from, OrderStatus::Pending));
        }

        #[test]
        fn any_walk_ends_in_at_most_one_final_state_and_never_returns_to_created(
            steps in prop::collection::vec(any_attempt_status(), 0..30)
        ) {
            let mut current = AttemptStatus::Created;
            let mut finals = 0;
            for next in steps {
                if attempt_may_move(current, next) {
                    prop_assert_ne!(next, AttemptStatus::Created);
                    current = next;
                    finals += usize::from(next.is_final());
                }
            }
            prop_assert!(finals <= 1);
            prop_assert_eq!(finals == 1, current.is_final());
        }

        #[test]
        fn final_states_never_move(from in any_attempt_status(), to in any_attempt_status()) {
            if from.is_final() {
                prop_assert!(!attempt_may_move(from, to));
            }
        }

        #[test]
        fn nothing_moves_to_itself(status in any_attempt_status()) {
            prop_assert!(!attempt_may_move(status, status));
        }

    }
}
