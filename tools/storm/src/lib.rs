//! The incident, replayed: a shopper pays the orders, then many identical
//! signed callbacks naming each payment arrive at once, the platform's retries,
//! a backend restart, one more retry — then the exactly-once invariants checked
//! from the database with the backend's own checker. Or the other incident: no
//! callback in time, the backend's active query settles the orders, and the
//! callbacks come late. Or, once the orders are PAID, the refund incident: the
//! merchant refunds each order, and its refund result arrives the same way.
//!
//! - [`platform`]: signs and sends callbacks the way a payment platform does,
//!   in its own format (the checkout's Standard Webhooks, WeChat Pay API v3,
//!   Alipay: `storm --platform`), and serves a platform outside the backend
//!   that posts none;
//! - [`incident`]: the scenario and its report;
//! - [`refunds`]: the refund incident and its report;
//! - [`shop`]: a signed-in shopper, merchant-placed orders, paying them, and the merchant refunding them;
//! - [`processes`] (the `testkit` crate): real processes a run or a fault test owns (the backend, Redis, PostgreSQL).

pub mod incident;
pub mod platform;
pub mod refunds;
pub mod shop;
pub use testkit as processes;

/// Drops database `name` on the PostgreSQL server at `server`
/// (`postgres://user@host:port`, no database); `FORCE` ends any connection
/// still open to it. What storm and the benchmark made for a run goes this way.
pub async fn drop_database(server: &str, name: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&format!("{server}/postgres")).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&mut conn)
        .await
        .with_context(|| format!("cannot drop database {name}"))?;
    Ok(())
}
