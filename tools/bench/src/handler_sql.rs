//! Which of the product's statements each path of the callback handler runs,
//! for pgbench to replay. The benchmark reads the product's SQL (the
//! `backend::db` constants, each the text of a file in `backend/sql/callback/`);
//! it sets no rule for it: these lists live here, beside their one reader.

use backend::db::{accounts, attempts, callbacks, deliveries, ledger, orders};

/// The statements one path of the callback handler runs, in order: some on
/// their own (autocommit), then the rest between BEGIN and COMMIT. pgbench
/// replays exactly these. Each is the text of a file in
/// `backend/sql/callback/`, read through the backend's own constant for it (the
/// same file the query function runs with `sqlx::query_file!`), so what is
/// measured cannot drift from what runs.
#[derive(Debug, Clone, Copy)]
pub struct CallbackSql {
    /// Run one by one, each its own transaction.
    pub before_tx: &'static [&'static str],
    /// Run inside one transaction; empty for none.
    pub in_tx: &'static [&'static str],
}

impl CallbackSql {
    /// Every statement, in the order they run.
    pub fn statements(&self) -> impl Iterator<Item = &'static str> {
        self.before_tx.iter().chain(self.in_tx).copied()
    }
}

/// A new `payment.succeeded` for a PENDING order with its hold: one statement.
pub const NEW_CHARGE_SQL: CallbackSql = CallbackSql {
    before_tx: &[callbacks::CHARGE_IN_ONE_SQL],
    in_tx: &[],
};

/// A duplicate delivery: the same first statement finds the callback id and logs the delivery.
pub const DUPLICATE_SQL: CallbackSql = CallbackSql {
    before_tx: &[callbacks::CHARGE_IN_ONE_SQL],
    in_tx: &[],
};

/// The same work as [`NEW_CHARGE_SQL`] done by the general path, statement by
/// statement: the duplicate lookup, then the transaction `apply_in_tx` runs
/// for a new success (`backend::charge`). What the handler ran for every new callback before the
/// one statement, and still runs for every case that statement leaves alone;
/// the benchmark replays it one round trip per statement and pipelined.
pub const GENERAL_CHARGE_SQL: CallbackSql = CallbackSql {
    before_tx: &[callbacks::SEEN_SQL],
    in_tx: &[
        orders::LOCK_WITH_ACCOUNT_SQL,
        callbacks::INSERT_SQL,
        ledger::INSERT_CHARGE_SQL,
        orders::MARK_PAID_SQL,
        accounts::DEDUCT_SQL,
        attempts::SETTLE_SQL,
        deliveries::RECORD_SQL,
    ],
};

/// The least a duplicate can cost: one statement that finds the id and logs the delivery.
pub const DUPLICATE_LOOKUP_SQL: CallbackSql = CallbackSql {
    before_tx: &[callbacks::SEEN_SQL],
    in_tx: &[],
};
