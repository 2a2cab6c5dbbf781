//! Rows written straight into a migrated database with no backend running,
//! for tests of single statements: no worker claims or settles them first.

use sqlx::PgPool;
use testkit::TestDatabase;
use uuid::Uuid;

/// A fresh migrated database behind a pool of `connections`.
pub async fn database_with_pool(connections: u32) -> (TestDatabase, PgPool) {
    let database = TestDatabase::new("checkout_test");
    let db = backend::startup::connect_and_migrate(&database.url(), connections)
        .await
        .expect("migrate");
    (database, db)
}

/// When an attempt (or a refund) was made, handed over and is next to be
/// queried, in seconds from now (negative: in the past).
#[derive(Clone, Copy)]
pub struct Times {
    /// When it was made.
    pub created: i64,
    /// When the platform accepted it, if it did.
    pub submitted: Option<i64>,
    /// When it is next to be queried, if it was queried before.
    pub next_query: Option<i64>,
}

/// Made at `created`, handed over at `submitted` (or not), never queried.
pub fn never_queried(created: i64, submitted: Option<i64>) -> Times {
    Times {
        created,
        submitted,
        next_query: None,
    }
}

/// Made and handed over long ago, queried before, next due at `next_query`.
pub fn queried(next_query: i64) -> Times {
    Times {
        created: -1_000,
        submitted: Some(-999),
        next_query: Some(next_query),
    }
}

/// An account in `currency` holding `balance_cents` (its opening balance
/// too), of which `held_cents` are held for payments in flight; its id.
pub async fn account(db: &PgPool, currency: &str, balance_cents: i64, held_cents: i64) -> Uuid {
    let account_id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO accounts (account_id, balance_cents, opening_balance_cents, currency, held_cents)
         VALUES ($1, $2, $2, $3, $4)",
    )
    .bind(account_id)
    .bind(balance_cents)
    .bind(currency)
    .bind(held_cents)
    .execute(db)
    .await
    .expect("account");
    account_id
}

/// An order of 500 EUR cents on the account, expiring in a day: PENDING, or
/// PAID now when `paid`.
pub async fn order(db: &PgPool, order_no: &str, account_id: Uuid, paid: bool) {
    sqlx::query(
        "INSERT INTO orders (order_no, account_id, amount_cents, currency, status, expires_at, paid_at)
         VALUES ($1, $2, 500, 'EUR', CASE WHEN $3 THEN 'PAID' ELSE 'PENDING' END,
                 now() + interval '1 day', CASE WHEN $3 THEN now() END)",
    )
    .bind(order_no)
    .bind(account_id)
    .bind(paid)
    .execute(db)
    .await
    .expect("order");
}

/// An account, a PENDING order (PAID with `status` SUCCEEDED) and its attempt
/// with `times` and `status`; returns the order number.
pub async fn attempt(db: &PgPool, name: &str, times: Times, status: &str) -> String {
    let held = if status == "SUCCEEDED" { 0 } else { 500 };
    let account_id = account(db, "EUR", 10_000, held).await;
    let order_no = format!("due_{name}");
    order(db, &order_no, account_id, status == "SUCCEEDED").await;
    sqlx::query(
        "INSERT INTO payment_attempts (payment_id, request_token, order_no, amount_cents, currency, method,
                                       response_status, response_body, status, created_at,
                                       submitted_at, next_query_at)
         VALUES ($1, $2, $3, 500, 'EUR', 'wallet', 202, '{}', $4, now() + make_interval(secs => $5),
                 now() + make_interval(secs => $6), now() + make_interval(secs => $7))",
    )
    .bind(Uuid::new_v4())
    .bind(Uuid::new_v4())
    .bind(&order_no)
    .bind(status)
    .bind(times.created as f64)
    .bind(times.submitted.map(|s| s as f64))
    .bind(times.next_query.map(|s| s as f64))
    .execute(db)
    .await
    .expect("attempt");
    order_no
}
