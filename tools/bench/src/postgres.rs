//! PostgreSQL for the benchmark: the server (a private cluster by default), the two
//! databases with the backend's schema, and the orders the runs consume.
//!
//! Both databases get the same accounts and the same orders, so pgbench and the
//! backend do the same work on tables of the same size. Order `bench_<k>` charges
//! account `k mod accounts` with [`order_amount`]`(k)` EUR cents; every run takes
//! the next unused `k`s, so each callback finds its own PENDING order.

use anyhow::Context;
use sqlx::{PgPool, Row};
use std::path::PathBuf;
use std::time::Duration;

/// Order numbers are `ORDER_PREFIX` + k in [`ORDER_DIGITS`] zero-padded
/// decimal digits: the shape the backend's order numbers have (`ord_` and 28
/// hex digits; the routes refuse any other), so the pay routes take them.
pub const ORDER_PREFIX: &str = "ord_";
/// Digits after [`ORDER_PREFIX`].
pub const ORDER_DIGITS: usize = 28;

/// The number of order `k`.
pub fn order_no(k: i64) -> String {
    format!("{ORDER_PREFIX}{k:0>width$}", width = ORDER_DIGITS)
}

/// SQL (or a pgbench expression) for the number of the order whose `k` is `k_expr`.
pub fn order_no_sql(k_expr: &str) -> String {
    format!("('{ORDER_PREFIX}' || lpad(({k_expr})::text, {ORDER_DIGITS}, '0'))")
}
/// Callback ids are `CALLBACK_PREFIX` + k.
pub const CALLBACK_PREFIX: &str = "cb_";
/// Platform payment ids are `PAYMENT_PREFIX` + k.
pub const PAYMENT_PREFIX: &str = "pay_";
/// Every account opens with this balance, far more than all runs can spend.
pub const OPENING_BALANCE_CENTS: i64 = 1_000_000_000_000_000;

/// The amount of order `k`, in cents (the SQL in [`OrderStock::ensure`] uses the same formula).
pub fn order_amount(k: i64) -> i64 {
    1000 + k % 1000
}

/// A PostgreSQL server: our own cluster, or one given by URL.
pub struct Server {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// User name.
    pub user: String,
    owned: Option<OwnedCluster>,
}

impl Server {
    /// Parses `postgres://user@host:port` (no password: trust authentication).
    pub fn from_url(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .context("--postgres must be `own` or postgres://user@host:port")?;
        let rest = rest.split('/').next().unwrap_or(rest);
        let (user, host_port) = rest.split_once('@').unwrap_or(("postgres", rest));
        let (host, port) = host_port.split_once(':').unwrap_or((host_port, "5432"));
        Ok(Self {
            host: host.to_owned(),
            port: port.parse().context("port in --postgres")?,
            user: user.to_owned(),
            owned: None,
        })
    }

    /// Initialises and starts a private cluster (see [`OwnedCluster`]).
    pub fn start_owned() -> anyhow::Result<Self> {
        let cluster = OwnedCluster::start()?;
        Ok(Self {
            host: "127.0.0.1".into(),
            port: cluster.port,
            user: "postgres".into(),
            owned: Some(cluster),
        })
    }

    /// True when this is our private cluster.
    pub fn is_owned(&self) -> bool {
        self.owned.is_some()
    }

    /// The postmaster's process id, for CPU accounting (own cluster only).
    pub fn postmaster_pid(&self) -> Option<u32> {
        self.owned.as_ref().and_then(OwnedCluster::postmaster_pid)
    }

    /// A description for the report.
    pub fn describe(&self) -> String {
        match &self.owned {
            Some(cluster) => format!(
                "private cluster started by the benchmark (initdb defaults, {}; data directory on the same disk as the system cluster)",
                cluster.settings
            ),
            None => format!("server at {}:{}", self.host, self.port),
        }
    }

    /// The server's URL, without a database.
    pub fn server_url(&self) -> String {
        format!("postgres://{}@{}:{}", self.user, self.host, self.port)
    }

    /// The URL of database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("{}/{db}", self.server_url())
    }

    /// `-h host -p port -U user` for the command-line tools.
    pub fn cli_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.host.clone(),
            "-p".into(),
            self.port.to_string(),
            "-U".into(),
            self.user.clone(),
        ]
    }

    /// Drops databases we made (nothing to do for our own cluster: it is removed whole).
    pub async fn drop_databases(&self, names: &[String]) -> anyhow::Result<()> {
        if self.is_owned() {
            return Ok(());
        }
        let server = self.server_url();
        for name in names {
            storm::drop_database(&server, name).await?;
        }
        Ok(())
    }

    /// Keeps the private cluster's directory instead of removing it at the end.
    pub fn keep(&mut self) {
        if let Some(cluster) = &mut self.owned {
            cluster.keep = true;
        }
    }
}

/// A PostgreSQL cluster of our own: same binaries as the system's, initdb defaults
/// (fsync on, synchronous_commit on, shared_buffers 128 MB), plus room for 100
/// pgbench clients next to the backend's pool, and `pg_stat_statements` to see
/// where the database time goes. Stopped and removed when dropped.
pub struct OwnedCluster {
    /// Its port.
    pub port: u16,
    data: PathBuf,
    bin: PathBuf,
    settings: String,
    keep: bool,
}

impl OwnedCluster {
    /// The settings given on top of initdb's defaults.
    const OPTIONS: &'static str = "-c max_connections=300 -c shared_preload_libraries=pg_stat_statements \
         -c pg_stat_statements.track=all -c track_wal_io_timing=on -c autovacuum=off";

    fn start() -> anyhow::Result<Self> {
        let cluster = Self {
            port: storm::processes::free_port()?,
            data: storm::processes::postgres_data_dir("checkout-bench-pg")?,
            bin: storm::processes::postgres_bin_dir()?,
            settings: "max_connections=300, pg_stat_statements loaded, track_wal_io_timing=on, \
                       autovacuum=off: the benchmark VACUUMs before every run, as pgbench does"
                .into(),
            keep: false,
        };
        let data = cluster.data.display().to_string();
        cluster.pg(&[
            "initdb",
            "-D",
            &data,
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        ])?;
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={data} {}",
            cluster.port,
            Self::OPTIONS
        );
        let log = cluster.data.join("server.log").display().to_string();
        cluster.pg(&[
            "pg_ctl", "start", "-D", &data, "-w", "-l", &log, "-o", &options,
        ])?;
        Ok(cluster)
    }

    fn postmaster_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.data.join("postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }

    fn pg(&self, args: &[&str]) -> anyhow::Result<()> {
        storm::processes::run_postgres_tool(&self.bin, args)
    }
}

impl Drop for OwnedCluster {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ = self.pg(&["pg_ctl", "stop", "-D", &data, "-w", "-m", "fast"]);
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.data);
        }
    }
}

/// Settings of the server that decide the physical limit, for the report.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ServerSettings {
    /// `SHOW server_version`.
    pub version: String,
    /// `SHOW fsync`.
    pub fsync: String,
    /// `SHOW synchronous_commit`.
    pub synchronous_commit: String,
    /// `SHOW shared_buffers`.
    pub shared_buffers: String,
    /// `SHOW max_connections`.
    pub max_connections: String,
    /// `SHOW wal_sync_method`.
    pub wal_sync_method: String,
}

/// Reads [`ServerSettings`].
pub async fn settings(pool: &PgPool) -> anyhow::Result<ServerSettings> {
    let show = |name: &'static str| async move {
        sqlx::query_scalar::<_, String>(&format!("SHOW {name}"))
            .fetch_one(pool)
            .await
            .with_context(|| format!("SHOW {name}"))
    };
    Ok(ServerSettings {
        version: show("server_version").await?,
        fsync: show("fsync").await?,
        synchronous_commit: show("synchronous_commit").await?,
        shared_buffers: show("shared_buffers").await?,
        max_connections: show("max_connections").await?,
        wal_sync_method: show("wal_sync_method").await?,
    })
}

/// The email of the shopper who owns every bench order.
pub const BENCH_SHOPPER_EMAIL: &str = "bench@shop.test";
/// Their password (a bench database is scratch data).
pub const BENCH_SHOPPER_PASSWORD: &str = "bench-shopper-password";

/// Creates database `name` with the backend's schema (its own migrations) and
/// `accounts` accounts; returns a small pool for setting up and inspecting it.
pub async fn create_database(server: &Server, name: &str, accounts: i64) -> anyhow::Result<PgPool> {
    let pool = backend::startup::connect_and_migrate(&server.url(name), 4)
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
    // One shopper owns every bench order (pay now signs in as them); the charges
    // still spread over the accounts, as many shoppers' would.
    let hash =
        backend::http::auth::passwords::hash(secrecy::SecretString::from(BENCH_SHOPPER_PASSWORD))
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
    if server.is_owned() {
        sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .execute(&pool)
            .await?;
    }
    Ok(pool)
}

/// The PENDING orders of one database: `bench_<next>..bench_<end-1>` exist and are unused.
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

    /// The first unused order number's `k`.
    pub fn next(&self) -> i64 {
        self.next
    }

    /// Creates orders until at least `count` unused ones exist.
    pub async fn ensure(&mut self, count: i64) -> anyhow::Result<()> {
        let want_end = self.next + count;
        if want_end <= self.end {
            return Ok(());
        }
        // Create in one go, with room to spare, so top-ups are rare.
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
    /// attempt naming platform payment `PAYMENT_PREFIX || k` (the id the
    /// bench's callbacks carry) and its amount held on its account. A success
    /// callback charges only the payment we handed over, so the new-callback
    /// path needs this; orders handed over before are left as they are.
    pub async fn ensure_handed_over(&mut self, count: i64) -> anyhow::Result<()> {
        self.ensure(count).await?;
        sqlx::query(
            "WITH handed AS (
                 INSERT INTO payment_attempts
                     (payment_id, request_token, order_no, amount_cents, currency, response_status,
                      response_body, status, submitted_at, platform_payment_id)
                 SELECT md5('bench-attempt-' || k)::uuid, md5('bench-token-' || k)::uuid, o.order_no,
                        o.amount_cents, o.currency, 202, '{}'::jsonb, 'SUBMITTED', now(), $4 || k
                 FROM generate_series($1, $2 - 1) k JOIN orders o ON o.order_no = $3 || lpad(k::text, 28, '0')
                 WHERE o.status = 'PENDING'
                   AND NOT EXISTS (SELECT 1 FROM payment_attempts p WHERE p.order_no = o.order_no)
                 RETURNING order_no, amount_cents)
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

    /// Marks everything up to the highest order that `table` (with an `order_no`
    /// column) mentions as used.
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

/// Before every run, like pgbench does for its own tables: `VACUUM` the tables
/// whose rows each callback updates (the 1,000 account rows collect dead versions
/// fast), then `CHECKPOINT`, so no run pays for the previous run's dirty pages.
pub async fn settle(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::query("VACUUM (ANALYZE) accounts, orders")
        .execute(pool)
        .await?;
    sqlx::query("CHECKPOINT").execute(pool).await?;
    Ok(())
}

/// One statement's share of the database time, from `pg_stat_statements`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StatementTime {
    /// The normalised statement text.
    pub query: String,
    /// How often it ran.
    pub calls: i64,
    /// Total execution time, ms.
    pub total_ms: f64,
}

/// True for the benchmark's own bookkeeping queries (WAL samples, waits, order counting).
pub fn is_bookkeeping(query: &str) -> bool {
    ["pg_stat_", "pg_current_wal", "substr(order_no"]
        .iter()
        .any(|mark| query.contains(mark))
}

/// Forgets all statement statistics (own cluster only).
pub async fn reset_statements(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::query("SELECT pg_stat_statements_reset()")
        .execute(pool)
        .await?;
    Ok(())
}

/// The statements run in database `db` since the last reset, slowest total first.
pub async fn statement_times(pool: &PgPool, db: &str) -> anyhow::Result<Vec<StatementTime>> {
    let rows = sqlx::query(
        "SELECT s.query, s.calls, s.total_exec_time FROM pg_stat_statements s
         JOIN pg_database d ON d.oid = s.dbid
         WHERE d.datname = $1
           -- the benchmark's own bookkeeping queries
           AND s.query NOT LIKE '%pg_stat_%' AND s.query NOT LIKE '%pg_current_wal%'
           AND s.query NOT LIKE '%substr(order_no%'
         ORDER BY s.total_exec_time DESC LIMIT 20",
    )
    .bind(db)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(StatementTime {
                query: row.try_get("query")?,
                calls: row.try_get("calls")?,
                total_ms: row.try_get("total_exec_time")?,
            })
        })
        .collect()
}

/// Waits until nothing but us is connected to `db` (pgbench's connections closing).
pub async fn wait_idle(pool: &PgPool, db: &str) -> anyhow::Result<()> {
    for _ in 0..50 {
        let active: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()",
        )
        .bind(db)
        .fetch_one(pool)
        .await?;
        if active == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// WAL written during a window, from `pg_stat_wal` and the WAL insert position.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct WalUse {
    /// Length of the window, seconds.
    pub window_s: f64,
    /// Bytes of WAL inserted.
    pub bytes: f64,
    /// WAL records.
    pub records: f64,
    /// Full-page images among them.
    pub full_page_images: f64,
    /// `fsync`s (or equivalent) of WAL: group commit shares one among many commits.
    pub syncs: f64,
    /// Time spent in those syncs, ms (needs `track_wal_io_timing`, on in our own cluster).
    pub sync_ms: f64,
}

impl WalUse {
    /// Mean time of one WAL sync, ms: how fast the disk makes a commit durable.
    pub fn mean_sync_ms(&self) -> Option<f64> {
        (self.syncs > 0.0 && self.sync_ms > 0.0).then(|| self.sync_ms / self.syncs)
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct WalSample {
    lsn_bytes: f64,
    records: f64,
    fpi: f64,
    syncs: f64,
    sync_ms: f64,
}

async fn wal_sample(pool: &PgPool) -> anyhow::Result<WalSample> {
    let row = sqlx::query(
        "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::float8 AS lsn,
                wal_records::float8 AS records, wal_fpi::float8 AS fpi, wal_sync::float8 AS syncs,
                wal_sync_time AS sync_ms
         FROM pg_stat_wal",
    )
    .fetch_one(pool)
    .await?;
    Ok(WalSample {
        lsn_bytes: row.try_get("lsn")?,
        records: row.try_get("records")?,
        fpi: row.try_get("fpi")?,
        syncs: row.try_get("syncs")?,
        sync_ms: row.try_get("sync_ms")?,
    })
}

/// Samples WAL at `from` and at `to` in the background. Statistics of busy
/// connections reach `pg_stat_wal` about once a second, with the same lag at
/// both ends of the window, so the difference is close to the truth.
pub fn watch_wal(
    pool: PgPool,
    from: tokio::time::Instant,
    to: tokio::time::Instant,
) -> tokio::task::JoinHandle<Option<WalUse>> {
    tokio::spawn(async move {
        tokio::time::sleep_until(from).await;
        let start = wal_sample(&pool).await.ok()?;
        let began = tokio::time::Instant::now();
        tokio::time::sleep_until(to).await;
        let end = wal_sample(&pool).await.ok()?;
        Some(WalUse {
            window_s: began.elapsed().as_secs_f64(),
            bytes: end.lsn_bytes - start.lsn_bytes,
            records: end.records - start.records,
            full_page_images: end.fpi - start.fpi,
            syncs: end.syncs - start.syncs,
            sync_ms: end.sync_ms - start.sync_ms,
        })
    })
}
