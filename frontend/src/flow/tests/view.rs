//! What the page shows: which buttons, which outcome, whose balance.

use super::{accepted, eur, order, ready};
use crate::flow::{Effect, Event, Outcome, PayFlow, balance_text};
use api_types::OrderStatus;
use api_types::api::Account;
use uuid::Uuid;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn the_pay_button_is_disabled_until_the_token_arrives() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    let button = flow.view().pay_button.expect("button shown");
    assert!(!button.enabled);
    assert!(flow.apply(Event::PayPressed).is_empty());
}

#[test]
fn a_settled_order_shows_its_final_state_and_no_pay_button() {
    for status in [OrderStatus::Paid, OrderStatus::Failed] {
        let mut flow = PayFlow::new();
        let effects = flow.apply(Event::OrderFetched(order(status)));
        assert_eq!(effects, vec![Effect::RefreshBalance]);
        assert_eq!(flow.tokens_requested, 0);
        let view = flow.view();
        assert_eq!(view.pay_button, None);
        assert_eq!(view.retry_label, None);
        assert_eq!(view.status, Some(status));
        match (status, view.outcome) {
            (
                OrderStatus::Paid,
                Some(Outcome::Paid {
                    paid_at,
                    payment_id,
                }),
            ) => {
                assert_eq!(paid_at.as_deref(), Some("2025-01-31 14:05:09 UTC"));
                assert_eq!(payment_id, None);
            }
            (OrderStatus::Failed, Some(Outcome::Failed { reason })) => {
                assert_eq!(reason, "card declined");
            }
            other => panic!("unexpected outcome {other:?}"),
        }
    }
}

#[test]
fn a_failed_payment_shows_the_reason() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayAccepted(accepted()));
    flow.apply(Event::OrderFetched(order(OrderStatus::Failed)));
    assert_eq!(
        flow.view().outcome,
        Some(Outcome::Failed {
            reason: "card declined".into()
        })
    );
}

#[test]
fn the_balance_is_shown_only_for_the_account_the_order_charges() {
    let charged = Account {
        account_id: Uuid::nil(),
        balance_cents: 100_000,
        currency: eur(),
    };
    let other = Account {
        account_id: Uuid::from_u128(7),
        balance_cents: 5,
        currency: "USD".parse().expect("valid currency"),
    };
    let pending = order(OrderStatus::Pending);
    assert_eq!(
        balance_text(Some(&pending), &[other.clone(), charged.clone()]).as_deref(),
        Some("1,000.00 EUR")
    );
    assert_eq!(balance_text(None, &[charged]), None);
    assert_eq!(balance_text(Some(&pending), &[]), None);
    assert_eq!(balance_text(Some(&pending), &[other]), None);
}

#[test]
fn a_closed_order_says_it_expired_and_nothing_was_charged() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Closed)));

    let view = flow.view();

    assert_eq!(
        view.outcome,
        Some(Outcome::Failed {
            reason: crate::flow::texts::ORDER_EXPIRED.to_owned()
        })
    );
    assert!(view.pay_button.is_none(), "nothing to pay");
}

#[test]
fn an_unconfirmed_payment_says_it_is_being_confirmed_never_that_it_failed() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayAccepted(accepted()));
    assert_eq!(
        flow.view().progress,
        Some("Waiting for the bank to confirm\u{2026}")
    );

    let mut unconfirmed = order(OrderStatus::Pending);
    unconfirmed.payment_status = Some(api_types::AttemptStatus::Unknown);
    flow.apply(Event::OrderFetched(unconfirmed));

    let view = flow.view();
    assert_eq!(
        view.progress,
        Some("Confirming with the payment provider\u{2026}")
    );
    assert_eq!(view.outcome, None, "not failed until the platform says so");

    let mut settled = order(OrderStatus::Paid);
    settled.payment_status = Some(api_types::AttemptStatus::Succeeded);
    flow.apply(Event::OrderFetched(settled));
    assert!(matches!(flow.view().outcome, Some(Outcome::Paid { .. })));
}
