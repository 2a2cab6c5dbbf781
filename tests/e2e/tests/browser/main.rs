//! Browser end-to-end tests of the payment page, in headless Chromium, against
//! the real backend (in-process, fresh PostgreSQL database, real Redis) serving
//! the built page from `dist/` (build it first: `scripts/build-frontend.sh`).
//!
//! Each test signs in through the `/signin` page (as a demo shopper) unless it
//! is about being signed out, and checks what the page shows against what the
//! database holds: tokens issued, payment attempts, ledger charges, refunds and
//! balances.

mod csp;
mod double_submit;
mod expired_token;
mod helpers;
mod many_clicks;
mod offline_while_paying;
mod ops_console;
mod ownership;
mod pay_once;
mod payment_methods;
mod qr_platforms;
mod redis_outage;
mod refunds;
mod reload_in_flight;
mod return_to_merchant;
mod sign_in;
mod sign_out;
mod trunk_serve;
