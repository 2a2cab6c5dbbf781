//! The exactly-once checkout backend.
//!
//! Read it top down:
//! - a pay goes [`routes::pay`] -> [`tokens`] (Redis guarded `GETDEL`) -> [`db::attempts`] -> [`platform`];
//! - a callback goes [`routes::callbacks`] -> [`callback_signing`] (signature) -> [`charge`] (the one
//!   transaction) -> answer. Callback code never touches Redis.
//!
//! Errors: every handler returns [`error::ApiError`], which answers with the shared error body.

pub mod auth;
pub mod charge;
pub mod config;
pub mod db;
pub mod duplicates;
pub mod env;
pub mod error;
pub mod expiry;
pub mod extract;
pub mod faults;
pub mod group_commit;
pub mod idempotency;
pub mod invariants;
pub mod limits;
pub mod metrics;
pub mod openapi;
pub mod platform;
pub mod reconcile;
pub mod refunds;
pub mod routes;
pub mod schema;
pub mod serve;
pub mod settlement;
pub mod shutdown;
pub mod startup;
pub mod state;
pub mod static_files;
pub mod telemetry;
pub mod tokens;
pub mod web_security;
