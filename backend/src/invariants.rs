//! The exactly-once invariants, checked from the database alone. Used by the
//! integration tests after every scenario, and by anything that replays traffic.
//!
//! 1. one ledger row per callback id;
//! 2. at most one `CHARGE` per order;
//! 3. an order is PAID or REFUNDED exactly when it has one `CHARGE`, equal to its amount and currency;
//! 4. per account: opening balance - current balance = sum of its `CHARGE` rows
//!    minus sum of its `REFUND` rows of the orders its wallet paid (a platform
//!    payment and its refunds never touch the wallet), and never negative;
//! 5. a PAID order has `paid_at`, a FAILED one a reason, a PENDING one neither;
//! 6. per account: held = sum of the amounts of its PENDING orders that have a
//!    wallet payment attempt, and balance >= held >= 0 (funds held at pay; a
//!    platform payment holds nothing);
//! 7. an attempt agrees with its order: SUCCEEDED exactly when the order is
//!    PAID, FAILED only for a FAILED order, CLOSED only for a CLOSED one, and an
//!    open attempt only for a PENDING one;
//! 8. every `CHARGE` names the platform payment of its order's attempt: nothing
//!    is charged for a payment we did not hand over;
//! 9. refunds: per order, REFUND rows = succeeded refunds = `refunded_cents` <=
//!    the charge, pending + succeeded refunds = `refund_reserved_cents`, REFUNDED
//!    exactly when all of the charge went back; a refund has one REFUND row
//!    exactly when it SUCCEEDED (so a refund number credits at most once);
//!    automatic refunds stand outside these sums (see 10);
//! 10. every automatic refund matches one unbookable platform payment: it gives
//!     back in full a success whose callback (or query answer) booked nothing,
//!     of a platform payment no CHARGE names, at most one per platform payment;
//!     and every such success has its automatic refund (except the order's own
//!     payment named under a wrong reference while PENDING: it may still be charged).
//!
//! 11. the double-entry books (`transfers`) agree: every wallet's balance is its
//!     posted credits less its posted debits and its hold its unresolved HOLDs,
//!     and never spends more than that leaves (`ledger_balances`); per order,
//!     charged - refunded equals the merchant's entries for it, and a
//!     merchant's account moves only for that merchant's orders; every
//!     CHARGE and REFUND row has its transfer and no transfer lacks its row; the
//!     suspense account holds exactly the automatic refunds not yet given back;
//!     a hold is open only while its order is PENDING. (In each currency all
//!     debits equal all credits by construction: a transfer is one row, both sides
//!     in its currency by foreign key.)
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

    let repeated_callbacks = sqlx::query!(
        r#"SELECT callback_id, count(*) AS "count!" FROM payment_ledger
           GROUP BY callback_id HAVING count(*) > 1"#
    )
    .fetch_all(db)
    .await?;
    for row in repeated_callbacks {
        violations.push(format!(
            "callback {} has {} ledger rows",
            row.callback_id, row.count
        ));
    }

    let double_charged = sqlx::query!(
        r#"SELECT order_no, count(*) AS "count!" FROM payment_ledger WHERE kind = 'CHARGE'
           GROUP BY order_no HAVING count(*) > 1"#
    )
    .fetch_all(db)
    .await?;
    for row in double_charged {
        violations.push(format!(
            "order {} was charged {} times",
            row.order_no, row.count
        ));
    }

    let inconsistent_orders = sqlx::query!(
        r#"SELECT o.order_no, o.status, o.amount_cents,
                  coalesce(l.charges, 0) AS "charges!", l.charged AS "charged?"
           FROM orders o
           LEFT JOIN (SELECT order_no, count(*) AS charges, sum(amount_cents)::bigint AS charged,
                             bool_and(currency = (SELECT currency FROM orders WHERE order_no = pl.order_no)) AS same_currency
                      FROM payment_ledger pl WHERE kind = 'CHARGE' GROUP BY order_no) l
             ON l.order_no = o.order_no
           WHERE (o.status IN ('PAID', 'REFUNDED')) IS DISTINCT FROM
                 (coalesce(l.charges, 0) = 1 AND l.charged = o.amount_cents AND l.same_currency)"#
    )
    .fetch_all(db)
    .await?;
    for row in inconsistent_orders {
        violations.push(format!(
            "order {} is {} (amount {}) but has {} charge(s) totalling {}",
            row.order_no,
            row.status,
            row.amount_cents,
            row.charges,
            row.charged.unwrap_or(0)
        ));
    }

    let unbalanced = sqlx::query!(
        r#"SELECT a.account_id, a.opening_balance_cents, a.balance_cents,
                  coalesce(sum(l.amount_cents) FILTER (WHERE l.kind = 'CHARGE'), 0)::bigint AS "charged!",
                  coalesce(sum(l.amount_cents) FILTER (WHERE l.kind = 'REFUND'), 0)::bigint AS "refunded!"
           FROM accounts a
           LEFT JOIN (SELECT l.* FROM payment_ledger l JOIN payment_attempts p ON p.order_no = l.order_no
                      WHERE p.method = 'wallet') l ON l.account_id = a.account_id
           GROUP BY a.account_id
           HAVING a.opening_balance_cents - a.balance_cents
                      <> coalesce(sum(l.amount_cents) FILTER (WHERE l.kind = 'CHARGE'), 0)
                         - coalesce(sum(l.amount_cents) FILTER (WHERE l.kind = 'REFUND'), 0)
               OR a.balance_cents < 0"#
    )
    .fetch_all(db)
    .await?;
    for row in unbalanced {
        violations.push(format!(
            "account {}: opening {} - balance {} = {} but wallet charges {} - refunds {} = {}",
            row.account_id,
            row.opening_balance_cents,
            row.balance_cents,
            row.opening_balance_cents - row.balance_cents,
            row.charged,
            row.refunded,
            row.charged - row.refunded
        ));
    }

    let misrefunded = sqlx::query!(
        r#"SELECT o.order_no, o.status, o.amount_cents, o.refunded_cents, o.refund_reserved_cents,
                  coalesce(l.booked, 0)::bigint AS "booked!", coalesce(r.succeeded, 0)::bigint AS "succeeded!",
                  coalesce(r.reserved, 0)::bigint AS "reserved!"
           FROM orders o
           LEFT JOIN (SELECT order_no, sum(amount_cents) AS booked FROM payment_ledger
                      WHERE kind = 'REFUND' GROUP BY order_no) l ON l.order_no = o.order_no
           LEFT JOIN (SELECT order_no,
                             sum(amount_cents) FILTER (WHERE status = 'SUCCEEDED') AS succeeded,
                             sum(amount_cents) FILTER (WHERE status IN ('PENDING', 'SUCCEEDED')) AS reserved
                      FROM refunds WHERE requested_by <> 'automatic' GROUP BY order_no) r ON r.order_no = o.order_no
           WHERE coalesce(l.booked, 0) <> o.refunded_cents
              OR coalesce(r.succeeded, 0) <> o.refunded_cents
              OR coalesce(r.reserved, 0) <> o.refund_reserved_cents
              OR o.refunded_cents > o.amount_cents
              OR (o.status = 'REFUNDED') <> (o.refunded_cents = o.amount_cents AND o.refunded_cents > 0)"#
    )
    .fetch_all(db)
    .await?;
    for row in misrefunded {
        violations.push(format!(
            "order {} ({}, charged {}): refunded {} and reserved {} on the order, but REFUND rows total {}, \
             succeeded refunds {} and pending+succeeded refunds {}",
            row.order_no,
            row.status,
            row.amount_cents,
            row.refunded_cents,
            row.refund_reserved_cents,
            row.booked,
            row.succeeded,
            row.reserved
        ));
    }

    let refund_rows = sqlx::query!(
        r#"SELECT r.refund_no, r.status, count(l.entry_id) AS "rows!"
           FROM refunds r LEFT JOIN payment_ledger l ON l.refund_no = r.refund_no AND l.kind = 'REFUND'
           GROUP BY r.refund_no, r.status, r.requested_by
           HAVING count(l.entry_id)
                  <> CASE WHEN r.status = 'SUCCEEDED' AND r.requested_by <> 'automatic' THEN 1 ELSE 0 END"#
    )
    .fetch_all(db)
    .await?;
    for row in refund_rows {
        violations.push(format!(
            "refund {} is {} with {} REFUND ledger row(s)",
            row.refund_no, row.status, row.rows
        ));
    }

    // 10. An unbookable success: a payment.succeeded whose outcome booked nothing
    // although it was news (a success for our own, already charged payment is not).
    let unmatched = sqlx::query!(
        r#"SELECT r.refund_no AS "refund_no?", c.callback_id AS "callback_id?",
                  coalesce(r.platform_payment_id, c.payment_id) AS "platform_payment_id!",
                  coalesce(r.order_no, c.order_no) AS "order_no!"
           FROM (SELECT * FROM refunds WHERE requested_by = 'automatic') r
           FULL JOIN (SELECT * FROM payment_callbacks pc
                      WHERE event_type = 'payment.succeeded'
                        AND outcome IN ('IGNORED_UNSOLICITED', 'IGNORED_REFERENCE_MISMATCH',
                                        'IGNORED_ANOMALY', 'ORDER_FAILED_INSUFFICIENT_FUNDS')
                        -- Not unbooked: a payment a CHARGE names, or the order's own
                        -- payment named under a wrong reference while it was PENDING.
                        AND NOT EXISTS (SELECT 1 FROM payment_ledger l
                                        WHERE l.kind = 'CHARGE' AND l.payment_id = pc.payment_id)
                        AND NOT (outcome = 'IGNORED_REFERENCE_MISMATCH'
                                 AND EXISTS (SELECT 1 FROM payment_attempts p
                                             WHERE p.order_no = pc.order_no
                                               AND p.platform_payment_id = pc.payment_id))) c
                ON c.payment_id = r.platform_payment_id AND c.order_no = r.order_no
           LEFT JOIN orders o ON o.order_no = r.order_no
           LEFT JOIN payment_callbacks cause ON cause.callback_id = r.cause_callback_id
           WHERE r.refund_no IS NULL OR c.callback_id IS NULL
              OR cause.payment_id IS DISTINCT FROM r.platform_payment_id
              OR r.amount_cents <> o.amount_cents OR r.currency <> o.currency
              OR EXISTS (SELECT 1 FROM payment_ledger l
                         WHERE l.kind = 'CHARGE' AND l.payment_id = r.platform_payment_id)"#
    )
    .fetch_all(db)
    .await?;
    for row in unmatched {
        violations.push(match (row.refund_no, row.callback_id) {
            (None, Some(callback)) => format!(
                "order {}: success {callback} of platform payment {} could not be booked and has no automatic refund",
                row.order_no, row.platform_payment_id
            ),
            (Some(refund), None) => format!(
                "automatic refund {refund} of order {} gives back platform payment {}, which no unbookable success names",
                row.order_no, row.platform_payment_id
            ),
            (refund, callback) => format!(
                "automatic refund {refund:?} of order {} (platform payment {}, cause {callback:?}) \
                 does not give back exactly that unbooked payment",
                row.order_no, row.platform_payment_id
            ),
        });
    }

    let misheld = sqlx::query!(
        r#"SELECT a.account_id, a.balance_cents, a.held_cents,
                  coalesce(h.held, 0)::bigint AS "expected!"
           FROM accounts a
           LEFT JOIN (SELECT o.account_id, sum(o.amount_cents) AS held
                      FROM orders o
                      WHERE o.status = 'PENDING'
                        AND EXISTS (SELECT 1 FROM payment_attempts p
                                    WHERE p.order_no = o.order_no AND p.method = 'wallet')
                      GROUP BY o.account_id) h ON h.account_id = a.account_id
           WHERE a.held_cents <> coalesce(h.held, 0)
              OR a.held_cents < 0 OR a.held_cents > a.balance_cents"#
    )
    .fetch_all(db)
    .await?;
    for row in misheld {
        violations.push(format!(
            "account {}: holds {} (balance {}) but its PENDING orders with a wallet payment attempt total {}",
            row.account_id, row.held_cents, row.balance_cents, row.expected
        ));
    }

    let disagreeing = sqlx::query!(
        r#"SELECT p.payment_id, p.status AS attempt, o.order_no, o.status AS "order"
           FROM payment_attempts p JOIN orders o ON o.order_no = p.order_no
           WHERE (p.status = 'SUCCEEDED') <> (o.status IN ('PAID', 'REFUNDED'))
              OR (p.status = 'FAILED' AND o.status <> 'FAILED')
              OR (p.status = 'CLOSED' AND o.status <> 'CLOSED')
              OR (p.status IN ('CREATED', 'SUBMITTED', 'UNKNOWN') AND o.status <> 'PENDING')"#
    )
    .fetch_all(db)
    .await?;
    for row in disagreeing {
        violations.push(format!(
            "attempt {} is {} but its order {} is {}",
            row.payment_id, row.attempt, row.order_no, row.order
        ));
    }

    let unnamed = sqlx::query!(
        r#"SELECT l.order_no, l.payment_id, p.payment_id AS "attempt?", p.platform_payment_id
           FROM payment_ledger l LEFT JOIN payment_attempts p ON p.order_no = l.order_no
           WHERE l.kind = 'CHARGE'
             AND (p.payment_id IS NULL OR p.platform_payment_id IS DISTINCT FROM l.payment_id)"#
    )
    .fetch_all(db)
    .await?;
    for row in unnamed {
        violations.push(format!(
            "order {} was charged for platform payment {} but its attempt {:?} is platform payment {:?}",
            row.order_no, row.payment_id, row.attempt, row.platform_payment_id
        ));
    }

    let malformed = sqlx::query!(
        "SELECT order_no, status FROM orders
         WHERE (status IN ('PAID', 'REFUNDED')) <> (paid_at IS NOT NULL)
            OR (status = 'FAILED') <> (failure_reason IS NOT NULL)"
    )
    .fetch_all(db)
    .await?;
    for row in malformed {
        violations.push(format!(
            "order {} is {} with inconsistent paid_at/failure_reason",
            row.order_no, row.status
        ));
    }

    books(db, &mut violations).await?;

    if !violations.is_empty() {
        return Ok(Err(Violations(violations)));
    }
    let counts = sqlx::query!(
        r#"SELECT count(*) AS "orders!",
                  count(*) FILTER (WHERE status = 'PAID') AS "paid!",
                  count(*) FILTER (WHERE status = 'FAILED') AS "failed!",
                  count(*) FILTER (WHERE status = 'PENDING') AS "pending!"
           FROM orders"#
    )
    .fetch_one(db)
    .await?;
    let charges = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM payment_ledger WHERE kind = 'CHARGE'"#
    )
    .fetch_one(db)
    .await?;
    let accounts = sqlx::query_scalar!(r#"SELECT count(*) AS "count!" FROM accounts"#)
        .fetch_one(db)
        .await?;
    Ok(Ok(Report {
        orders: counts.orders,
        paid: counts.paid,
        failed: counts.failed,
        pending: counts.pending,
        charges,
        accounts,
    }))
}

/// Invariant 11: the double-entry books against the wallets, the single-entry
/// ledger and the refunds.
async fn books(db: &PgPool, violations: &mut Vec<String>) -> anyhow::Result<()> {
    let wallets = sqlx::query!(
        r#"SELECT a.account_id, a.balance_cents, a.held_cents,
                  b.balance_cents AS "posted!", b.debits_pending AS "pending!", b.available_cents AS "available!"
           FROM accounts a JOIN ledger_balances b ON b.ledger_account_id = a.account_id
           WHERE a.balance_cents <> b.balance_cents OR a.held_cents <> b.debits_pending OR b.available_cents < 0"#
    )
    .fetch_all(db)
    .await?;
    for row in wallets {
        violations.push(format!(
            "wallet {}: balance {} held {}, but its entries post {} and hold {} (available {})",
            row.account_id,
            row.balance_cents,
            row.held_cents,
            row.posted,
            row.pending,
            row.available
        ));
    }

    let orders = sqlx::query!(
        r#"WITH ledger AS (
               SELECT order_no, sum(CASE kind WHEN 'CHARGE' THEN amount_cents ELSE -amount_cents END)::bigint AS net
               FROM payment_ledger GROUP BY order_no
           ), merchant AS (
               SELECT t.order_no,
                      sum(CASE WHEN t.credit_account_id = m.ledger_account_id THEN t.amount_cents
                               ELSE -t.amount_cents END)::bigint AS net
               FROM transfers t JOIN ledger_accounts m
                    ON m.kind = 'MERCHANT' AND m.ledger_account_id IN (t.debit_account_id, t.credit_account_id)
               WHERE t.kind IN ('CHARGE', 'REFUND') GROUP BY t.order_no
           )
           SELECT o.order_no, coalesce(l.net, 0)::bigint AS "ledger!", coalesce(m.net, 0)::bigint AS "merchant!"
           FROM orders o LEFT JOIN ledger l ON l.order_no = o.order_no
                LEFT JOIN merchant m ON m.order_no = o.order_no
           WHERE coalesce(l.net, 0) <> coalesce(m.net, 0)"#
    )
    .fetch_all(db)
    .await?;
    for row in orders {
        violations.push(format!(
            "order {}: charged - refunded is {}, but the merchant's entries for it are {}",
            row.order_no, row.ledger, row.merchant
        ));
    }

    // Each merchant's account moves only for its own orders.
    let strays = sqlx::query!(
        r#"SELECT t.transfer_id, t.order_no AS "order_no!", a.owner, o.merchant_id::text AS "merchant!"
           FROM transfers t JOIN ledger_accounts a
                ON a.kind = 'MERCHANT' AND a.ledger_account_id IN (t.debit_account_id, t.credit_account_id)
                JOIN orders o ON o.order_no = t.order_no
           WHERE a.owner <> 'default' AND a.owner <> o.merchant_id::text"#
    )
    .fetch_all(db)
    .await?;
    for row in strays {
        violations.push(format!(
            "transfer {} of order {} (merchant {}) moved merchant {}'s account",
            row.transfer_id, row.order_no, row.merchant, row.owner
        ));
    }

    let unpaired = sqlx::query!(
        r#"SELECT coalesce(l.kind, t.kind) AS "kind!", coalesce(l.order_no, t.order_no) AS order_no,
                  l.amount_cents AS "ledger?", t.amount_cents AS "transfer?"
           FROM (SELECT kind, order_no, amount_cents,
                        CASE kind WHEN 'CHARGE' THEN 'charge:' || callback_id ELSE 'refund:' || refund_no END AS transfer_id
                 FROM payment_ledger) l
           FULL JOIN (SELECT * FROM transfers WHERE kind IN ('CHARGE', 'REFUND')) t ON t.transfer_id = l.transfer_id
           WHERE l.transfer_id IS NULL OR t.transfer_id IS NULL OR l.amount_cents <> t.amount_cents
              OR l.order_no IS DISTINCT FROM t.order_no"#
    )
    .fetch_all(db)
    .await?;
    for row in unpaired {
        violations.push(format!(
            "{} of order {:?}: ledger row {:?}, transfer {:?}",
            row.kind, row.order_no, row.ledger, row.transfer
        ));
    }

    let suspense = sqlx::query!(
        r#"WITH held AS (
               SELECT currency, sum(balance_cents)::bigint AS balance FROM ledger_balances
               WHERE kind = 'SUSPENSE' GROUP BY currency
           ), owed AS (
               SELECT currency, sum(amount_cents)::bigint AS open FROM refunds
               WHERE requested_by = 'automatic' AND status <> 'SUCCEEDED' GROUP BY currency
           )
           SELECT coalesce(h.currency, o.currency) AS "currency!", coalesce(h.balance, 0)::bigint AS "balance!",
                  coalesce(o.open, 0)::bigint AS "open!"
           FROM held h FULL JOIN owed o ON o.currency = h.currency
           WHERE coalesce(h.balance, 0) <> coalesce(o.open, 0)"#
    )
    .fetch_all(db)
    .await?;
    for row in suspense {
        violations.push(format!(
            "suspense {}: holds {}, but the automatic refunds not given back total {}",
            row.currency, row.balance, row.open
        ));
    }

    let automatic = sqlx::query!(
        r#"SELECT r.refund_no, r.status,
                  EXISTS (SELECT FROM transfers t WHERE t.transfer_id = 'unbooked:' || r.refund_no
                          AND t.kind = 'UNBOOKED' AND t.amount_cents = r.amount_cents) AS "unbooked!",
                  EXISTS (SELECT FROM transfers t WHERE t.transfer_id = 'refund:' || r.refund_no
                          AND t.kind = 'GIVEN_BACK' AND t.amount_cents = r.amount_cents) AS "given_back!"
           FROM refunds r WHERE r.requested_by = 'automatic'"#
    )
    .fetch_all(db)
    .await?;
    for row in automatic {
        if !row.unbooked || row.given_back != (row.status == "SUCCEEDED") {
            violations.push(format!(
                "automatic refund {} is {}: put in suspense {}, given back {}",
                row.refund_no, row.status, row.unbooked, row.given_back
            ));
        }
    }

    let holds = sqlx::query!(
        r#"SELECT h.transfer_id, o.order_no, o.status
           FROM transfers h JOIN orders o ON o.order_no = h.order_no
           WHERE h.kind = 'HOLD' AND o.status <> 'PENDING'
             AND NOT EXISTS (SELECT FROM transfers r WHERE r.pending_id = h.transfer_id)"#
    )
    .fetch_all(db)
    .await?;
    for row in holds {
        violations.push(format!(
            "hold {} is still open, but its order {} is {}",
            row.transfer_id, row.order_no, row.status
        ));
    }
    Ok(())
}
