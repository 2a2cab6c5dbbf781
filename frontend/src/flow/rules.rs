//! The rules of the pay flow: states, events, effects and the transitions
//! between them. Nothing here knows about the browser, the words on the page
//! or how a state is drawn, so every rule is a plain function call in a test.

use super::texts::Notice;
use crate::api::{ApiError, RefundSummary};
use api_types::api::{Order, PayAccepted, PlatformInfo, RequestToken};
use api_types::{ErrorCode, PaymentMethod};
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
    /// A pay request ended without the backend saying what became of this
    /// order's payment (the token was refused, the request kept failing, an
    /// outage): reading the order before saying anything, because another
    /// submit of this page may have charged it.
    Verifying {
        /// The token last submitted, for "Try again" if the order says nothing.
        token: Uuid,
        /// What the pay request ended with.
        doubt: Doubt,
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
    /// The order is final (PAID, FAILED, CLOSED or REFUNDED): the page shows
    /// the receipt or the failure, and the order's refunds once they arrive.
    Done,
    /// The backend said the session is gone (401 `UNAUTHENTICATED`): the page
    /// is on its way to the sign-in page, which brings the shopper back here.
    SignedOut,
}

/// How a pay request ended without an answer about the order's payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doubt {
    /// `TOKEN_INVALID`: this token will not pay; if the order has no payment
    /// either, a fresh token is fetched.
    TokenRefused,
    /// No answer, or `PAY_IN_PROGRESS`, through every automatic re-send.
    NoAnswer,
    /// The backend or a part of it is down for now (503).
    Unavailable,
    /// An answer without a rule of its own.
    Unexpected,
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
    /// `GET /api/orders/{order_no}/refunds` answered (oldest first).
    RefundsFetched(Vec<RefundSummary>),
    /// `GET /api/orders/{order_no}/refunds` failed.
    RefundsFetchFailed(ApiError),
    /// `GET /api/platform` answered: which platform takes the payments, and
    /// the payment methods it offers.
    PlatformRead(PlatformInfo),
    /// The shopper chose how to pay (one of [`PayFlow::choices`]).
    MethodChosen(PaymentMethod),
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
        /// The payment method to name; `None` (the backend's default) when
        /// the page did not know the platform's methods at the press.
        method: Option<PaymentMethod>,
        /// Wait this long first (0: now).
        delay_ms: u32,
    },
    /// Re-read the shopper's balance (the order reached a final state).
    RefreshBalance,
    /// Fetch the final order's refunds; answers with `RefundsFetched`/`RefundsFetchFailed`.
    FetchRefunds,
    /// Go to the sign-in page, which returns to this page afterwards.
    SignIn,
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
    /// The final order's refunds as last fetched, oldest first; empty until
    /// they arrive, when there are none, or when they could not be read.
    pub refunds: Vec<RefundSummary>,
    /// Which platform takes the payments (`GET /api/platform`'s `platform`);
    /// empty until read.
    pub platform: String,
    /// The payment methods it offers, the default first; empty until read.
    pub methods: Vec<PaymentMethod>,
    /// What this page pays with: the platform's default until the shopper
    /// chooses another; from "Pay now" on, what the pay names, and once the
    /// backend accepted it, the method of the order's attempt (which a second
    /// page for the order joins). `None` until the platform is read.
    pub method: Option<PaymentMethod>,
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
            refunds: Vec::new(),
            platform: String::new(),
            methods: Vec::new(),
            method: None,
        }
    }

    /// The effects a fresh page load starts with.
    pub fn start() -> Vec<Effect> {
        vec![Effect::FetchOrder { delay_ms: 0 }]
    }

    /// Applies one event; returns what to do next. Events that do not fit the
    /// current phase (a late answer, a second click) change nothing.
    ///
    /// Any answer saying the session is gone, in any phase, ends the page's
    /// work: nothing was charged by a request the backend refused that way, and
    /// after signing in the shopper comes back to a fresh page load.
    pub fn apply(&mut self, event: Event) -> Vec<Effect> {
        if self.phase == Phase::SignedOut {
            return vec![];
        }
        if event_error(&event).is_some_and(ApiError::is_unauthenticated) {
            self.phase = Phase::SignedOut;
            self.notice = Some(Notice::SignedOut);
            return vec![Effect::SignIn];
        }
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

            (Phase::Ready { token }, Event::PayPressed)
            | (Phase::SubmitStalled { token }, Event::RetryPressed) => {
                self.notice = None;
                self.phase = Phase::Submitting { token, retry: 0 };
                vec![self.submit(token, 0)]
            }
            (Phase::Submitting { .. }, Event::PayAccepted(accepted)) => {
                self.notice = None;
                self.payment_id = Some(accepted.payment_id);
                self.method = Some(accepted.method);
                self.phase = Phase::Processing { polls: 0 };
                vec![Effect::FetchOrder {
                    delay_ms: POLL_INTERVAL_MS,
                }]
            }
            (Phase::Submitting { token, retry }, Event::PayFailed(err)) => {
                self.submit_failed(token, retry, &err)
            }

            (Phase::Verifying { token, doubt }, Event::OrderFetched(order)) => {
                self.verified(token, doubt, order)
            }
            (Phase::Verifying { token, .. }, Event::OrderFetchFailed(_)) => {
                // Nothing is known of the order: say so, and keep the token,
                // whose re-send is replayed if it did pay.
                self.phase = Phase::SubmitStalled { token };
                self.notice = Some(Notice::SubmitStalled);
                vec![]
            }

            (Phase::Processing { polls }, Event::OrderFetched(order)) => {
                let done = order.status.is_final();
                self.order = Some(order);
                if done {
                    self.notice = None;
                    self.settled()
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

            (Phase::Done, Event::RefundsFetched(refunds)) => {
                self.refunds = refunds;
                vec![]
            }
            // The receipt stands without the list (or with the list as last
            // read); the order's own status still says whether it was refunded.
            (Phase::Done, Event::RefundsFetchFailed(_)) => vec![],

            (_, Event::PlatformRead(info)) => {
                self.method = self.method.or(info.methods.first().copied());
                self.platform = info.platform;
                self.methods = info.methods;
                vec![]
            }
            (_, Event::MethodChosen(method)) => {
                if self.choices().contains(&method) {
                    self.method = Some(method);
                }
                vec![]
            }

            _ => vec![],
        }
    }

    /// The methods the shopper may choose between now: every one offered,
    /// when there are several, until "Pay now" is pressed or the order has a
    /// payment attempt (whose method then pays); else none.
    pub fn choices(&self) -> &[PaymentMethod] {
        let open = matches!(
            self.phase,
            Phase::FetchingToken | Phase::TokenUnavailable | Phase::Ready { .. }
        ) && self
            .order
            .as_ref()
            .is_some_and(|order| order.payment_method.is_none());
        if open && self.methods.len() > 1 {
            &self.methods
        } else {
            &[]
        }
    }

    /// The pay request for `token`, naming this page's method.
    fn submit(&self, token: Uuid, delay_ms: u32) -> Effect {
        Effect::Submit {
            token,
            method: self.method,
            delay_ms,
        }
    }

    fn order_loaded(&mut self, order: Order) -> Vec<Effect> {
        let status = order.status;
        self.order = Some(order);
        if status.is_final() {
            self.settled()
        } else {
            self.request_token()
        }
    }

    /// The order just read is final: show it, re-read the balance it may have
    /// moved, and fetch its refunds (each time the order is read final again).
    fn settled(&mut self) -> Vec<Effect> {
        self.phase = Phase::Done;
        vec![Effect::RefreshBalance, Effect::FetchRefunds]
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

    /// A pay request failed. Only a refusal about this order (insufficient
    /// funds, not payable) is taken at its word; every other failure is a
    /// doubt, settled by re-sending the same token (no answer, or another
    /// submit of it still being recorded) or by reading the order: the page
    /// never says nothing was charged unless the backend said so of this order.
    fn submit_failed(&mut self, token: Uuid, retry: u32, err: &ApiError) -> Vec<Effect> {
        let in_progress = err.code() == Some(ErrorCode::PayInProgress);
        if err.is_transport_failure() || in_progress {
            // The request may or may not have reached the backend (or another
            // submit of the token is being recorded): send the very same token
            // again, which the backend answers by replaying.
            let next = retry + 1;
            return match submit_retry_delay(next) {
                Some(delay_ms) => {
                    let delay_ms = if in_progress {
                        delay_ms.max(retry_after_ms(err))
                    } else {
                        delay_ms
                    };
                    self.notice = Some(if in_progress {
                        Notice::BeingRecorded
                    } else {
                        Notice::Retrying
                    });
                    self.phase = Phase::Submitting { token, retry: next };
                    vec![self.submit(token, delay_ms)]
                }
                None => self.verify(token, Doubt::NoAnswer),
            };
        }
        match err.code() {
            Some(ErrorCode::TokenInvalid) => self.verify(token, Doubt::TokenRefused),
            Some(ErrorCode::OrderNotPayable) => self.reload_order(Some(Notice::AlreadySettled)),
            Some(ErrorCode::InsufficientFunds) => {
                // The wallet could not pay and its token is spent. Where the
                // platform offers another method, it is chosen for the shopper
                // and a new token fetched, so "Pay now" pays that way.
                let other = self
                    .methods
                    .iter()
                    .copied()
                    .find(|&method| method != PaymentMethod::Wallet);
                match other {
                    Some(other) if self.method == Some(PaymentMethod::Wallet) => {
                        self.method = Some(other);
                        let effects = self.request_token();
                        self.notice = Some(Notice::InsufficientFundsPayAnotherWay);
                        effects
                    }
                    _ => {
                        self.phase = Phase::Declined;
                        self.notice = Some(Notice::InsufficientFunds);
                        vec![]
                    }
                }
            }
            Some(ErrorCode::PaymentMethodUnavailable) => {
                // Refused before the token was touched: it still pays. The
                // method is dropped from the choice, and the next offered (or,
                // with none left, the backend's default) is named instead.
                let refused = self.method;
                self.methods.retain(|&method| Some(method) != refused);
                self.method = self.methods.first().copied();
                self.phase = Phase::Ready { token };
                self.notice = Some(Notice::MethodUnavailable);
                vec![]
            }
            _ if err.is_unavailable() => self.verify(token, Doubt::Unavailable),
            _ => self.verify(token, Doubt::Unexpected),
        }
    }

    /// Reads the order before saying anything about a pay that ended in doubt.
    fn verify(&mut self, token: Uuid, doubt: Doubt) -> Vec<Effect> {
        self.phase = Phase::Verifying { token, doubt };
        self.notice = None;
        vec![Effect::FetchOrder { delay_ms: 0 }]
    }

    /// The order as read after a doubt: a payment it has is followed to its
    /// end; only an order without one lets the page say nothing was charged.
    fn verified(&mut self, token: Uuid, doubt: Doubt, order: Order) -> Vec<Effect> {
        let status = order.status;
        let paying = order.payment_status.is_some();
        self.order = Some(order);
        if status.is_final() {
            self.notice = None;
            return self.settled();
        }
        if paying {
            self.notice = None;
            self.phase = Phase::Processing { polls: 0 };
            return vec![Effect::FetchOrder {
                delay_ms: POLL_INTERVAL_MS,
            }];
        }
        match doubt {
            Doubt::TokenRefused => {
                let effects = self.request_token();
                self.notice = Some(Notice::TokenRenewed);
                effects
            }
            Doubt::NoAnswer => {
                self.phase = Phase::SubmitStalled { token };
                self.notice = Some(Notice::SubmitStalled);
                vec![]
            }
            Doubt::Unavailable => {
                self.phase = Phase::SubmitStalled { token };
                self.notice = Some(Notice::ServiceUnavailable);
                vec![]
            }
            Doubt::Unexpected => {
                self.phase = Phase::SubmitStalled { token };
                self.notice = Some(Notice::Unexpected);
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
}

/// The wait a `Retry-After` asked for, in milliseconds (a second when absent).
fn retry_after_ms(err: &ApiError) -> u32 {
    match err {
        ApiError::Server {
            retry_after_secs: Some(secs),
            ..
        } => secs.saturating_mul(1_000).min(10_000),
        _ => 1_000,
    }
}

/// The error an event carries, if it is a failed request.
fn event_error(event: &Event) -> Option<&ApiError> {
    match event {
        Event::OrderFetchFailed(err)
        | Event::TokenFailed(err)
        | Event::PayFailed(err)
        | Event::RefundsFetchFailed(err) => Some(err),
        _ => None,
    }
}

/// A failure without a rule of its own still tells the shopper whether to
/// wait (outage) or check their connection (offline); anything else is unexpected.
fn problem_notice(err: &ApiError) -> Notice {
    if err.is_unavailable() {
        Notice::ServiceUnavailable
    } else if err.is_transport_failure() {
        Notice::Offline
    } else {
        Notice::Unexpected
    }
}
