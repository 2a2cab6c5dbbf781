//! The payment page's state machine, free of any browser code.
//!
//! The page is a reducer: every answer, timer and click becomes an [`Event`];
//! [`PayFlow::apply`] moves the state and returns the [`Effect`]s (requests,
//! timers) the page must run next, which later come back as events. All the
//! rules that keep a shopper from paying twice live here and are tested with
//! plain `cargo test`:
//!
//! - exactly one request token per page load (a fresh one only after the
//!   backend rejected the old one);
//! - "Pay now" does something only when a token is in hand and nothing is in
//!   flight, so a double click submits once;
//! - a pay request that got no answer is repeated with the *same* token on a
//!   fixed backoff ([`SUBMIT_RETRY_DELAYS_MS`]), which the backend replays;
//! - after the backend accepts, the order is polled until it is final.
//!
//! [`PayFlow::view`] says what the page shows for a state.

use crate::api::ApiError;
use api_types::api::{Account, Order, PayAccepted, RequestToken};
use api_types::{ErrorCode, OrderStatus, format_minor};
use uuid::Uuid;

/// Waits before each automatic re-send of a pay request that got no answer.
/// After the last one the page stops and offers a "Try again" button.
pub const SUBMIT_RETRY_DELAYS_MS: [u32; 4] = [250, 500, 1_000, 2_000];

/// How long to wait between two looks at an order being paid.
pub const POLL_INTERVAL_MS: u32 = 500;

/// How many looks before telling the shopper it is taking long (about a minute).
pub const MAX_POLLS: u32 = 120;

/// The delay before automatic re-send number `retry` (1-based), or `None`
/// when the page should stop retrying on its own.
pub fn submit_retry_delay(retry: u32) -> Option<u32> {
    let index = usize::try_from(retry.checked_sub(1)?).ok()?;
    SUBMIT_RETRY_DELAYS_MS.get(index).copied()
}

/// Where the payment page stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Fetching the order.
    LoadingOrder,
    /// The order could not be fetched; a retry button fetches it again.
    OrderUnavailable,
    /// The order is pending; asking the backend for a request token.
    FetchingToken,
    /// No token could be had (token store down, network); a retry button asks again.
    TokenUnavailable,
    /// A token is in hand: "Pay now" is enabled.
    Ready {
        /// The token the next "Pay now" submits.
        token: Uuid,
    },
    /// A pay request is in flight (or waiting for its backoff before a re-send).
    Submitting {
        /// The token being submitted; every re-send uses the same one.
        token: Uuid,
        /// 0 for the first send, then 1, 2, ... for automatic re-sends.
        retry: u32,
    },
    /// The pay request got no usable answer; "Try again" re-sends the same token.
    SubmitStalled {
        /// The token to re-send.
        token: Uuid,
    },
    /// The backend refused for lack of funds; nothing more to do on this page.
    Declined,
    /// The backend accepted the payment; polling the order until it is final.
    Processing {
        /// How many times the order was looked at since acceptance.
        polls: u32,
    },
    /// The order stayed pending for [`MAX_POLLS`] looks; "Check again" resumes.
    Slow,
    /// The order is PAID or FAILED.
    Done,
}

/// Something the page has to say to the shopper, shown in the live region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The order could not be loaded (network or server).
    OrderUnavailable,
    /// There is no order with that number.
    OrderNotFound,
    /// The payment service (token store) is down for now.
    ServiceUnavailable,
    /// The page could not reach the server.
    Offline,
    /// The old token was refused; a new one is ready. Nothing was charged.
    TokenRenewed,
    /// The balance does not cover the order.
    InsufficientFunds,
    /// Re-sending the same pay request because the last one got no answer.
    Retrying,
    /// The pay request kept failing; pressing "Try again" is safe.
    SubmitStalled,
    /// The order was already settled by another tab or an earlier attempt.
    AlreadySettled,
    /// The bank is taking longer than usual to confirm.
    Slow,
    /// Something unexpected answered; pressing again is safe.
    Unexpected,
}

impl Notice {
    /// The text shown and announced.
    pub fn text(self) -> &'static str {
        match self {
            Self::OrderUnavailable => "We could not load this order. Please try again.",
            Self::OrderNotFound => "We could not find this order. Please check the link.",
            Self::ServiceUnavailable => {
                "Payments are temporarily unavailable. Nothing was charged. Please try again in a moment."
            }
            Self::Offline => {
                "We could not reach the server. Check your connection; nothing was charged. Please try again."
            }
            Self::TokenRenewed => {
                "Your payment session expired, so nothing was charged. Please press \u{201c}Pay now\u{201d} again."
            }
            Self::InsufficientFunds => {
                "Your balance is too low for this order. Nothing was charged."
            }
            Self::Retrying => {
                "The connection is unstable; still trying to send your payment\u{2026}"
            }
            Self::SubmitStalled => {
                "We could not confirm that your payment was sent. Pressing \u{201c}Try again\u{201d} is safe: you will be charged at most once."
            }
            Self::AlreadySettled => "This order has already been settled.",
            Self::Slow => {
                "The bank is taking longer than usual. You will be charged at most once; check again in a moment."
            }
            Self::Unexpected => {
                "Something went wrong on our side. Pressing \u{201c}Try again\u{201d} is safe: you will be charged at most once."
            }
        }
    }

    /// A stable name for tests and styling (`data-notice`).
    pub fn code(self) -> &'static str {
        match self {
            Self::OrderUnavailable => "order-unavailable",
            Self::OrderNotFound => "order-not-found",
            Self::ServiceUnavailable => "service-unavailable",
            Self::Offline => "offline",
            Self::TokenRenewed => "token-renewed",
            Self::InsufficientFunds => "insufficient-funds",
            Self::Retrying => "retrying",
            Self::SubmitStalled => "submit-stalled",
            Self::AlreadySettled => "already-settled",
            Self::Slow => "slow",
            Self::Unexpected => "unexpected",
        }
    }

    /// True for problems (shown as an error), false for information.
    pub fn is_problem(self) -> bool {
        !matches!(self, Self::Retrying | Self::AlreadySettled | Self::Slow)
    }
}

/// Everything that can happen to the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `GET /api/orders/{order_no}` answered.
    OrderFetched(Order),
    /// `GET /api/orders/{order_no}` failed.
    OrderFetchFailed(ApiError),
    /// `POST .../request-token` answered.
    TokenIssued(RequestToken),
    /// `POST .../request-token` failed.
    TokenFailed(ApiError),
    /// The shopper pressed "Pay now".
    PayPressed,
    /// The shopper pressed the retry button ("Try again" / "Check again").
    RetryPressed,
    /// `POST .../pay` answered 202 (first answer or replay).
    PayAccepted(PayAccepted),
    /// `POST .../pay` failed.
    PayFailed(ApiError),
}

/// Work the page must do after a state change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Fetch the order after `delay_ms`; answers with `OrderFetched`/`OrderFetchFailed`.
    FetchOrder {
        /// Wait this long first (0: now).
        delay_ms: u32,
    },
    /// Ask for a request token; answers with `TokenIssued`/`TokenFailed`.
    IssueToken,
    /// Send the pay request after `delay_ms`; answers with `PayAccepted`/`PayFailed`.
    Submit {
        /// The token to send.
        token: Uuid,
        /// Wait this long first (0: now).
        delay_ms: u32,
    },
    /// Re-read the shopper's balance (the order reached a final state).
    RefreshBalance,
}

/// The whole state of one payment page load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayFlow {
    /// The order as last fetched.
    pub order: Option<Order>,
    /// Where the page stands.
    pub phase: Phase,
    /// What the page has to say, if anything.
    pub notice: Option<Notice>,
    /// Our payment id, once the backend accepted a pay request on this page.
    pub payment_id: Option<Uuid>,
    /// How many request tokens this page load asked for (for tests and diagnostics).
    pub tokens_requested: u32,
}

impl Default for PayFlow {
    fn default() -> Self {
        Self::new()
    }
}

impl PayFlow {
    /// A fresh page load: the order is being fetched.
    pub fn new() -> Self {
        Self {
            order: None,
            phase: Phase::LoadingOrder,
            notice: None,
            payment_id: None,
            tokens_requested: 0,
        }
    }

    /// The effects a fresh page load starts with.
    pub fn start() -> Vec<Effect> {
        vec![Effect::FetchOrder { delay_ms: 0 }]
    }

    /// Applies one event; returns what to do next. Events that do not fit the
    /// current phase (a late answer, a second click) change nothing.
    pub fn apply(&mut self, event: Event) -> Vec<Effect> {
        match (self.phase.clone(), event) {
            (Phase::LoadingOrder, Event::OrderFetched(order)) => self.order_loaded(order),
            (Phase::LoadingOrder, Event::OrderFetchFailed(err)) => {
                self.phase = Phase::OrderUnavailable;
                self.notice = Some(match err.code() {
                    Some(ErrorCode::OrderNotFound | ErrorCode::NotFound) => Notice::OrderNotFound,
                    _ if err.is_transport_failure() => Notice::Offline,
                    _ => Notice::OrderUnavailable,
                });
                vec![]
            }
            (Phase::OrderUnavailable, Event::RetryPressed) => self.reload_order(None),

            (Phase::FetchingToken, Event::TokenIssued(token)) => {
                self.phase = Phase::Ready {
                    token: token.request_token,
                };
                vec![]
            }
            (Phase::FetchingToken, Event::TokenFailed(err)) => {
                if err.code() == Some(ErrorCode::OrderNotPayable) {
                    return self.reload_order(Some(Notice::AlreadySettled));
                }
                self.phase = Phase::TokenUnavailable;
                self.notice = Some(problem_notice(&err));
                vec![]
            }
            (Phase::TokenUnavailable, Event::RetryPressed) => {
                self.notice = None;
                self.request_token()
            }

            (Phase::Ready { token }, Event::PayPressed) => {
                self.notice = None;
                self.phase = Phase::Submitting { token, retry: 0 };
                vec![Effect::Submit { token, delay_ms: 0 }]
            }
            (Phase::SubmitStalled { token }, Event::RetryPressed) => {
                self.notice = None;
                self.phase = Phase::Submitting { token, retry: 0 };
                vec![Effect::Submit { token, delay_ms: 0 }]
            }
            (Phase::Submitting { .. }, Event::PayAccepted(accepted)) => {
                self.notice = None;
                self.payment_id = Some(accepted.payment_id);
                self.phase = Phase::Processing { polls: 0 };
                vec![Effect::FetchOrder {
                    delay_ms: POLL_INTERVAL_MS,
                }]
            }
            (Phase::Submitting { token, retry }, Event::PayFailed(err)) => {
                self.submit_failed(token, retry, &err)
            }

            (Phase::Processing { polls }, Event::OrderFetched(order)) => {
                let done = order.status.is_final();
                self.order = Some(order);
                if done {
                    self.phase = Phase::Done;
                    self.notice = None;
                    vec![Effect::RefreshBalance]
                } else {
                    self.keep_polling(polls)
                }
            }
            (Phase::Processing { polls }, Event::OrderFetchFailed(_)) => self.keep_polling(polls),
            (Phase::Slow, Event::RetryPressed) => {
                self.notice = None;
                self.phase = Phase::Processing { polls: 0 };
                vec![Effect::FetchOrder { delay_ms: 0 }]
            }

            _ => vec![],
        }
    }

    fn order_loaded(&mut self, order: Order) -> Vec<Effect> {
        let status = order.status;
        self.order = Some(order);
        if status.is_final() {
            self.phase = Phase::Done;
            vec![Effect::RefreshBalance]
        } else {
            self.request_token()
        }
    }

    fn request_token(&mut self) -> Vec<Effect> {
        self.phase = Phase::FetchingToken;
        self.tokens_requested += 1;
        vec![Effect::IssueToken]
    }

    fn reload_order(&mut self, notice: Option<Notice>) -> Vec<Effect> {
        self.phase = Phase::LoadingOrder;
        self.notice = notice;
        vec![Effect::FetchOrder { delay_ms: 0 }]
    }

    fn submit_failed(&mut self, token: Uuid, retry: u32, err: &ApiError) -> Vec<Effect> {
        if err.is_transport_failure() {
            // The request may or may not have reached the backend: send the very
            // same token again, which the backend answers by replaying.
            let next = retry + 1;
            return match submit_retry_delay(next) {
                Some(delay_ms) => {
                    self.notice = Some(Notice::Retrying);
                    self.phase = Phase::Submitting { token, retry: next };
                    vec![Effect::Submit { token, delay_ms }]
                }
                None => {
                    self.notice = Some(Notice::SubmitStalled);
                    self.phase = Phase::SubmitStalled { token };
                    vec![]
                }
            };
        }
        match err.code() {
            Some(ErrorCode::TokenInvalid) => {
                let effects = self.request_token();
                self.notice = Some(Notice::TokenRenewed);
                effects
            }
            Some(ErrorCode::OrderNotPayable) => self.reload_order(Some(Notice::AlreadySettled)),
            Some(ErrorCode::InsufficientFunds) => {
                self.phase = Phase::Declined;
                self.notice = Some(Notice::InsufficientFunds);
                vec![]
            }
            _ => {
                self.phase = Phase::SubmitStalled { token };
                self.notice = Some(problem_notice(err));
                vec![]
            }
        }
    }

    fn keep_polling(&mut self, polls: u32) -> Vec<Effect> {
        let polls = polls + 1;
        if polls >= MAX_POLLS {
            self.phase = Phase::Slow;
            self.notice = Some(Notice::Slow);
            vec![]
        } else {
            self.phase = Phase::Processing { polls };
            vec![Effect::FetchOrder {
                delay_ms: POLL_INTERVAL_MS,
            }]
        }
    }

    /// What the page shows for this state.
    pub fn view(&self) -> PayView {
        let status = self.order.as_ref().map(|order| order.status);
        let pay_button = match &self.phase {
            Phase::FetchingToken => Some(PayButton {
                enabled: false,
                label: "Pay now",
                busy: false,
            }),
            Phase::Ready { .. } => Some(PayButton {
                enabled: true,
                label: "Pay now",
                busy: false,
            }),
            Phase::Submitting { .. } => Some(PayButton {
                enabled: false,
                label: "Paying\u{2026}",
                busy: true,
            }),
            _ => None,
        };
        let retry_label = match self.phase {
            Phase::OrderUnavailable | Phase::TokenUnavailable | Phase::SubmitStalled { .. } => {
                Some("Try again")
            }
            Phase::Slow => Some("Check again"),
            _ => None,
        };
        let progress = match self.phase {
            Phase::LoadingOrder => Some("Loading your order\u{2026}"),
            Phase::FetchingToken => Some("Preparing a secure payment\u{2026}"),
            Phase::Submitting { retry: 0, .. } => Some("Sending your payment\u{2026}"),
            Phase::Submitting { .. } => Some("Sending your payment again\u{2026}"),
            Phase::Processing { .. } => Some("Waiting for the bank to confirm\u{2026}"),
            _ => None,
        };
        let outcome = match self.order.as_ref() {
            Some(order) if self.phase == Phase::Done && order.status == OrderStatus::Paid => {
                Some(Outcome::Paid {
                    paid_at: order.paid_at.as_deref().map(format_timestamp),
                    payment_id: self.payment_id.map(|id| id.to_string()),
                })
            }
            Some(order) if self.phase == Phase::Done && order.status == OrderStatus::Failed => {
                Some(Outcome::Failed {
                    reason: order
                        .failure_reason
                        .clone()
                        .unwrap_or_else(|| "The payment was declined.".to_owned()),
                })
            }
            _ => None,
        };
        PayView {
            amount: self
                .order
                .as_ref()
                .map(|order| format_minor(order.amount_cents, order.currency)),
            status,
            pay_button,
            retry_label,
            progress,
            notice: self.notice,
            outcome,
        }
    }
}

fn problem_notice(err: &ApiError) -> Notice {
    if err.is_unavailable() {
        Notice::ServiceUnavailable
    } else if err.is_transport_failure() {
        Notice::Offline
    } else {
        Notice::Unexpected
    }
}

/// The pay button as shown; absent when paying is not possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayButton {
    /// Whether a press does anything.
    pub enabled: bool,
    /// Its text.
    pub label: &'static str,
    /// A request is in flight (`aria-busy`).
    pub busy: bool,
}

/// How a settled order ended, for the receipt or the failure panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Charged once.
    Paid {
        /// When, formatted for people.
        paid_at: Option<String>,
        /// Our payment id, when it was paid from this page load.
        payment_id: Option<String>,
    },
    /// Will never be charged.
    Failed {
        /// Why.
        reason: String,
    },
}

/// Everything the payment page renders, derived from [`PayFlow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayView {
    /// The formatted amount, once the order is known.
    pub amount: Option<String>,
    /// The order's status, once known.
    pub status: Option<OrderStatus>,
    /// The pay button, when paying is possible.
    pub pay_button: Option<PayButton>,
    /// The retry button's label, when there is something to retry.
    pub retry_label: Option<&'static str>,
    /// A progress line while something is in flight.
    pub progress: Option<&'static str>,
    /// A message for the shopper.
    pub notice: Option<Notice>,
    /// The receipt or failure reason, once final.
    pub outcome: Option<Outcome>,
}

/// The shopper's balance, formatted, when `account` is the one the order charges.
pub fn balance_text(order: Option<&Order>, account: Option<&Account>) -> Option<String> {
    let (order, account) = (order?, account?);
    (order.account_id == account.account_id)
        .then(|| format_minor(account.balance_cents, account.currency))
}

/// Shows an RFC 3339 UTC timestamp as `2025-01-31 14:05:09 UTC`; other text unchanged.
pub fn format_timestamp(rfc3339: &str) -> String {
    let trimmed = rfc3339.trim();
    let Some((date, time)) = trimmed.split_once('T') else {
        return trimmed.to_owned();
    };
    let utc = time.ends_with('Z') || time.ends_with("+00:00");
    let clock: String = time.chars().take(8).collect();
    let well_formed = date.len() == 10
        && clock.len() == 8
        && clock.chars().enumerate().all(|(i, c)| {
            if i == 2 || i == 5 {
                c == ':'
            } else {
                c.is_ascii_digit()
            }
        });
    if utc && well_formed {
        format!("{date} {clock} UTC")
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::{Currency, ErrorBody};
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn eur() -> Currency {
        "EUR".parse().expect("valid currency")
    }

    fn order(status: OrderStatus) -> Order {
        Order {
            order_no: "ORD1".into(),
            account_id: Uuid::nil(),
            amount_cents: 1_250,
            currency: eur(),
            status,
            created_at: "2025-01-31T14:00:00Z".into(),
            paid_at: (status == OrderStatus::Paid).then(|| "2025-01-31T14:05:09.123Z".into()),
            failure_reason: (status == OrderStatus::Failed).then(|| "card declined".into()),
        }
    }

    fn token(n: u128) -> RequestToken {
        RequestToken {
            request_token: Uuid::from_u128(n),
            expires_at: "2025-01-31T14:15:00Z".into(),
        }
    }

    fn accepted() -> PayAccepted {
        PayAccepted {
            order_no: "ORD1".into(),
            payment_id: Uuid::from_u128(99),
            status: OrderStatus::Pending,
        }
    }

    fn server_error(status: u16, code: ErrorCode) -> ApiError {
        ApiError::Server {
            status,
            body: ErrorBody::new(code, "x"),
            retry_after_secs: None,
        }
    }

    fn network() -> ApiError {
        ApiError::Network("connection refused".into())
    }

    /// A page that loaded a pending order and holds token 1.
    fn ready() -> PayFlow {
        let mut flow = PayFlow::new();
        assert_eq!(
            flow.apply(Event::OrderFetched(order(OrderStatus::Pending))),
            vec![Effect::IssueToken]
        );
        assert!(flow.apply(Event::TokenIssued(token(1))).is_empty());
        flow
    }

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
    fn many_clicks_submit_once() {
        let mut flow = ready();
        let first = flow.apply(Event::PayPressed);
        assert_eq!(
            first,
            vec![Effect::Submit {
                token: Uuid::from_u128(1),
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
            vec![Effect::RefreshBalance]
        );
        assert_eq!(flow.phase, Phase::Done);
        let view = flow.view();
        assert_eq!(view.status, Some(OrderStatus::Paid));
        assert_eq!(
            view.outcome,
            Some(Outcome::Paid {
                paid_at: Some("2025-01-31 14:05:09 UTC".into()),
                payment_id: Some(Uuid::from_u128(99).to_string()),
            })
        );
        assert_eq!(flow.tokens_requested, 1);
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
                vec![Effect::Submit { token, delay_ms }]
            );
            assert_eq!(flow.notice, Some(Notice::Retrying));
        }
        assert!(flow.apply(Event::PayFailed(network())).is_empty());
        assert_eq!(flow.phase, Phase::SubmitStalled { token });
        assert_eq!(flow.notice, Some(Notice::SubmitStalled));
        assert_eq!(flow.view().retry_label, Some("Try again"));
        // "Try again" re-sends the same token; no new token is asked for.
        assert_eq!(
            flow.apply(Event::RetryPressed),
            vec![Effect::Submit { token, delay_ms: 0 }]
        );
        assert_eq!(flow.tokens_requested, 1);
        // A gateway error page counts as "no answer" too.
        assert_eq!(
            flow.apply(Event::PayFailed(ApiError::Http { status: 502 })),
            vec![Effect::Submit {
                token,
                delay_ms: SUBMIT_RETRY_DELAYS_MS[0]
            }]
        );
    }

    #[test]
    fn a_refused_token_gets_exactly_one_fresh_token_and_the_shopper_presses_again() {
        let mut flow = ready();
        flow.apply(Event::PayPressed);
        let effects = flow.apply(Event::PayFailed(server_error(409, ErrorCode::TokenInvalid)));
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

        // The same outage while paying keeps the token for "Try again".
        let mut flow = ready();
        flow.apply(Event::PayPressed);
        assert!(flow.apply(Event::PayFailed(down)).is_empty());
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
            vec![Effect::RefreshBalance]
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
    fn the_balance_is_shown_only_for_the_account_the_order_charges() {
        let mut account = Account {
            account_id: Uuid::nil(),
            balance_cents: 100_000,
            currency: eur(),
        };
        let pending = order(OrderStatus::Pending);
        assert_eq!(
            balance_text(Some(&pending), Some(&account)).as_deref(),
            Some("1,000.00 EUR")
        );
        assert_eq!(balance_text(None, Some(&account)), None);
        assert_eq!(balance_text(Some(&pending), None), None);
        account.account_id = Uuid::from_u128(7);
        assert_eq!(balance_text(Some(&pending), Some(&account)), None);
    }

    #[test]
    fn timestamps_are_shown_in_utc_for_people() {
        assert_eq!(
            format_timestamp("2025-01-31T14:05:09Z"),
            "2025-01-31 14:05:09 UTC"
        );
        assert_eq!(
            format_timestamp("2025-01-31T14:05:09.5+00:00"),
            "2025-01-31 14:05:09 UTC"
        );
        assert_eq!(
            format_timestamp("2025-01-31T14:05:09+02:00"),
            "2025-01-31T14:05:09+02:00"
        );
        assert_eq!(format_timestamp("yesterday"), "yesterday");
    }
}
