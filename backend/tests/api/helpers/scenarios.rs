//! Scenario builders: the set-ups many tests start from, each one call, so a
//! test reads as the scene, what happens, and what must be true after.

use super::{Account, Payment, TestApp};
use api_types::OrderStatus;
use api_types::api::Order;

impl TestApp {
    /// A shopper with `balance` EUR cents and one PENDING order of `amount`
    /// whose payment the platform has accepted ([`TestApp::hand_over`]): the
    /// scene of a callback test, which posts the platform's results itself.
    /// Needs an app from [`super::spawn_app_without_callbacks`].
    pub async fn handed_over_order(&self, balance: i64, amount: i64) -> (Account, Order, Payment) {
        let (account, order) = self.account_with_order(balance, amount).await;
        let payment = self.hand_over(&order).await;
        (account, order, payment)
    }

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
