//! The two databases (pgbench's and the backend's, alike) and the orders the
//! runs consume. The server is given (`--postgres`; `scripts/bench.sh` starts
//! a private cluster for it); the schema comes from the backend's own
//! migration runner.
//!
//! Order `k` ([`order_no`]) charges account `k mod accounts` with
//! [`order_amount`] EUR cents; every run takes the next unused `k`s, so each
//! callback finds its own PENDING order.

use anyhow::Context;
use sqlx::{Connection, PgPool};

/// Order numbers are `ORDER_PREFIX` + k in [`ORDER_DIGITS`] zero-padded
/// decimal digits: the shape the routes accept (`ord_` and 28 hex digits).
pub const ORDER_PREFIX: &str = "ord_";
/// Digits after [`ORDER_PREFIX`].
pub const ORDER_DIGITS: usize = 28;
/// Callback ids are `CALLBACK_PREFIX` + k.
pub const CALLBACK_PREFIX: &str = "cb_";
/// Platform payment ids are `PAYMENT_PREFIX` + k.
pub const PAYMENT_PREFIX: &str = "pay_";
/// Every account opens with this balance, far more than all runs can spend.
pub const OPENING_BALANCE_CENTS: i64 = 1_000_000_000_000_000;
/// The email of the shopper who owns every bench order.
pub const BENCH_SHOPPER_EMAIL: &str = "bench@shop.test";
/// Their password (a bench database is scratch data).
pub const BENCH_SHOPPER_PASSWORD: &str = "bench-shopper-password";

/// The number of order `k`.
pub fn order_no(k: i64) -> String {
    format!("{ORDER_PREFIX}{k:0>width$}", width = ORDER_DIGITS)
}

/// SQL (or a pgbench expression) for the number of the order whose `k` is `k_expr`.
pub fn order_no_sql(k_expr: &str) -> String {
    format!("('{ORDER_PREFIX}' || lpad(({k_expr})::text, {ORDER_DIGITS}, '0'))")
}

/// The amount of order `k`, in cents (the SQL in [`OrderStock::ensure`] and
/// the pgbench scripts use the same formula).
pub fn order_amount(k: i64) -> i64 {
    1000 + k % 1000
}

/// Creates database `name` on `server` (`postgres://user@host:port`) with the
/// backend's schema, `accounts` accounts and the bench shopper; returns a
/// small pool for setting up and inspecting it.
pub async fn create_database(server: &str, name: &str, accounts: i64) -> anyhow::Result<PgPool> {
    let pool = backend::startup::connect_and_migrate(&format!("{server}/{name}"), 4)
        .await
        .with_context(|| format!("cannot create and migrate database {name}"))?;
    sqlx::query(
        "INSERT INTO accounts (account_id, balance_cents, opening_balance_cents, currency)
         SELECT md5('bench-account-' || a)::uuid, $2, $2, 'EUR' FROM generate_series(0, $1 - 1) a",
    )
    .bind(accounts)
    .bind(OPENING_BALANCE_CENTS)
    .execute(&pool)
    .await
    .context("cannot open the accounts")?;
    // One shopper owns every order (the pay step signs in as them); the charges
    // still spread over the accounts, as many shoppers' would.
    let hash = backend::http::auth::passwords::hash(BENCH_SHOPPER_PASSWORD.to_owned().into())
        .await
        .map_err(|err| anyhow::anyhow!("cannot hash the bench shopper's password: {err}"))?;
    sqlx::query(
        "INSERT INTO shoppers (shopper_id, email, password_hash) VALUES (md5('bench-shopper')::uuid, $1, $2)",
    )
    .bind(BENCH_SHOPPER_EMAIL)
    .bind(hash)
    .execute(&pool)
    .await
    .context("cannot create the bench shopper")?;
    Ok(pool)
}

/// Drops database `name` on `server`, ending any connection still open to it.
pub async fn drop_database(server: &str, name: &str) -> anyhow::Result<()> {
    let mut conn = sqlx::PgConnection::connect(&format!("{server}/postgres")).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&mut conn)
        .await
        .with_context(|| format!("cannot drop database {name}"))?;
    Ok(())
}

/// The server's version and the settings that decide the limit, in one line.
pub async fn describe(pool: &PgPool) -> anyhow::Result<String> {
    let settings =
        "fsync synchronous_commit wal_sync_method shared_buffers max_connections autovacuum"
            .split(' ')
            .map(|name| format!("'{name} ' || current_setting('{name}')"))
            .collect::<Vec<_>>()
            .join(" || ', ' || ");
    let query = format!("SELECT current_setting('server_version') || '; ' || {settings}");
    Ok(sqlx::query_scalar(&query).fetch_one(pool).await?)
}

/// The postmaster's process id: the parent of the process serving `pool`'s
/// connection, for CPU accounting (a server on this machine only).
pub async fn postmaster_pid(pool: &PgPool) -> Option<u32> {
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(pool)
        .await
        .ok()?;
    crate::cpu::parent_of(u32::try_from(pid).ok()?)
}

/// The PENDING orders of one database: orders `next..end` exist and are unused.
pub struct OrderStock {
    pool: PgPool,
    accounts: i64,
    next: i64,
    end: i64,
}

impl OrderStock {
    /// An empty stock over `accounts` accounts.
    pub fn new(pool: PgPool, accounts: i64) -> Self {
        Self {
            pool,
            accounts,
            next: 0,
            end: 0,
        }
    }

    /// The first unused order's `k`.
    pub fn next(&self) -> i64 {
        self.next
    }

    /// Creates orders until at least `count` unused ones exist.
    pub async fn ensure(&mut self, count: i64) -> anyhow::Result<()> {
        let want_end = self.next + count;
        if want_end <= self.end {
            return Ok(());
        }
        // Room to spare, so top-ups are rare.
        let new_end = want_end + count / 2;
        sqlx::query(
            "INSERT INTO orders (order_no, shopper_id, account_id, amount_cents, currency, expires_at)
             SELECT $4 || lpad(k::text, 28, '0'), md5('bench-shopper')::uuid, md5('bench-account-' || (k % $3))::uuid,
                    1000 + k % 1000, 'EUR', now() + interval '1 day'
             FROM generate_series($1, $2 - 1) k",
        )
        .bind(self.end)
        .bind(new_end)
        .bind(self.accounts)
        .bind(ORDER_PREFIX)
        .execute(&self.pool)
        .await
        .context("cannot create orders")?;
        sqlx::query("ANALYZE orders").execute(&self.pool).await?;
        self.end = new_end;
        Ok(())
    }

    /// Creates orders until at least `count` unused ones exist and hands the
    /// next `count` over, as a pay would have: each gets a `SUBMITTED` payment
    /// wallet attempt naming platform payment `PAYMENT_PREFIX || k` (the id
    /// the bench's callbacks carry) and its amount held on its account (and
    /// in the books), since a
    /// success callback charges only a payment handed over. Orders handed over
    /// before are left as they are.
    pub async fn ensure_handed_over(&mut self, count: i64) -> anyhow::Result<()> {
        self.ensure(count).await?;
        sqlx::query(
            "WITH handed AS (
                 INSERT INTO payment_attempts
                     (payment_id, request_token, order_no, amount_cents, currency, method, response_status,
                      response_body, status, submitted_at, platform_payment_id)
                 SELECT md5('bench-attempt-' || k)::uuid, md5('bench-token-' || k)::uuid, o.order_no,
                        o.amount_cents, o.currency, 'wallet', 202, '{}'::jsonb, 'SUBMITTED', now(), $4 || k
                 FROM generate_series($1, $2 - 1) k JOIN orders o ON o.order_no = $3 || lpad(k::text, 28, '0')
                 WHERE o.status = 'PENDING'
                   AND NOT EXISTS (SELECT 1 FROM payment_attempts p WHERE p.order_no = o.order_no)
                 RETURNING payment_id, order_no, amount_cents, currency),
             booked AS (
                 INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents,
                                        currency, kind, order_no)
                 SELECT 'hold:' || h.payment_id, o.account_id, ledger_account('MERCHANT', o.merchant_id::text, h.currency),
                        h.amount_cents, h.currency, 'HOLD', h.order_no
                 FROM handed h JOIN orders o USING (order_no))
             UPDATE accounts a SET held_cents = a.held_cents + h.total
             FROM (SELECT o.account_id, sum(handed.amount_cents) AS total
                   FROM handed JOIN orders o USING (order_no) GROUP BY o.account_id) h
             WHERE a.account_id = h.account_id",
        )
        .bind(self.next)
        .bind(self.next + count)
        .bind(ORDER_PREFIX)
        .bind(PAYMENT_PREFIX)
        .execute(&self.pool)
        .await
        .context("cannot hand the orders over")?;
        Ok(())
    }

    /// Marks everything up to the highest order that `table` (with an
    /// `order_no` column) mentions as used.
    pub async fn skip_used(&mut self, table: &str) -> anyhow::Result<()> {
        let max: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT max(substr(order_no, {})::bigint) FROM {table} WHERE order_no LIKE 'ord\\_%'",
            ORDER_PREFIX.len() + 1
        ))
        .fetch_one(&self.pool)
        .await?;
        if let Some(max) = max {
            self.next = self.next.max(max + 1);
        }
        Ok(())
    }

    /// Takes `count` orders: returns the first `k`.
    pub fn take(&mut self, count: i64) -> i64 {
        let first = self.next;
        self.next += count;
        first
    }
}

/// Before every run, as pgbench does for its own tables: `VACUUM` the tables
/// whose rows each callback updates (the 1,000 account rows collect dead
/// versions fast), then `CHECKPOINT`, so no run pays for the previous run's
/// dirty pages.
pub async fn settle(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::query("VACUUM (ANALYZE) accounts, orders")
        .execute(pool)
        .await?;
    sqlx::query("CHECKPOINT").execute(pool).await?;
    Ok(())
}
