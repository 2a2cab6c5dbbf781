//! What the page shows: which buttons, which outcome, whose balance.

use super::{accepted, eur, order, platform, ready, refund, sandbox, token};
use crate::flow::{Effect, Event, Outcome, PayFlow, RefundLine, balance_text};
use api_types::api::{Account, Order};
use api_types::{OrderStatus, PaymentMethod, RefundRequester, RefundStatus};
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
        assert_eq!(effects, vec![Effect::RefreshBalance, Effect::FetchRefunds]);
        assert_eq!(flow.tokens_requested, 0);
        let view = flow.view();
        assert_eq!(view.pay_button, None);
        assert_eq!(view.retry_label, None);
        assert_eq!(view.status, Some(status));
        match (status, view.outcome) {
            (
                OrderStatus::Paid,
                Some(Outcome::Paid {
                    heading,
                    paid_at,
                    payment_id,
                    ..
                }),
            ) => {
                assert_eq!(heading, "Payment received");
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
    let wallet = Some(PaymentMethod::Wallet);
    assert_eq!(
        balance_text(Some(&pending), wallet, &[other.clone(), charged.clone()]).as_deref(),
        Some("1,000.00 EUR")
    );
    assert_eq!(balance_text(None, wallet, &[charged]), None);
    assert_eq!(balance_text(Some(&pending), wallet, &[]), None);
    assert_eq!(balance_text(Some(&pending), wallet, &[other]), None);
}

#[test]
fn the_balance_is_shown_for_a_wallet_payment_only() {
    let account = Account {
        account_id: Uuid::nil(),
        balance_cents: 100_000,
        currency: eur(),
    };
    let accounts = [account];
    let pending = order(OrderStatus::Pending);
    assert_eq!(
        balance_text(Some(&pending), Some(PaymentMethod::Wallet), &accounts).as_deref(),
        Some("1,000.00 EUR")
    );
    // The platform takes the money from the shopper's own account: no balance of ours.
    assert_eq!(
        balance_text(Some(&pending), Some(PaymentMethod::Platform), &accounts),
        None
    );
    // Unknown (the platform could not be read): no balance either.
    assert_eq!(balance_text(Some(&pending), None, &accounts), None);

    // On the page: the chosen method before the pay, the order's after.
    let mut flow = ready();
    flow.apply(Event::PlatformRead(sandbox()));
    assert_eq!(flow.view().method, Some(PaymentMethod::Wallet));
    flow.apply(Event::MethodChosen(PaymentMethod::Platform));
    assert_eq!(flow.view().method, Some(PaymentMethod::Platform));
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayAccepted(accepted()));
    let mut paid = order(OrderStatus::Paid);
    paid.payment_method = Some(PaymentMethod::Platform);
    flow.apply(Event::OrderFetched(paid));
    assert_eq!(flow.view().method, Some(PaymentMethod::Platform));
}

#[test]
fn each_method_is_named_after_what_pays() {
    let named = |name: &str, method| {
        let mut flow = PayFlow::new();
        flow.apply(Event::PlatformRead(platform(name, &[method])));
        flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
        flow.view().method_name
    };
    assert_eq!(
        named("wechatpay", PaymentMethod::Platform),
        Some("WeChat Pay")
    );
    assert_eq!(named("alipay", PaymentMethod::Platform), Some("Alipay"));
    assert_eq!(
        named("remote", PaymentMethod::Platform),
        Some("Payment platform")
    );
    assert_eq!(
        named("sandbox", PaymentMethod::Platform),
        Some("Simulated payment platform")
    );
    assert_eq!(
        named("sandbox", PaymentMethod::Wallet),
        Some("Wallet balance")
    );
}

#[test]
fn the_sandbox_offers_a_choice_of_two_with_the_wallet_checked() {
    let mut flow = ready();
    flow.apply(Event::PlatformRead(sandbox()));
    assert_eq!(
        flow.choices(),
        [PaymentMethod::Wallet, PaymentMethod::Platform]
    );
    let view = flow.view();
    assert_eq!(
        view.choices,
        vec![
            (PaymentMethod::Wallet, "Wallet balance"),
            (PaymentMethod::Platform, "Simulated payment platform"),
        ]
    );
    assert_eq!(view.method, Some(PaymentMethod::Wallet));
    // The radios say what pays: no line of its own.
    assert_eq!(view.method_name, None);
    // Once pressed, the choice is gone and the line names what pays.
    flow.apply(Event::PayPressed);
    let view = flow.view();
    assert!(view.choices.is_empty());
    assert_eq!(view.method_name, Some("Wallet balance"));
}

#[test]
fn a_final_order_names_only_its_own_method() {
    let mut flow = PayFlow::new();
    flow.apply(Event::PlatformRead(sandbox()));
    flow.apply(Event::OrderFetched(order(OrderStatus::Closed)));
    let view = flow.view();
    assert_eq!((view.method, view.method_name), (None, None));
    assert!(view.choices.is_empty());

    let mut paid = order(OrderStatus::Paid);
    paid.payment_method = Some(PaymentMethod::Platform);
    let mut flow = PayFlow::new();
    flow.apply(Event::PlatformRead(sandbox()));
    flow.apply(Event::OrderFetched(paid));
    assert_eq!(flow.view().method_name, Some("Simulated payment platform"));
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

#[test]
fn refunds_are_listed_with_their_amount_and_status_in_words() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Paid)));
    assert!(flow.view().refunds.is_empty(), "nothing until they arrive");
    flow.apply(Event::RefundsFetched(vec![
        refund(113, RefundStatus::Failed, RefundRequester::Merchant),
        refund(250, RefundStatus::Succeeded, RefundRequester::Operator),
        refund(100_000, RefundStatus::Pending, RefundRequester::Merchant),
    ]));

    let view = flow.view();

    let line = |amount: &str, status, status_text| RefundLine {
        amount: amount.into(),
        status,
        status_text,
        note: None,
    };
    assert_eq!(
        view.refunds,
        vec![
            line("1.13 EUR", RefundStatus::Failed, "Refund failed"),
            line("2.50 EUR", RefundStatus::Succeeded, "Refunded"),
            line("1,000.00 EUR", RefundStatus::Pending, "Refund in progress"),
        ]
    );
    // A partial refund leaves the order paid: the receipt still says so.
    assert!(matches!(
        view.outcome,
        Some(Outcome::Paid {
            heading: "Payment received",
            ..
        })
    ));
}

#[test]
fn a_refunded_order_reads_refunded() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Refunded)));
    flow.apply(Event::RefundsFetched(vec![refund(
        1_250,
        RefundStatus::Succeeded,
        RefundRequester::Merchant,
    )]));

    let view = flow.view();

    assert_eq!(view.status, Some(OrderStatus::Refunded));
    assert_eq!(view.pay_button, None);
    assert_eq!(
        view.outcome,
        Some(Outcome::Paid {
            heading: "Refunded",
            summary: "Your payment was given back in full.",
            paid_at: Some("2025-01-31 14:05:09 UTC".into()),
            payment_id: None,
        })
    );
    assert_eq!(view.refunds.len(), 1);
    assert_eq!(view.refunds[0].status_text, "Refunded");
}

#[test]
fn an_automatic_refund_says_it_was_a_payment_we_could_not_book() {
    // The platform took money for an order that failed here: it goes back by itself.
    let mut flow = PayFlow::new();
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Failed))),
        vec![Effect::RefreshBalance, Effect::FetchRefunds]
    );
    flow.apply(Event::RefundsFetched(vec![refund(
        1_250,
        RefundStatus::Pending,
        RefundRequester::Automatic,
    )]));

    let view = flow.view();

    assert!(matches!(view.outcome, Some(Outcome::Failed { .. })));
    assert_eq!(
        view.refunds,
        vec![RefundLine {
            amount: "12.50 EUR".into(),
            status: RefundStatus::Pending,
            status_text: "Refund in progress",
            note: Some(
                "Returned automatically to where it came from: a payment we could not book."
            ),
        }]
    );
}

/// An order a merchant placed with both ways back.
fn with_ways_back(status: OrderStatus) -> Order {
    let mut order = order(status);
    order.merchant_name = Some("Partner Shop".into());
    order.return_url = Some("https://partner.example/back?cart=7#top".into());
    order.cancel_url = Some("https://partner.example/cart".into());
    order
}

#[test]
fn a_payable_order_offers_the_merchants_cancel_url_and_nothing_once_paying() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(with_ways_back(OrderStatus::Pending)));
    flow.apply(Event::TokenIssued(token(1)));
    let way_back = flow.view().way_back.expect("a way back");
    assert_eq!(way_back.label, "Cancel and return to Partner Shop");
    assert_eq!(way_back.href, "https://partner.example/cart?order_no=ORD1");
    assert!(!way_back.automatic, "giving up is the shopper's choice");
    // From "Pay now" on, no way out that looks like giving up a payment in flight.
    flow.apply(Event::PayPressed);
    assert_eq!(flow.view().way_back, None);
}

#[test]
fn a_final_order_returns_to_the_merchant_with_its_number_and_status() {
    for status in [OrderStatus::Paid, OrderStatus::Failed, OrderStatus::Closed] {
        let mut flow = PayFlow::new();
        flow.apply(Event::OrderFetched(with_ways_back(status)));
        let way_back = flow.view().way_back.expect("a way back");
        assert_eq!(way_back.label, "Return to Partner Shop");
        assert_eq!(
            way_back.href,
            format!(
                "https://partner.example/back?cart=7&order_no=ORD1&status={}#top",
                status.as_str()
            )
        );
        assert!(way_back.automatic);
    }
}

#[test]
fn an_order_without_urls_offers_no_way_back() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Paid)));
    assert_eq!(flow.view().way_back, None);
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    flow.apply(Event::TokenIssued(token(1)));
    assert_eq!(flow.view().way_back, None);
}
