//! What the database says happened: tokens issued, attempts, charges, the
//! order's status and the demo shoppers' balances (read-only).

use super::{ADA, Shopper, TestApp};
use api_types::api::Order;

impl TestApp {
    /// Request tokens handed out for the order.
    pub async fn tokens_issued(&self, order_no: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM request_tokens_issued WHERE order_no = $1",
            order_no,
        )
        .await
    }

    /// Payment attempts made for the order.
    pub async fn attempts(&self, order_no: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM payment_attempts WHERE order_no = $1",
            order_no,
        )
        .await
    }

    /// Ledger charges written for the order.
    pub async fn charges(&self, order_no: &str) -> i64 {
        self.count(
            "SELECT count(*) FROM payment_ledger WHERE order_no = $1 AND kind = 'CHARGE'",
            order_no,
        )
        .await
    }

    /// The method of the order's payment attempt (`wallet` or `platform`).
    pub async fn attempt_method(&self, order_no: &str) -> String {
        sqlx::query_scalar("SELECT method FROM payment_attempts WHERE order_no = $1")
            .bind(order_no)
            .fetch_one(&self.db)
            .await
            .expect("the order has a payment attempt")
    }

    /// The order's status in the database.
    pub async fn db_status(&self, order_no: &str) -> String {
        sqlx::query_scalar("SELECT status FROM orders WHERE order_no = $1")
            .bind(order_no)
            .fetch_one(&self.db)
            .await
            .expect("the order exists")
    }

    /// Ada's `(opening, current)` EUR balance.
    pub async fn balances(&self) -> (i64, i64) {
        self.balances_of(ADA).await
    }

    /// A demo shopper's `(opening, current)` balance in the demo's currency.
    pub async fn balances_of(&self, shopper: Shopper) -> (i64, i64) {
        sqlx::query_as(
            "SELECT a.opening_balance_cents, a.balance_cents FROM accounts a \
             JOIN shoppers s ON s.shopper_id = a.shopper_id \
             WHERE s.email = $1 AND a.currency = $2",
        )
        .bind(shopper.email)
        .bind(self.currency.as_str())
        .fetch_one(&self.db)
        .await
        .expect("the demo shopper's account exists")
    }

    /// Fails unless the order was charged exactly once, by one attempt paid
    /// from the wallet, and the balance went down by exactly its amount.
    pub async fn assert_charged_once(&self, order: &Order) {
        let no = &order.order_no;
        assert_eq!(self.attempts(no).await, 1, "payment attempts of {no}");
        assert_eq!(self.attempt_method(no).await, "wallet", "what paid {no}");
        assert_eq!(self.charges(no).await, 1, "ledger charges of {no}");
        assert_eq!(self.db_status(no).await, "PAID");
        let (opening, current) = self.balances().await;
        assert_eq!(
            current,
            opening - order.amount_cents,
            "balance after one charge"
        );
    }

    /// Fails unless the order was paid exactly once, by one attempt through
    /// the platform, and the balance did not move: the platform took the
    /// money from the shopper's own account, not from the wallet.
    pub async fn assert_paid_by_platform_once(&self, order: &Order) {
        let no = &order.order_no;
        assert_eq!(self.attempts(no).await, 1, "payment attempts of {no}");
        assert_eq!(self.attempt_method(no).await, "platform", "what paid {no}");
        assert_eq!(self.charges(no).await, 1, "ledger charges of {no}");
        assert_eq!(self.db_status(no).await, "PAID");
        let (opening, current) = self.balances().await;
        assert_eq!(current, opening, "the wallet untouched");
    }

    /// Fails unless nothing at all was charged.
    pub async fn assert_nothing_charged(&self, order: &Order) {
        let no = &order.order_no;
        assert_eq!(self.attempts(no).await, 0, "payment attempts of {no}");
        assert_eq!(self.charges(no).await, 0, "ledger charges of {no}");
        assert_eq!(self.db_status(no).await, "PENDING");
        let (opening, current) = self.balances().await;
        assert_eq!(current, opening, "balance untouched");
    }

    async fn count(&self, sql: &str, order_no: &str) -> i64 {
        sqlx::query_scalar(sql)
            .bind(order_no)
            .fetch_one(&self.db)
            .await
            .expect("the probe query runs")
    }
}
