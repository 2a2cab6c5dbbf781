//! The payment attempt's own state machine, as the database keeps it.

use crate::helpers::{TestApp, spawn_app};

async fn attempt_status(app: &TestApp, order_no: &str) -> String {
    sqlx::query_scalar("SELECT status FROM payment_attempts WHERE order_no = $1")
        .bind(order_no)
        .fetch_one(&app.db)
        .await
        .expect("attempt status")
}

#[tokio::test]
async fn a_paid_order_s_attempt_succeeds_and_a_declined_one_s_fails() {
    let app = spawn_app().await;
    let account = app.create_account(10_000, "EUR").await;
    let paid = app.create_order(&account, 2_000).await;
    // The sandbox declines amounts ending in 13 minor units.
    let declined = app.create_order(&account, 1_013).await;

    for order in [&paid, &declined] {
        app.pay_until_final(&order.order_no).await;
    }

    assert_eq!(attempt_status(&app, &paid.order_no).await, "SUCCEEDED");
    assert_eq!(attempt_status(&app, &declined.order_no).await, "FAILED");
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_database_refuses_to_move_a_final_attempt_or_to_reopen_one() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    app.pay_until_final(&order.order_no).await;

    for next in ["CREATED", "SUBMITTED", "UNKNOWN", "FAILED", "CLOSED"] {
        let refused = sqlx::query("UPDATE payment_attempts SET status = $2 WHERE order_no = $1")
            .bind(&order.order_no)
            .bind(next)
            .execute(&app.db)
            .await;
        let err = refused.expect_err(next);
        assert!(
            err.to_string().contains("may not move from SUCCEEDED"),
            "{next}: {err}"
        );
    }
    assert_eq!(attempt_status(&app, &order.order_no).await, "SUCCEEDED");
}
