//! Browser end-to-end tests of the payment page, in headless Chromium, against
//! the real backend (in-process, fresh PostgreSQL database, real Redis) serving
//! the built page from `dist/` (build it first: `scripts/build-frontend.sh`).
//!
//! Each test checks what the page shows against what the database holds:
//! tokens issued, payment attempts, ledger charges and the balance.

mod expired_token;
mod helpers;
mod many_clicks;
mod offline_while_paying;
mod pay_once;
mod redis_outage;
mod reload_in_flight;
