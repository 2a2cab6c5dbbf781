//! Browser end-to-end tests of the payment page.
//!
//! Everything lives in the one test binary `tests/browser/`: it starts the real
//! backend in-process (fresh PostgreSQL database, real Redis) serving the built
//! page from `dist/`, drives headless Chromium through chromedriver, and checks
//! what the page shows against what the database holds. See `docs/FRONTEND.md`.
