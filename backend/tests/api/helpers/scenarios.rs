//! Scenario builders: the set-ups many tests start from, each one call, so a
//! test reads as the scene, what happens, and what must be true after.

use super::{Account, TestApp};
use api_types::OrderStatus;
use api_types::api::Order;

impl TestApp {
    /// A shopper with `balance` EUR cents and a PAID order of `amount`, paid
    /// as the shopper pays and charged by the platform's own callback (or
    /// its query); [`TestApp::http`] is signed in as them.
    pub async fn paid_order(&self, balance: i64, amount: i64) -> (Account, Order) {
        let (account, order) = self.account_with_order(balance, amount).await;
        let paid = self.pay_until_final(&order.order_no).await;
        assert_eq!(paid.status, OrderStatus::Paid);
        (account, paid)
    }
}
