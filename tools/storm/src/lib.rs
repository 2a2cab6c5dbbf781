//! The incident, replayed: many identical signed callbacks at once, the
//! platform's retries, a backend restart, one more retry — then the exactly-once
//! invariants checked from the database with the backend's own checker.
//!
//! - [`platform`]: signs and sends callbacks the way a payment platform does;
//! - [`incident`]: the scenario and its report;
//! - [`shop`]: a signed-in shopper and merchant-placed orders to pay;
//! - [`processes`] (the `testkit` crate): real processes a run or a fault test owns (the backend, Redis, PostgreSQL).

pub mod incident;
pub mod platform;
pub mod shop;
pub use testkit as processes;
