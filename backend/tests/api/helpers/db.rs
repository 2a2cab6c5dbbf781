//! What the test's database says: balances, counts, anomalies, deliveries,
//! ledger rows, the invariants, and snapshots of the business state.

use super::{Account, TestApp};
use backend::invariants;

/// The one `bigint` that `sql` selects: a count, or any figure of one row.
pub async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&app.db)
        .await
        .expect("count")
}

impl TestApp {
    /// The current balance of an account, read from the database.
    pub async fn balance(&self, account: &Account) -> i64 {
        sqlx::query_scalar("SELECT balance_cents FROM accounts WHERE account_id = $1")
            .bind(account.account_id)
            .fetch_one(&self.db)
            .await
            .expect("balance")
    }

    /// What an account holds for payments in flight, read from the database.
    pub async fn held(&self, account: &Account) -> i64 {
        sqlx::query_scalar("SELECT held_cents FROM accounts WHERE account_id = $1")
            .bind(account.account_id)
            .fetch_one(&self.db)
            .await
            .expect("held")
    }

    /// Asserts that the wallet did not pay: its balance is its opening
    /// balance and it holds nothing (a platform payment, and its refunds,
    /// never touch the shopper's wallet).
    pub async fn assert_wallet_untouched(&self, account: &Account) {
        let (opening, balance, held): (i64, i64, i64) = sqlx::query_as(
            "SELECT opening_balance_cents, balance_cents, held_cents FROM accounts WHERE account_id = $1",
        )
        .bind(account.account_id)
        .fetch_one(&self.db)
        .await
        .expect("account");
        assert_eq!(
            (balance, held),
            (opening, 0),
            "the wallet is untouched: balance {balance} (opened with {opening}), held {held}"
        );
    }

    /// An order's transfers in the books as `KIND DEBIT -> CREDIT amount`
    /// (`posts hold` when it posts or voids one), oldest first.
    pub async fn transfers_of(&self, order_no: &str) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT t.kind || ' ' || d.kind || ' -> ' || c.kind || ' ' || t.amount_cents
                    || coalesce(' posts ' || split_part(t.pending_id, ':', 1), '')
             FROM transfers t JOIN ledger_accounts d ON d.ledger_account_id = t.debit_account_id
                  JOIN ledger_accounts c ON c.ledger_account_id = t.credit_account_id
             WHERE t.order_no = $1 ORDER BY t.created_at, t.transfer_id",
        )
        .bind(order_no)
        .fetch_all(&self.db)
        .await
        .expect("transfers")
    }

    /// Rows in a table (name from the test code only).
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&self.db)
            .await
            .expect("count")
    }

    /// Anomaly kinds recorded for an order.
    pub async fn anomalies(&self, order_no: &str) -> Vec<String> {
        sqlx::query_scalar("SELECT kind FROM anomalies WHERE order_no = $1 ORDER BY anomaly_id")
            .bind(order_no)
            .fetch_all(&self.db)
            .await
            .expect("anomalies")
    }

    /// Outcomes of the deliveries logged for an order, oldest first.
    pub async fn delivery_outcomes(&self, order_no: &str) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT outcome FROM callback_deliveries WHERE order_no = $1 ORDER BY delivery_id",
        )
        .bind(order_no)
        .fetch_all(&self.db)
        .await
        .expect("deliveries")
    }

    /// Ledger rows of `kind` (`CHARGE`, `REFUND`), of one order or of all.
    pub async fn ledger_rows(&self, order_no: Option<&str>, kind: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM payment_ledger
             WHERE kind = $2 AND ($1::text IS NULL OR order_no = $1)",
        )
        .bind(order_no)
        .bind(kind)
        .fetch_one(&self.db)
        .await
        .expect("ledger rows")
    }

    /// Panics with every violation if an invariant is broken.
    pub async fn assert_invariants(&self) -> invariants::Report {
        match invariants::check(&self.db).await.expect("invariants query") {
            Ok(report) => report,
            Err(violations) => panic!("{violations}"),
        }
    }

    /// Everything a bad request must not change (deliveries and anomalies are
    /// audit records and are checked separately where they apply).
    pub async fn snapshot(&self) -> Snapshot {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT 'account ' || account_id || ' ' || balance_cents FROM accounts
             UNION ALL SELECT 'order ' || order_no || ' ' || status || ' ' || coalesce(failure_reason, '-') FROM orders
             UNION ALL SELECT 'attempt ' || payment_id FROM payment_attempts
             UNION ALL SELECT 'callback ' || callback_id FROM payment_callbacks
             UNION ALL SELECT 'ledger ' || callback_id || ' ' || amount_cents FROM payment_ledger
             UNION ALL SELECT 'token ' || request_token FROM request_tokens_issued
             UNION ALL SELECT 'shopper ' || shopper_id || ' ' || email FROM shoppers
             UNION ALL SELECT 'product ' || sku || ' ' || price_cents FROM products
             UNION ALL SELECT 'key ' || scope || ' ' || idempotency_key FROM idempotency_keys
             UNION ALL SELECT 'merchant ' || merchant_id || ' ' || name || ' ' || return_origins::text FROM merchants
             UNION ALL SELECT 'merchant key ' || prefix || ' ' || coalesce(expires_at::text, '-') || ' '
                              || coalesce(revoked_at::text, '-') FROM merchant_keys
             ORDER BY 1",
        )
        .fetch_all(&self.db)
        .await
        .expect("snapshot");
        Snapshot(rows.into_iter().map(|(row,)| row).collect())
    }
}

/// The business state of a database at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot(pub Vec<String>);
