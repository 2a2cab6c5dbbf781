//! Several backend processes share one database and one Redis.

use crate::rig::{Rig, RigOptions, failures, order_nos};
use std::time::Duration;

#[tokio::test]
async fn three_backends_sharing_a_database_charge_each_order_once() {
    let rig = Rig::start(RigOptions {
        backends: 3,
        ..RigOptions::default()
    })
    .await;
    // Each backend takes a third of the pays; its sandbox decides them but
    // posts nothing, so the storm below is what charges.
    let placed = rig.orders(21, 999).await;
    let mut orders = Vec::new();
    for (n, third) in placed.chunks(7).enumerate() {
        orders.extend(rig.pay_via(n, third).await);
    }

    // Every order's callback goes to all three backends at once, twice over.
    let answers = rig
        .storm(
            &orders,
            999,
            6,
            Duration::from_millis(100),
            Duration::from_secs(30),
        )
        .await;

    assert_eq!(rig.urls().len(), 3);
    assert_eq!(failures(&answers), 0, "{answers:?}");
    rig.assert_each_order_paid_once(&order_nos(&orders), "three backends")
        .await;
}
