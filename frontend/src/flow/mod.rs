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
//! - a pay request that got no answer (or `PAY_IN_PROGRESS`) is repeated with
//!   the *same* token on a fixed backoff ([`SUBMIT_RETRY_DELAYS_MS`]), which
//!   the backend replays;
//! - a pay request that ended in doubt (the token refused, no answer after
//!   every re-send, an outage) is followed by reading the order, and the page
//!   follows the payment the order shows: it never says that nothing was
//!   charged unless the backend said so of this order;
//! - after the backend accepts, the order is polled until it is final;
//! - a final order's refunds are fetched each time the order is read final,
//!   and listed under the receipt.
//!
//! [`PayFlow::view`] says what the page shows for a state.
//!
//! The files split by the reason one would open them:
//!
//! - `rules.rs`: the reducer (states, events, effects, transitions, backoff);
//!   change it when the page should *behave* differently;
//! - `texts.rs`: every sentence and label the shopper reads, so wording is
//!   reviewed in one place without reading the rules;
//! - `view.rs`: what the page shows for a state ([`PayView`]);
//! - `tests/`: the rules and the view, as scenarios a shopper goes through.
//!
//! The page imports everything from here, so moving code between those files
//! never touches `pages/`.

mod rules;
mod texts;
mod view;

#[cfg(test)]
mod tests;

pub use rules::{
    Doubt, Effect, Event, MAX_POLLS, POLL_INTERVAL_MS, PayFlow, Phase, SUBMIT_RETRY_DELAYS_MS,
    submit_retry_delay,
};
pub use texts::{CHECKING_ORDER, Notice, RETURNING_SOON, SCAN_TO_PAY, STAY_HERE};
pub use view::{Outcome, PayButton, PayView, RETURN_AFTER_MS, RefundLine, WayBack, balance_text};
