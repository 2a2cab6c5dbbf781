//! The reducer: which effects each event leads to, how many tokens a page
//! load asks for, and which failures are retried with the same token.

use super::{accepted, network, order, platform, ready, refund, sandbox, server_error, token};
use crate::api::ApiError;
use crate::flow::{
    Doubt, Effect, Event, MAX_POLLS, Notice, Outcome, POLL_INTERVAL_MS, PayButton, PayFlow, Phase,
    SUBMIT_RETRY_DELAYS_MS, submit_retry_delay,
};
use api_types::{
    AttemptStatus, ErrorBody, ErrorCode, OrderStatus, PaymentMethod, RefundRequester, RefundStatus,
};
use uuid::Uuid;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn a_page_load_fetches_the_order_then_exactly_one_token() {
    assert_eq!(PayFlow::start(), vec![Effect::FetchOrder { delay_ms: 0 }]);
    let mut flow = PayFlow::new();
    let effects = flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    assert_eq!(effects, vec![Effect::IssueToken]);
    // A duplicate or late answer does not ask for another token.
    assert!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Pending)))
            .is_empty()
    );
    flow.apply(Event::TokenIssued(token(1)));
    assert!(flow.apply(Event::TokenIssued(token(2))).is_empty());
    assert_eq!(flow.tokens_requested, 1);
    assert_eq!(
        flow.phase,
        Phase::Ready {
            token: Uuid::from_u128(1)
        }
    );
    let view = flow.view();
    assert_eq!(view.amount.as_deref(), Some("12.50 EUR"));
    assert_eq!(view.status, Some(OrderStatus::Pending));
    assert_eq!(
        view.pay_button,
        Some(PayButton {
            enabled: true,
            label: "Pay now",
            busy: false
        })
    );
}

#[test]
fn many_clicks_submit_once() {
    let mut flow = ready();
    let first = flow.apply(Event::PayPressed);
    assert_eq!(
        first,
        vec![Effect::Submit {
            token: Uuid::from_u128(1),
            method: None,
            delay_ms: 0
        }]
    );
    for _ in 0..4 {
        assert!(flow.apply(Event::PayPressed).is_empty());
    }
    let button = flow.view().pay_button.expect("button shown");
    assert!(!button.enabled && button.busy);
}

#[test]
fn an_accepted_payment_is_polled_until_paid_and_shows_a_receipt() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    let effects = flow.apply(Event::PayAccepted(accepted()));
    assert_eq!(
        effects,
        vec![Effect::FetchOrder {
            delay_ms: POLL_INTERVAL_MS
        }]
    );
    assert_eq!(flow.view().pay_button, None);
    assert!(flow.view().progress.is_some());
    // Still pending: look again; a failed look also keeps polling.
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Pending))),
        vec![Effect::FetchOrder {
            delay_ms: POLL_INTERVAL_MS
        }]
    );
    assert_eq!(
        flow.apply(Event::OrderFetchFailed(network())),
        vec![Effect::FetchOrder {
            delay_ms: POLL_INTERVAL_MS
        }]
    );
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Paid))),
        vec![Effect::RefreshBalance, Effect::FetchRefunds]
    );
    assert_eq!(flow.phase, Phase::Done);
    let view = flow.view();
    assert_eq!(view.status, Some(OrderStatus::Paid));
    assert_eq!(
        view.outcome,
        Some(Outcome::Paid {
            heading: "Payment received",
            summary: "Thank you. Your order is paid.",
            paid_at: Some("2025-01-31 14:05:09 UTC".into()),
            payment_id: Some(Uuid::from_u128(99).to_string()),
        })
    );
    assert_eq!(flow.tokens_requested, 1);
}

#[test]
fn polling_gives_up_after_max_polls_and_can_resume() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayAccepted(accepted()));
    for _ in 0..MAX_POLLS - 1 {
        assert_eq!(
            flow.apply(Event::OrderFetched(order(OrderStatus::Pending)))
                .len(),
            1
        );
    }
    assert!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Pending)))
            .is_empty()
    );
    assert_eq!(flow.phase, Phase::Slow);
    assert_eq!(flow.view().retry_label, Some("Check again"));
    assert_eq!(
        flow.apply(Event::RetryPressed),
        vec![Effect::FetchOrder { delay_ms: 0 }]
    );
}

#[test]
fn the_backoff_schedule_grows_then_stops() {
    let delays: Vec<_> = (1..=5).map(submit_retry_delay).collect();
    assert_eq!(
        delays,
        vec![Some(250), Some(500), Some(1_000), Some(2_000), None]
    );
    assert_eq!(submit_retry_delay(0), None);
}

#[test]
fn a_network_failure_resends_the_same_token_with_backoff_then_stalls() {
    let mut flow = ready();
    let token = Uuid::from_u128(1);
    flow.apply(Event::PayPressed);
    for delay_ms in SUBMIT_RETRY_DELAYS_MS {
        assert_eq!(
            flow.apply(Event::PayFailed(network())),
            vec![Effect::Submit {
                token,
                method: None,
                delay_ms
            }]
        );
        assert_eq!(flow.notice, Some(Notice::Retrying));
    }
    // After the last re-send the page reads the order before saying anything.
    assert_eq!(
        flow.apply(Event::PayFailed(network())),
        vec![Effect::FetchOrder { delay_ms: 0 }]
    );
    assert_eq!(
        flow.phase,
        Phase::Verifying {
            token,
            doubt: Doubt::NoAnswer
        }
    );
    assert!(flow.apply(Event::OrderFetchFailed(network())).is_empty());
    assert_eq!(flow.phase, Phase::SubmitStalled { token });
    assert_eq!(flow.notice, Some(Notice::SubmitStalled));
    assert_eq!(flow.view().retry_label, Some("Try again"));
    // "Try again" re-sends the same token; no new token is asked for.
    assert_eq!(
        flow.apply(Event::RetryPressed),
        vec![Effect::Submit {
            token,
            method: None,
            delay_ms: 0
        }]
    );
    assert_eq!(flow.tokens_requested, 1);
    // A gateway error page counts as "no answer" too.
    assert_eq!(
        flow.apply(Event::PayFailed(ApiError::Http { status: 502 })),
        vec![Effect::Submit {
            token,
            method: None,
            delay_ms: SUBMIT_RETRY_DELAYS_MS[0]
        }]
    );
}

#[test]
fn a_refused_token_gets_exactly_one_fresh_token_and_the_shopper_presses_again() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    let effects = flow.apply(Event::PayFailed(server_error(409, ErrorCode::TokenInvalid)));
    // The order is read first: only an order without a payment lets the page
    // say that nothing was charged.
    assert_eq!(effects, vec![Effect::FetchOrder { delay_ms: 0 }]);
    assert_eq!(flow.notice, None);
    let effects = flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    assert_eq!(effects, vec![Effect::IssueToken]);
    assert_eq!(flow.notice, Some(Notice::TokenRenewed));
    assert!(
        flow.notice
            .is_some_and(|n| n.text().contains("nothing was charged"))
    );
    flow.apply(Event::TokenIssued(token(2)));
    // The notice stays until the shopper presses again.
    assert_eq!(flow.notice, Some(Notice::TokenRenewed));
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token: Uuid::from_u128(2),
            method: None,
            delay_ms: 0
        }]
    );
    assert_eq!(flow.notice, None);
    assert_eq!(flow.tokens_requested, 2);
}

#[test]
fn a_token_store_outage_shows_a_message_and_a_retry_button() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    let down = server_error(503, ErrorCode::TokenStoreUnavailable);
    assert!(flow.apply(Event::TokenFailed(down.clone())).is_empty());
    assert_eq!(flow.phase, Phase::TokenUnavailable);
    let view = flow.view();
    assert_eq!(view.notice, Some(Notice::ServiceUnavailable));
    assert_eq!(view.pay_button, None);
    assert_eq!(view.retry_label, Some("Try again"));
    assert_eq!(flow.apply(Event::RetryPressed), vec![Effect::IssueToken]);
    assert_eq!(flow.notice, None);

    // The same outage while paying keeps the token for "Try again", once the
    // order, read first, shows no payment.
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    assert_eq!(
        flow.apply(Event::PayFailed(down)),
        vec![Effect::FetchOrder { delay_ms: 0 }]
    );
    assert!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Pending)))
            .is_empty()
    );
    assert_eq!(
        flow.phase,
        Phase::SubmitStalled {
            token: Uuid::from_u128(1)
        }
    );
    assert_eq!(flow.notice, Some(Notice::ServiceUnavailable));
}

#[test]
fn insufficient_funds_is_said_plainly_and_ends_the_flow() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    let err = server_error(422, ErrorCode::InsufficientFunds);
    assert!(flow.apply(Event::PayFailed(err)).is_empty());
    let view = flow.view();
    assert_eq!(view.notice, Some(Notice::InsufficientFunds));
    assert_eq!(view.pay_button, None);
    assert_eq!(view.retry_label, None);
    assert!(flow.apply(Event::PayPressed).is_empty());
}

#[test]
fn a_wallet_too_low_turns_to_the_platforms_method_with_a_new_token() {
    let mut flow = ready();
    flow.apply(Event::PlatformRead(sandbox()));
    assert_eq!(flow.method, Some(PaymentMethod::Wallet));
    flow.apply(Event::PayPressed);
    // The refused token is spent: a new one is asked for, once.
    assert_eq!(
        flow.apply(Event::PayFailed(server_error(
            422,
            ErrorCode::InsufficientFunds
        ))),
        vec![Effect::IssueToken]
    );
    assert_eq!(flow.tokens_requested, 2);
    assert_eq!(flow.notice, Some(Notice::InsufficientFundsPayAnotherWay));
    assert_eq!(flow.method, Some(PaymentMethod::Platform));
    flow.apply(Event::TokenIssued(token(2)));
    // The shopper may still choose; the notice stays until the next press.
    assert_eq!(flow.choices().len(), 2);
    assert_eq!(
        flow.view().notice,
        Some(Notice::InsufficientFundsPayAnotherWay)
    );
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token: Uuid::from_u128(2),
            method: Some(PaymentMethod::Platform),
            delay_ms: 0
        }]
    );
    assert_eq!(flow.notice, None);
}

#[test]
fn a_wallet_too_low_where_the_wallet_is_all_there_is_ends_the_flow() {
    let mut flow = ready();
    flow.apply(Event::PlatformRead(platform(
        "sandbox",
        &[PaymentMethod::Wallet],
    )));
    flow.apply(Event::PayPressed);
    assert!(
        flow.apply(Event::PayFailed(server_error(
            422,
            ErrorCode::InsufficientFunds
        )))
        .is_empty()
    );
    assert_eq!(flow.phase, Phase::Declined);
    assert_eq!(flow.notice, Some(Notice::InsufficientFunds));
    assert_eq!(flow.tokens_requested, 1);
}

#[test]
fn a_method_not_offered_is_dropped_and_the_same_token_pays_another_way() {
    let mut flow = ready();
    flow.apply(Event::PlatformRead(sandbox()));
    flow.apply(Event::MethodChosen(PaymentMethod::Platform));
    flow.apply(Event::PayPressed);
    // Refused before the token was touched: no new token, no order read.
    assert!(
        flow.apply(Event::PayFailed(server_error(
            422,
            ErrorCode::PaymentMethodUnavailable
        )))
        .is_empty()
    );
    assert_eq!(flow.tokens_requested, 1);
    assert_eq!(flow.notice, Some(Notice::MethodUnavailable));
    assert!(flow.view().notice.is_some_and(Notice::is_problem));
    assert_eq!(flow.method, Some(PaymentMethod::Wallet));
    assert!(flow.choices().is_empty(), "one method is left");
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token: Uuid::from_u128(1),
            method: Some(PaymentMethod::Wallet),
            delay_ms: 0
        }]
    );
}

#[test]
fn an_order_settled_elsewhere_is_reloaded_to_show_the_truth() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    let effects = flow.apply(Event::PayFailed(server_error(
        409,
        ErrorCode::OrderNotPayable,
    )));
    assert_eq!(effects, vec![Effect::FetchOrder { delay_ms: 0 }]);
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Paid))),
        vec![Effect::RefreshBalance, Effect::FetchRefunds]
    );
    assert_eq!(flow.phase, Phase::Done);
    assert_eq!(flow.notice, Some(Notice::AlreadySettled));

    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    let effects = flow.apply(Event::TokenFailed(server_error(
        409,
        ErrorCode::OrderNotPayable,
    )));
    assert_eq!(effects, vec![Effect::FetchOrder { delay_ms: 0 }]);
}

#[test]
fn an_unknown_order_says_so_and_a_network_failure_can_be_retried() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetchFailed(server_error(
        404,
        ErrorCode::OrderNotFound,
    )));
    assert_eq!(flow.notice, Some(Notice::OrderNotFound));

    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetchFailed(network()));
    assert_eq!(flow.notice, Some(Notice::Offline));
    assert_eq!(
        flow.apply(Event::RetryPressed),
        vec![Effect::FetchOrder { delay_ms: 0 }]
    );
    assert_eq!(flow.phase, Phase::LoadingOrder);
}

#[test]
fn late_answers_from_an_earlier_phase_are_ignored() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayAccepted(accepted()));
    // A replayed 202 or a stray failure after acceptance changes nothing.
    let before = flow.clone();
    assert!(flow.apply(Event::PayAccepted(accepted())).is_empty());
    assert!(flow.apply(Event::PayFailed(network())).is_empty());
    assert!(flow.apply(Event::TokenIssued(token(3))).is_empty());
    assert_eq!(flow, before);
}

#[test]
fn a_lost_session_sends_the_shopper_to_sign_in_from_any_request() {
    let signed_out = || server_error(401, ErrorCode::Unauthenticated);
    let on_load = PayFlow::new();
    let mut on_token = PayFlow::new();
    on_token.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    let mut on_pay = ready();
    on_pay.apply(Event::PayPressed);
    let mut while_polling = ready();
    while_polling.apply(Event::PayPressed);
    while_polling.apply(Event::PayAccepted(accepted()));

    for (mut flow, event) in [
        (on_load, Event::OrderFetchFailed(signed_out())),
        (on_token, Event::TokenFailed(signed_out())),
        (on_pay, Event::PayFailed(signed_out())),
        (while_polling, Event::OrderFetchFailed(signed_out())),
    ] {
        assert_eq!(flow.apply(event.clone()), vec![Effect::SignIn], "{event:?}");
        assert_eq!(flow.phase, Phase::SignedOut);
        assert_eq!(flow.notice, Some(Notice::SignedOut));
        let view = flow.view();
        assert_eq!(view.pay_button, None, "nothing to press on the way out");
        assert_eq!(view.retry_label, None);
    }
}

#[test]
fn a_signed_out_page_does_nothing_more() {
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    assert_eq!(
        flow.apply(Event::PayFailed(server_error(
            401,
            ErrorCode::Unauthenticated
        ))),
        vec![Effect::SignIn]
    );
    let before = flow.clone();
    // A second 401, a late answer or a click: no second redirect, no request.
    assert!(
        flow.apply(Event::OrderFetchFailed(server_error(
            401,
            ErrorCode::Unauthenticated
        )))
        .is_empty()
    );
    assert!(flow.apply(Event::PayAccepted(accepted())).is_empty());
    assert!(flow.apply(Event::PayPressed).is_empty());
    assert!(flow.apply(Event::RetryPressed).is_empty());
    assert_eq!(flow, before);
}

#[test]
fn a_401_without_the_unauthenticated_code_is_not_a_lost_session() {
    // 401 without UNAUTHENTICATED (e.g. a proxy's page) is an ordinary failure.
    let mut flow = PayFlow::new();
    assert!(
        flow.apply(Event::OrderFetchFailed(ApiError::Http { status: 401 }))
            .is_empty()
    );
    assert_eq!(flow.phase, Phase::OrderUnavailable);
}

#[test]
fn a_final_order_fetches_its_refunds_once_and_keeps_them() {
    let mut flow = PayFlow::new();
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Paid))),
        vec![Effect::RefreshBalance, Effect::FetchRefunds]
    );
    let refunds = vec![
        refund(250, RefundStatus::Succeeded, RefundRequester::Merchant),
        refund(500, RefundStatus::Pending, RefundRequester::Merchant),
    ];
    assert!(
        flow.apply(Event::RefundsFetched(refunds.clone()))
            .is_empty()
    );
    assert_eq!(flow.refunds, refunds);
    assert_eq!(flow.notice, None);
    // A late copy of the order asks for nothing more: one fetch per final read.
    assert!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Paid)))
            .is_empty()
    );
    assert_eq!(flow.tokens_requested, 0);
}

#[test]
fn a_pending_order_fetches_no_refunds_until_it_is_read_final_again() {
    let mut flow = PayFlow::new();
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Pending))),
        vec![Effect::IssueToken]
    );
    // Settled elsewhere (here: refunded in full): the page re-fetches the
    // order, and with it the refunds.
    assert_eq!(
        flow.apply(Event::TokenFailed(server_error(
            409,
            ErrorCode::OrderNotPayable
        ))),
        vec![Effect::FetchOrder { delay_ms: 0 }]
    );
    assert_eq!(
        flow.apply(Event::OrderFetched(order(OrderStatus::Refunded))),
        vec![Effect::RefreshBalance, Effect::FetchRefunds]
    );
    assert_eq!(flow.phase, Phase::Done);
}

#[test]
fn a_refunds_answer_before_the_order_is_final_changes_nothing() {
    let mut flow = ready();
    let before = flow.clone();
    let late = vec![refund(
        1_250,
        RefundStatus::Succeeded,
        RefundRequester::Automatic,
    )];
    assert!(flow.apply(Event::RefundsFetched(late)).is_empty());
    assert!(flow.apply(Event::RefundsFetchFailed(network())).is_empty());
    assert_eq!(flow, before);
}

#[test]
fn refunds_that_cannot_be_read_leave_the_receipt_without_a_list() {
    let mut flow = PayFlow::new();
    flow.apply(Event::OrderFetched(order(OrderStatus::Paid)));
    assert!(flow.apply(Event::RefundsFetchFailed(network())).is_empty());
    let view = flow.view();
    assert_eq!(view.notice, None, "the receipt is not a problem");
    assert!(view.refunds.is_empty());
    assert!(matches!(view.outcome, Some(Outcome::Paid { .. })));

    // A lost session is a lost session here too.
    assert_eq!(
        flow.apply(Event::RefundsFetchFailed(server_error(
            401,
            ErrorCode::Unauthenticated
        ))),
        vec![Effect::SignIn]
    );
    assert_eq!(flow.phase, Phase::SignedOut);
}

/// An order with a payment under way, as the backend shows it.
fn being_paid() -> api_types::api::Order {
    let mut order = order(OrderStatus::Pending);
    order.payment_status = Some(AttemptStatus::Submitted);
    order
}

#[test]
fn a_refused_token_on_an_order_being_paid_follows_that_payment_to_its_receipt() {
    // A double submit: another request of this page charged the order, and
    // this one was told the token is used. The page must show PAID, never
    // "nothing was charged".
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    assert_eq!(
        flow.apply(Event::PayFailed(server_error(409, ErrorCode::TokenInvalid))),
        vec![Effect::FetchOrder { delay_ms: 0 }]
    );
    assert_eq!(flow.view().progress, Some(crate::flow::CHECKING_ORDER));
    assert_eq!(
        flow.apply(Event::OrderFetched(being_paid())),
        vec![Effect::FetchOrder {
            delay_ms: POLL_INTERVAL_MS
        }]
    );
    assert_eq!(flow.phase, Phase::Processing { polls: 0 });
    assert_eq!(flow.notice, None);
    assert_eq!(
        flow.tokens_requested, 1,
        "no fresh token for an order being paid"
    );
    flow.apply(Event::OrderFetched(order(OrderStatus::Paid)));
    assert_eq!(flow.phase, Phase::Done);
    assert!(matches!(flow.view().outcome, Some(Outcome::Paid { .. })));

    // Read already paid: straight to the receipt.
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayFailed(server_error(409, ErrorCode::TokenInvalid)));
    flow.apply(Event::OrderFetched(order(OrderStatus::Paid)));
    assert_eq!(flow.phase, Phase::Done);
    assert_eq!(flow.notice, None);
}

#[test]
fn pay_in_progress_resends_the_same_token_after_retry_after_and_takes_the_replay() {
    let mut flow = ready();
    let token = Uuid::from_u128(1);
    flow.apply(Event::PayPressed);
    let in_progress = ApiError::Server {
        status: 409,
        body: ErrorBody::new(ErrorCode::PayInProgress, "x"),
        retry_after_secs: Some(2),
    };
    assert_eq!(
        flow.apply(Event::PayFailed(in_progress)),
        vec![Effect::Submit {
            token,
            method: None,
            delay_ms: 2_000
        }]
    );
    assert_eq!(flow.notice, Some(Notice::BeingRecorded));
    assert!(!Notice::BeingRecorded.is_problem());
    assert_eq!(
        flow.apply(Event::PayAccepted(accepted())),
        vec![Effect::FetchOrder {
            delay_ms: POLL_INTERVAL_MS
        }]
    );
    assert_eq!(flow.tokens_requested, 1);

    // Still in progress through every re-send: the order is read, not guessed.
    let mut flow = ready();
    flow.apply(Event::PayPressed);
    let mut effects = Vec::new();
    for _ in 0..=SUBMIT_RETRY_DELAYS_MS.len() {
        effects = flow.apply(Event::PayFailed(server_error(
            409,
            ErrorCode::PayInProgress,
        )));
    }
    assert_eq!(effects, vec![Effect::FetchOrder { delay_ms: 0 }]);
    flow.apply(Event::OrderFetched(being_paid()));
    assert_eq!(flow.phase, Phase::Processing { polls: 0 });
}

#[test]
fn no_failed_pay_request_says_nothing_was_charged_before_the_order_was_read() {
    // Every answer a pay request can fail with, and no answer at all: the
    // only failures the page may take at their word are the backend's refusals
    // of this order's payment.
    let mut failures: Vec<ApiError> = ErrorCode::ALL
        .into_iter()
        .flat_map(|code| [409, 422, 500, 503].map(|status| server_error(status, code)))
        .collect();
    failures.extend([
        network(),
        ApiError::Http { status: 502 },
        ApiError::Http { status: 500 },
    ]);
    for err in failures {
        let mut flow = ready();
        flow.apply(Event::PayPressed);
        let mut effects = flow.apply(Event::PayFailed(err.clone()));
        // Automatic re-sends fail the same way.
        while matches!(flow.phase, Phase::Submitting { .. }) {
            effects = flow.apply(Event::PayFailed(err.clone()));
        }
        // PAYMENT_METHOD_UNAVAILABLE is refused before the token is touched.
        let refused = matches!(
            err.code(),
            Some(
                ErrorCode::InsufficientFunds
                    | ErrorCode::Unauthenticated
                    | ErrorCode::PaymentMethodUnavailable
            )
        );
        let says_nothing_charged = flow
            .notice
            .is_some_and(|n| n.text().to_lowercase().contains("nothing was charged"));
        assert!(
            refused || !says_nothing_charged,
            "{err:?}: the page said nothing was charged without reading the order"
        );
        // And read as being paid, the order is followed, whatever the failure said.
        if matches!(flow.phase, Phase::Verifying { .. }) {
            assert_eq!(effects, vec![Effect::FetchOrder { delay_ms: 0 }], "{err:?}");
            flow.apply(Event::OrderFetched(being_paid()));
            assert_eq!(flow.phase, Phase::Processing { polls: 0 }, "{err:?}");
            assert_eq!(flow.notice, None, "{err:?}");
        }
    }
}

#[test]
fn the_pay_names_the_platforms_default_method_until_the_shopper_chooses_another() {
    let token = Uuid::from_u128(1);
    let mut flow = ready();
    assert!(flow.apply(Event::PlatformRead(sandbox())).is_empty());
    assert_eq!(
        flow.method,
        Some(PaymentMethod::Wallet),
        "the first offered"
    );
    assert_eq!(
        flow.choices(),
        [PaymentMethod::Wallet, PaymentMethod::Platform]
    );
    assert!(
        flow.apply(Event::MethodChosen(PaymentMethod::Platform))
            .is_empty()
    );
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token,
            method: Some(PaymentMethod::Platform),
            delay_ms: 0
        }]
    );
    // From the press on the choice is closed: a re-send names the same method.
    assert!(flow.choices().is_empty());
    flow.apply(Event::MethodChosen(PaymentMethod::Wallet));
    assert_eq!(flow.method, Some(PaymentMethod::Platform));
    assert_eq!(
        flow.apply(Event::PayFailed(network())),
        vec![Effect::Submit {
            token,
            method: Some(PaymentMethod::Platform),
            delay_ms: SUBMIT_RETRY_DELAYS_MS[0]
        }]
    );
}

#[test]
fn the_platform_read_before_the_order_gives_the_same_default() {
    let mut flow = PayFlow::new();
    flow.apply(Event::PlatformRead(sandbox()));
    // Nothing to choose before the order is known.
    assert!(flow.choices().is_empty());
    flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    flow.apply(Event::TokenIssued(token(1)));
    assert_eq!(flow.choices().len(), 2);
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token: Uuid::from_u128(1),
            method: Some(PaymentMethod::Wallet),
            delay_ms: 0
        }]
    );
}

#[test]
fn a_platform_offering_one_method_offers_no_choice_and_pays_with_it() {
    let mut flow = ready();
    flow.apply(Event::PlatformRead(platform(
        "wechatpay",
        &[PaymentMethod::Platform],
    )));
    assert!(flow.choices().is_empty());
    flow.apply(Event::MethodChosen(PaymentMethod::Wallet));
    assert_eq!(flow.method, Some(PaymentMethod::Platform));
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token: Uuid::from_u128(1),
            method: Some(PaymentMethod::Platform),
            delay_ms: 0
        }]
    );
}

#[test]
fn an_order_with_a_payment_attempt_offers_no_choice_and_its_method_pays() {
    // A second page for an order another page is paying by the platform.
    let mut paying = order(OrderStatus::Pending);
    paying.payment_status = Some(AttemptStatus::Submitted);
    paying.payment_method = Some(PaymentMethod::Platform);
    let mut flow = PayFlow::new();
    flow.apply(Event::PlatformRead(sandbox()));
    flow.apply(Event::OrderFetched(paying));
    flow.apply(Event::TokenIssued(token(1)));
    assert!(flow.choices().is_empty());
    flow.apply(Event::MethodChosen(PaymentMethod::Platform));
    let view = flow.view();
    assert_eq!(view.method, Some(PaymentMethod::Platform));
    assert_eq!(view.method_name, Some("Simulated payment platform"));
}

#[test]
fn the_accepted_payments_method_is_what_pays() {
    // Both pages loaded before either paid; the other one's wallet attempt
    // came first, and this page's pay joined it.
    let mut flow = ready();
    flow.apply(Event::PlatformRead(sandbox()));
    flow.apply(Event::MethodChosen(PaymentMethod::Platform));
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayAccepted(accepted()));
    assert_eq!(flow.method, Some(PaymentMethod::Wallet));
    assert_eq!(flow.view().method, Some(PaymentMethod::Wallet));
}

#[test]
fn a_renewed_token_opens_the_choice_again() {
    let mut flow = ready();
    flow.apply(Event::PlatformRead(sandbox()));
    flow.apply(Event::PayPressed);
    flow.apply(Event::PayFailed(server_error(409, ErrorCode::TokenInvalid)));
    assert!(flow.choices().is_empty(), "not while the order is read");
    flow.apply(Event::OrderFetched(order(OrderStatus::Pending)));
    flow.apply(Event::TokenIssued(token(2)));
    flow.apply(Event::MethodChosen(PaymentMethod::Platform));
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token: Uuid::from_u128(2),
            method: Some(PaymentMethod::Platform),
            delay_ms: 0
        }]
    );
}

#[test]
fn without_the_platform_the_pay_names_no_method() {
    // GET /api/platform failed: the backend's default pays.
    let mut flow = ready();
    assert_eq!(flow.method, None);
    assert!(flow.choices().is_empty());
    assert_eq!(
        flow.apply(Event::PayPressed),
        vec![Effect::Submit {
            token: Uuid::from_u128(1),
            method: None,
            delay_ms: 0
        }]
    );
    assert_eq!(flow.view().method_name, None);
}
