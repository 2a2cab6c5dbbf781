//! Everything HTTP: the routes, the extractors and middleware, who is calling,
//! the OpenAPI document and the server loop. No rule lives here: a handler
//! reads the request, calls the guarantee's module, and shapes the answer.

pub mod auth;
pub mod extract;
pub mod limits;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod serve;
pub mod static_files;
pub mod web_security;
