//! The exactly-once invariants, checked from the database alone. Used by the
//! integration tests after every scenario, and by anything that replays traffic.
//!
//! 1. one ledger row per callback id;
//! 2. at most one `CHARGE` per order;
//! 3. an order is PAID exactly when it has one `CHARGE`, equal to its amount and currency;
//! 4. per account: opening balance - current balance = sum of its `CHARGE` rows, and never negative;
//! 5. a PAID order has `paid_at`, a FAILED one a reason, a PENDING one neither.
//!
//! Per-order checks matter: conservation alone (4) would miss a double charge of
//! one order that was balanced by a missing charge of another.

use sqlx::PgPool;

/// What was counted when all invariants held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Orders checked.
    pub orders: i64,
    /// Orders PAID.
    pub paid: i64,
    /// Orders FAILED.
    pub failed: i64,
    /// Orders still PENDING.
    pub pending: i64,
    /// `CHARGE` rows in the ledger.
    pub charges: i64,
    /// Accounts checked.
    pub accounts: i64,
}

/// Every violated invariant, each described for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} invariant violation(s):\n{}", .0.len(), .0.join("\n"))]
pub struct Violations(pub Vec<String>);

/// Checks all invariants; `Err` lists every violation found.
pub async fn check(db: &PgPool) -> anyhow::Result<Result<Report, Violations>> {
    let mut violations = Vec::new();

    let repeated_callbacks: Vec<(String, i64)> = sqlx::query_as(
        "SELECT callback_id, count(*) FROM payment_ledger GROUP BY callback_id HAVING count(*) > 1",
    )
    .fetch_all(db)
    .await?;
    for (callback_id, count) in repeated_callbacks {
        violations.push(format!("callback {callback_id} has {count} ledger rows"));
    }

    let double_charged: Vec<(String, i64)> = sqlx::query_as(
        "SELECT order_no, count(*) FROM payment_ledger WHERE kind = 'CHARGE'
         GROUP BY order_no HAVING count(*) > 1",
    )
    .fetch_all(db)
    .await?;
    for (order_no, count) in double_charged {
        violations.push(format!("order {order_no} was charged {count} times"));
    }

    let inconsistent_orders: Vec<(String, String, i64, i64, Option<i64>)> = sqlx::query_as(
        "SELECT o.order_no, o.status, o.amount_cents, coalesce(l.charges, 0), l.charged
         FROM orders o
         LEFT JOIN (SELECT order_no, count(*) AS charges, sum(amount_cents)::bigint AS charged,
                           bool_and(currency = (SELECT currency FROM orders WHERE order_no = pl.order_no)) AS same_currency
                    FROM payment_ledger pl WHERE kind = 'CHARGE' GROUP BY order_no) l
           ON l.order_no = o.order_no
         WHERE (o.status = 'PAID') IS DISTINCT FROM
               (coalesce(l.charges, 0) = 1 AND l.charged = o.amount_cents AND l.same_currency)",
    )
    .fetch_all(db)
    .await?;
    for (order_no, status, amount, charges, charged) in inconsistent_orders {
        violations.push(format!(
            "order {order_no} is {status} (amount {amount}) but has {charges} charge(s) totalling {}",
            charged.unwrap_or(0)
        ));
    }

    let unbalanced: Vec<(uuid::Uuid, i64, i64, i64)> = sqlx::query_as(
        "SELECT a.account_id, a.opening_balance_cents, a.balance_cents, coalesce(sum(l.amount_cents), 0)::bigint
         FROM accounts a
         LEFT JOIN payment_ledger l ON l.account_id = a.account_id AND l.kind = 'CHARGE'
         GROUP BY a.account_id
         HAVING a.opening_balance_cents - a.balance_cents <> coalesce(sum(l.amount_cents), 0)
             OR a.balance_cents < 0",
    )
    .fetch_all(db)
    .await?;
    for (account_id, opening, balance, charged) in unbalanced {
        violations.push(format!(
            "account {account_id}: opening {opening} - balance {balance} = {} but charges total {charged}",
            opening - balance
        ));
    }

    let malformed: Vec<(String, String)> = sqlx::query_as(
        "SELECT order_no, status FROM orders
         WHERE (status = 'PAID') <> (paid_at IS NOT NULL)
            OR (status = 'FAILED') <> (failure_reason IS NOT NULL)",
    )
    .fetch_all(db)
    .await?;
    for (order_no, status) in malformed {
        violations.push(format!(
            "order {order_no} is {status} with inconsistent paid_at/failure_reason"
        ));
    }

    if !violations.is_empty() {
        return Ok(Err(Violations(violations)));
    }
    let (orders, paid, failed, pending): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE status = 'PAID'), count(*) FILTER (WHERE status = 'FAILED'),
                count(*) FILTER (WHERE status = 'PENDING') FROM orders",
    )
    .fetch_one(db)
    .await?;
    let charges: i64 =
        sqlx::query_scalar("SELECT count(*) FROM payment_ledger WHERE kind = 'CHARGE'")
            .fetch_one(db)
            .await?;
    let accounts: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(db)
        .await?;
    Ok(Ok(Report {
        orders,
        paid,
        failed,
        pending,
        charges,
        accounts,
    }))
}
