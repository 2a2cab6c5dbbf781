//! Plain SQL, one function per statement, one file per table. Every function
//! takes `impl PgExecutor` so it runs on the pool or inside a transaction, and is
//! traced. Every statement is a sqlx `query!`-family macro, checked against the
//! schema at compile time (offline, from the committed `.sqlx/`); enums and
//! currencies are read straight from rows with `AS "col: Type"` overrides. The
//! callback transaction's statements are files in `backend/sql/callback/`,
//! because the benchmark replays those same files.
//!
//! Constraint names used in error mapping are declared in `migrations/`.

pub mod accounts;
pub mod anomalies;
pub mod attempts;
pub mod books;
pub mod callbacks;
pub mod deliveries;
pub mod idempotency;
pub mod ledger;
pub mod merchants;
pub mod orders;
pub mod products;
pub mod reconciliation;
pub mod refunds;
pub mod review;
pub mod shoppers;
pub mod warm;

/// True when `err` is a unique violation of the named constraint or index.
pub fn is_unique_violation(err: &sqlx::Error, constraint: &str) -> bool {
    matches!(err, sqlx::Error::Database(db)
        if db.is_unique_violation() && db.constraint() == Some(constraint))
}
