//! Scenario builders: the set-ups many tests start from, each one call, so a
//! test reads as the scene, what happens, and what must be true after.

use super::{Account, Payment, TestApp};
use api_types::OrderStatus;
use api_types::api::Order;
use uuid::Uuid;

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

    /// A CNY shopper (WeChat Pay and Alipay take yuan only) with `balance`
    /// fen and one PENDING order of `amount` fen that the platform has
    /// ([`TestApp::submitted_payment`]): the shopper, the order and our
    /// payment id.
    pub async fn submitted_cny_order(&self, balance: i64, amount: i64) -> (Account, Order, Uuid) {
        let (account, order) = self.cny_order(balance, amount).await;
        let payment_id = self.submitted_payment(&order).await;
        (account, order, payment_id)
    }

    /// [`TestApp::submitted_cny_order`], then waited on until the platform's
    /// own notification made the order PAID.
    pub async fn paid_cny_order(&self, balance: i64, amount: i64) -> (Account, Order, Uuid) {
        let (account, order, payment_id) = self.submitted_cny_order(balance, amount).await;
        assert_eq!(
            self.wait_until_final(&order.order_no).await.status,
            OrderStatus::Paid
        );
        (account, order, payment_id)
    }
}
