//! The exactly-once checkout backend.
//!
//! Layers, each importing only the ones below it (a test, `tests/api/module_graph.rs`,
//! keeps the module graph free of cycles):
//! - [`startup`] wires everything; [`http`] is everything axum (routes, extractors,
//!   middleware, the OpenAPI document) and holds no rule;
//! - one module per guarantee: [`pay`] (the token-guarded attempt and hold), [`charge`]
//!   (a callback charges at most once, in one transaction), [`refund`], [`active_query`],
//!   [`expiry`], [`reconcile`], [`idempotency`] (placing an order) and [`duplicates`];
//!   their pure rules live in the `checkout_rules` crate;
//! - [`platform`] (one connector per payment platform), [`db`] (storage only: plain SQL,
//!   one file per table) and [`infra`] (Redis and the request-token store, group commit,
//!   shutdown, metrics, logs, crash points).
//!
//! A pay goes [`http::routes::pay`] -> [`infra::tokens`] (Redis guarded `GETDEL`) -> [`pay`]
//! -> [`platform`]; a callback goes [`http::routes::callbacks`] -> [`callback_signing`]
//! (signature) -> [`charge`] (the one transaction) -> answer. Callback code never touches Redis.
//!
//! Errors: every handler returns [`error::ApiError`], which answers with the shared error body.

pub mod active_query;
pub mod callback;
pub mod charge;
pub mod config;
pub mod db;
pub mod duplicates;
pub mod env;
pub mod error;
pub mod expiry;
pub mod http;
pub mod idempotency;
pub mod infra;
pub mod invariants;
pub mod merchants;
pub mod pay;
pub mod platform;
pub mod reconcile;
pub mod refund;
pub mod schema;
pub mod startup;
pub mod state;
