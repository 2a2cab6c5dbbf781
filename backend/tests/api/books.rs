//! The double-entry books (`transfers`): what each flow posts, what the
//! database refuses whatever the code does, and today's rows moved into the
//! books by the migration without losing a balance.

use crate::auto_refunds::{pay_again_at_the_platform, wait_until_given_back};
use crate::helpers::{Payment, TestApp, spawn_app, spawn_app_paying_through, spawn_app_with};
use api_types::OrderStatus;
use reqwest::StatusCode;
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn each_flow_posts_its_movements_from_one_account_to_another() {
    let app = spawn_app().await;
    let account = app.create_account(10_000, "EUR").await;

    // The wallet: a hold at pay, posted by the success.
    let by_wallet = app.create_order(&account, 2_000).await;
    assert_eq!(
        app.pay_by_until_final(&by_wallet.order_no, "wallet")
            .await
            .status,
        OrderStatus::Paid
    );
    // The platform: nothing held; clearing pays the merchant.
    let by_platform = app.create_order(&account, 3_000).await;
    assert_eq!(
        app.pay_by_until_final(&by_platform.order_no, "platform")
            .await
            .status,
        OrderStatus::Paid
    );
    // A declined wallet payment: its hold voided.
    let declined = app.create_order(&account, 1_013).await;
    assert_eq!(
        app.pay_by_until_final(&declined.order_no, "wallet")
            .await
            .status,
        OrderStatus::Failed
    );
    // Refunds go back the way the money came.
    app.refund_settled(&by_wallet.order_no, 500, "returned")
        .await;
    app.refund_settled(&by_platform.order_no, 700, "returned")
        .await;

    assert_eq!(
        app.transfers_of(&by_wallet.order_no).await,
        [
            "HOLD WALLET -> MERCHANT 2000",
            "CHARGE WALLET -> MERCHANT 2000 posts hold",
            "REFUND MERCHANT -> WALLET 500",
        ]
    );
    assert_eq!(
        app.transfers_of(&by_platform.order_no).await,
        [
            "CHARGE CLEARING -> MERCHANT 3000",
            "REFUND MERCHANT -> CLEARING 700",
        ]
    );
    assert_eq!(
        app.transfers_of(&declined.order_no).await,
        [
            "HOLD WALLET -> MERCHANT 1013",
            "VOID WALLET -> MERCHANT 1013 posts hold",
        ]
    );
    // The wallet: opened with 10,000, paid 2,000 and got 500 back.
    assert_eq!(app.balance(&account).await, 8_500);
    // Every account's balance, as `ledger_balances` reads it from the entries:
    // (kind, debits posted, credits posted, pending, balance).
    assert_eq!(
        balances(&app).await,
        [
            ("CLEARING".to_owned(), 3_000, 700, 0, -2_300),
            ("FUNDING".to_owned(), 10_000, 0, 0, -10_000),
            ("MERCHANT".to_owned(), 1_200, 5_000, 0, 3_800),
            ("WALLET".to_owned(), 2_000, 10_500, 0, 8_500),
        ]
    );
    app.assert_invariants().await;
}

/// Each ledger account's figures from `ledger_balances`, by kind.
async fn balances(app: &TestApp) -> Vec<(String, i64, i64, i64, i64)> {
    sqlx::query_as(
        "SELECT kind, debits_posted, credits_posted, debits_pending, balance_cents
         FROM ledger_balances ORDER BY kind, owner",
    )
    .fetch_all(&app.db)
    .await
    .expect("balances")
}

/// What the suspense accounts hold: money we hold that is not ours.
async fn suspense(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT coalesce(sum(balance_cents), 0)::bigint FROM ledger_balances WHERE kind = 'SUSPENSE'",
    )
    .fetch_one(&app.db)
    .await
    .expect("suspense")
}

#[tokio::test]
async fn a_second_payment_waits_in_suspense_until_it_is_given_back() {
    let (app, simulator) = spawn_app_paying_through(
        platform_sim::Chaos::default(),
        Duration::from_millis(50),
        |_| {},
    )
    .await;
    let (account, order) = app.paid_order(0, 2_500).await;

    // The platform takes the money a second time: not ours, given back.
    let second = pay_again_at_the_platform(&app, &simulator, &order).await;
    wait_until_given_back(&simulator, &second, 2_500).await;
    let refunds = app.settled_automatic_refunds(&order.order_no).await;

    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].platform_payment_id, second);
    assert_eq!(refunds[0].status, "SUCCEEDED");
    assert_eq!(
        app.transfers_of(&order.order_no).await,
        [
            "CHARGE CLEARING -> MERCHANT 2500",
            "UNBOOKED CLEARING -> SUSPENSE 2500",
            "GIVEN_BACK SUSPENSE -> CLEARING 2500",
        ]
    );
    assert_eq!(suspense(&app).await, 0, "nothing held that is not ours");
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn money_whose_automatic_refund_failed_stays_in_suspense_in_front_of_a_person() {
    let app = spawn_app().await;
    let account = app.create_account(10_000, "EUR").await;
    let order = app.create_order(&account, 2_500).await;

    // A success for an order we never handed over, of a payment the sandbox
    // does not have: its automatic refund is refused.
    let response = app.post_success(&Payment::unsolicited(&order)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let refunds = app.settled_automatic_refunds(&order.order_no).await;

    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].status, "FAILED");
    assert_eq!(
        app.transfers_of(&order.order_no).await,
        ["UNBOOKED CLEARING -> SUSPENSE 2500"]
    );
    assert_eq!(suspense(&app).await, 2_500);
    assert_eq!(
        app.anomalies(&order.order_no).await,
        ["UNSOLICITED_PAYMENT", "REFUND_FAILED"]
    );
    app.assert_wallet_untouched(&account).await;
    app.assert_invariants().await;
}

/// What one statement the database must refuse did, as `(refused, sqlstate)`.
async fn refused(app: &TestApp, sql: &str) -> Option<String> {
    match sqlx::raw_sql(sql).execute(&app.db).await {
        Ok(_) => None,
        Err(err) => Some(
            err.as_database_error()
                .and_then(|db| db.code().map(|code| code.into_owned()))
                .unwrap_or_else(|| err.to_string()),
        ),
    }
}

#[tokio::test]
async fn the_database_refuses_what_the_books_may_never_hold_whoever_asks() {
    // As the tests' superuser, beyond what the serving role may do at all.
    let app = spawn_app().await;
    let account = app.create_account(1_000, "EUR").await;
    let order = app.create_order(&account, 400).await;
    assert_eq!(
        app.pay_by_until_final(&order.order_no, "wallet")
            .await
            .status,
        OrderStatus::Paid
    );
    let usd = app.create_shopper(1_000, "USD").await;
    let before: Vec<String> = sqlx::query_scalar(
        "SELECT transfer_id || ' ' || amount_cents || ' ' || coalesce(pending_id, '-')
         FROM transfers ORDER BY transfer_id",
    )
    .fetch_all(&app.db)
    .await
    .expect("transfers");
    let payment_id: Uuid =
        sqlx::query_scalar("SELECT payment_id FROM payment_attempts WHERE order_no = $1")
            .bind(&order.order_no)
            .fetch_one(&app.db)
            .await
            .expect("the attempt");
    let hold = format!("hold:{payment_id}");

    let attempts = [
        // Entries are immutable.
        (
            "UPDATE transfers SET amount_cents = 1".to_owned(),
            "23514",
        ),
        ("DELETE FROM transfers".to_owned(), "23514"),
        // A second post of one id.
        (
            format!(
                "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind)
                 SELECT transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind
                 FROM transfers WHERE transfer_id = '{hold}'"
            ),
            "23505",
        ),
        // A hold posted (or voided) twice.
        (
            format!(
                "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, pending_id)
                 SELECT 'void:again', debit_account_id, credit_account_id, amount_cents, currency, 'VOID', transfer_id
                 FROM transfers WHERE transfer_id = '{hold}'"
            ),
            "23505",
        ),
        // The two sides in two currencies.
        (
            format!(
                "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind)
                 VALUES ('mixed', '{}', '{}', 100, 'EUR', 'CHARGE')",
                account.account_id, usd.account_id
            ),
            "23503",
        ),
        // An account paying itself, and nothing.
        (
            format!(
                "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind)
                 VALUES ('self', '{0}', '{0}', 100, 'EUR', 'CHARGE')",
                account.account_id
            ),
            "23514",
        ),
        (
            format!(
                "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind)
                 VALUES ('zero', '{}', ledger_account('MERCHANT', 'default', 'EUR'), 0, 'EUR', 'CHARGE')",
                account.account_id
            ),
            "23514",
        ),
    ];
    for (sql, code) in attempts {
        assert_eq!(refused(&app, &sql).await.as_deref(), Some(code), "{sql}");
    }

    let after: Vec<String> = sqlx::query_scalar(
        "SELECT transfer_id || ' ' || amount_cents || ' ' || coalesce(pending_id, '-')
         FROM transfers ORDER BY transfer_id",
    )
    .fetch_all(&app.db)
    .await
    .expect("transfers");
    assert_eq!(after, before, "nothing changed");
    app.assert_invariants().await;
}

/// The schema of the main branch before the books: every migration since
/// undone, newest first (the merchants' columns and tables, the balances view,
/// the books, the payment methods). A new migration adds its undoing here.
const BEFORE_THE_BOOKS: &str = "
    ALTER TABLE orders DROP COLUMN merchant_id, DROP COLUMN merchant_reference,
        DROP COLUMN return_url, DROP COLUMN cancel_url;
    DROP TABLE merchant_keys;
    DROP TABLE merchants;
    DROP VIEW ledger_balances;
    DROP TRIGGER accounts_open_wallet ON accounts;
    DROP TABLE transfers;
    DROP TABLE ledger_accounts;
    DROP FUNCTION ledger_account(text, text, text);
    DROP FUNCTION transfers_are_immutable();
    DROP FUNCTION accounts_open_their_wallet();
    ALTER TABLE payment_attempts DROP COLUMN method;
    DELETE FROM _sqlx_migrations WHERE version >= 20261208000001;
";

#[tokio::test]
async fn a_database_of_the_schema_before_the_books_moves_into_them_keeping_every_balance() {
    // Arrange: a shop's history under the old schema: wallet payments paid,
    // refunded in part and in full, declined, one still being paid (held), and
    // a success we could not book, given back.
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 100).await;
    let ada = app.create_account(10_000, "EUR").await;
    let paid = app.create_order(&ada, 2_000).await;
    let refunded = app.create_order(&ada, 1_500).await;
    let declined = app.create_order(&ada, 1_013).await;
    for order in [&paid, &refunded] {
        assert_eq!(
            app.pay_by_until_final(&order.order_no, "wallet")
                .await
                .status,
            OrderStatus::Paid
        );
    }
    assert_eq!(
        app.pay_by_until_final(&declined.order_no, "wallet")
            .await
            .status,
        OrderStatus::Failed
    );
    app.refund_settled(&paid.order_no, 300, "partial").await;
    app.refund_settled(&refunded.order_no, 1_500, "all of it")
        .await;
    let unsolicited = app.create_order(&ada, 700).await;
    app.post_success(&Payment::unsolicited(&unsolicited)).await;
    app.settled_automatic_refunds(&unsolicited.order_no).await;
    let ben = app.create_shopper(5_000, "CNY").await;
    sqlx::raw_sql(BEFORE_THE_BOOKS)
        .execute(&app.db)
        .await
        .expect("the old schema");
    // One order of Ben's being paid, its amount held, as the old schema keeps it.
    sqlx::query(
        "INSERT INTO orders (order_no, account_id, shopper_id, amount_cents, currency, expires_at)
         VALUES ('ord_old_pending', $1, $2, 1200, 'CNY', now() + interval '1 hour');
         ",
    )
    .bind(ben.account_id)
    .bind(ben.shopper_id)
    .execute(&app.db)
    .await
    .expect("order");
    sqlx::query(
        "INSERT INTO payment_attempts (payment_id, request_token, order_no, amount_cents, currency,
                                       response_status, response_body, status, submitted_at)
         VALUES ($1, $2, 'ord_old_pending', 1200, 'CNY', 202, '{}', 'SUBMITTED', now())",
    )
    .bind(Uuid::new_v4())
    .bind(Uuid::new_v4())
    .execute(&app.db)
    .await
    .expect("attempt");
    sqlx::query("UPDATE accounts SET held_cents = 1200 WHERE account_id = $1")
        .bind(ben.account_id)
        .execute(&app.db)
        .await
        .expect("hold");
    let balances = |db: sqlx::PgPool| async move {
        sqlx::query_as::<_, (Uuid, i64, i64, i64)>(
            "SELECT account_id, opening_balance_cents, balance_cents, held_cents FROM accounts ORDER BY account_id",
        )
        .fetch_all(&db)
        .await
        .expect("balances")
    };
    let before = balances(app.db.clone()).await;

    // Act: the backend starts on it and migrates it.
    let app = app.restart().await;

    // Assert: every balance and hold as it was, every invariant, the books included.
    assert_eq!(balances(app.db.clone()).await, before);
    let report = app.assert_invariants().await;
    assert_eq!(report.charges, 2);
    assert_eq!(
        app.transfers_of(&paid.order_no).await,
        [
            "CHARGE WALLET -> MERCHANT 2000",
            "REFUND MERCHANT -> WALLET 300"
        ]
    );
    assert_eq!(
        app.transfers_of("ord_old_pending").await,
        ["HOLD WALLET -> MERCHANT 1200"]
    );
    let method: String =
        sqlx::query_scalar("SELECT method FROM payment_attempts WHERE order_no = $1")
            .bind(&paid.order_no)
            .fetch_one(&app.db)
            .await
            .expect("method");
    assert_eq!(method, "wallet", "every old attempt was a wallet payment");
    // What the books held for the one merchant there was is the shop's now,
    // moved in one transfer: 2,000 - 300 + 1,500 - 1,500.
    let merchant: Vec<(String, i64)> = sqlx::query_as(
        "SELECT owner, balance_cents FROM ledger_balances
         WHERE kind = 'MERCHANT' AND currency = 'EUR' ORDER BY owner",
    )
    .fetch_all(&app.db)
    .await
    .expect("merchant balances");
    assert_eq!(
        merchant,
        [
            ("00000000-0000-0000-0000-000000000001".to_owned(), 1_700),
            ("default".to_owned(), 0)
        ]
    );
    // And the migrated shop goes on: Ada pays again, from what she has left.
    app.sign_in_as(&app.http, &ada).await;
    let next = app.create_order(&ada, 1_000).await;
    assert_eq!(
        app.pay_by_until_final(&next.order_no, "wallet")
            .await
            .status,
        OrderStatus::Paid
    );
    app.assert_invariants().await;
}
