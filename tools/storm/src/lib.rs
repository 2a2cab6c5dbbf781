//! The incident, replayed: a shopper pays the orders, then many identical
//! signed callbacks naming each payment arrive at once, the platform's retries,
//! a backend restart, one more retry — then the exactly-once invariants checked
//! from the database with the backend's own checker. Or the other incident: no
//! callback in time, the backend's active query settles the orders, and the
//! callbacks come late.
//!
//! - [`platform`]: signs and sends callbacks the way a payment platform does;
//! - [`incident`]: the scenario and its report;
//! - [`shop`]: a signed-in shopper, merchant-placed orders, and paying them;
//! - [`processes`] (the `testkit` crate): real processes a run or a fault test owns (the backend, Redis, PostgreSQL).

pub mod incident;
pub mod platform;
pub mod shop;
pub use testkit as processes;
