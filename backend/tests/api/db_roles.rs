//! Least-privilege database roles (docs/SECURITY.md, "Database roles"): the
//! schema owner migrates, the app serves with a role that may only read and
//! write rows. Each test makes its own pair of roles with `scripts/db-roles.sql`
//! (roles are cluster-wide, so their names carry a fresh id) and drops them at
//! the end, also when the test fails.

use crate::helpers::{Payment, callback_body, new_callback_id, spawn_app_on, success_body};
use api_types::OrderStatus;
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use std::path::PathBuf;
use std::process::{Command, Output};
use testkit::{BackendProcess, TestDatabase};
use uuid::Uuid;

/// An owner and an app role for one test's database, made by `scripts/db-roles.sql`.
struct Roles {
    owner: String,
    app: String,
    owner_password: String,
    app_password: String,
    database: String,
    server: String,
}

impl Roles {
    fn new(database: &TestDatabase) -> Self {
        let id = &Uuid::new_v4().simple().to_string()[..12];
        let url = database.url();
        let server = url
            .strip_suffix(&format!("/{}", database.name()))
            .expect("the database URL ends with its name");
        Self {
            owner: format!("checkout_test_owner_{id}"),
            app: format!("checkout_test_app_{id}"),
            owner_password: Uuid::new_v4().simple().to_string(),
            app_password: Uuid::new_v4().simple().to_string(),
            database: database.name().to_owned(),
            server: server.to_owned(),
        }
    }

    /// The test database's URL as `role`.
    fn url(&self, role: &str, password: &str) -> String {
        let (scheme, rest) = self.server.split_once("://").expect("a URL");
        let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        format!("{scheme}://{role}:{password}@{host}/{}", self.database)
    }

    fn owner_url(&self) -> String {
        self.url(&self.owner, &self.owner_password)
    }

    fn app_url(&self) -> String {
        self.url(&self.app, &self.app_password)
    }

    /// Runs `scripts/db-roles.sql` as the superuser; returns what psql printed on stderr.
    fn apply_script(&self) -> String {
        let script = testkit::workspace_root().join("scripts/db-roles.sql");
        let output = Command::new("psql")
            .args(["-X", "-q", "-d"])
            .arg(format!("{}/postgres", self.server))
            .arg("-f")
            .arg(&script)
            .args(["-v", &format!("dbname={}", self.database)])
            .args(["-v", &format!("owner={}", self.owner)])
            .args(["-v", &format!("app={}", self.app)])
            .args(["-v", &format!("owner_password={}", self.owner_password)])
            .args(["-v", &format!("app_password={}", self.app_password)])
            .output()
            .expect("psql runs");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "db-roles.sql failed: {stderr}");
        stderr
    }

    /// A query's rows as text, run by psql as the superuser in the test database.
    fn superuser_rows(&self, sql: &str) -> Vec<String> {
        let output = Command::new("psql")
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(format!("{}/{}", self.server, self.database))
            .arg("-c")
            .arg(sql)
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Every table and view of the schema: (name, owner, may the app role read it).
    fn tables(&self) -> Vec<String> {
        self.superuser_rows(&format!(
            "SELECT format('%s %s %s', n.nspname || '.' || c.relname, pg_get_userbyid(c.relowner),
                           CASE WHEN has_table_privilege('{}', c.oid, 'SELECT')
                                THEN 'granted' ELSE 'missing' END)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.relkind IN ('r', 'p', 'v') AND n.nspname IN ('public', 'tower_sessions')
             ORDER BY 1",
            self.app
        ))
    }

    /// Checks every table is the owner's and readable by the app role (a table
    /// a migration adds without an entry in the script fails this).
    fn assert_tables_owned_and_granted(&self) {
        let tables = self.tables();
        assert!(
            tables.len() >= 13,
            "the schema and the session table: {tables:?}"
        );
        for table in &tables {
            let fields: Vec<&str> = table.split(' ').collect();
            assert_eq!(fields[1], self.owner, "owner of {table}");
            assert_eq!(
                fields[2], "granted",
                "{table} is not granted to the app role: list it in scripts/db-roles.sql"
            );
        }
    }
}

impl Drop for Roles {
    fn drop(&mut self) {
        // Whatever the roles own or were granted in the test database (kept for
        // inspection when the test failed) goes to the superuser, then the roles go.
        // A database already dropped makes the first step fail, harmlessly.
        // One statement each, app first: dropping both at once trips over the
        // default privilege the owner holds for the app ("could not find tuple").
        let roles = format!("{} and {}", self.owner, self.app);
        let _ = Command::new("psql")
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(format!("{}/{}", self.server, self.database))
            .arg("-c")
            .arg(format!("DROP OWNED BY \"{}\"", self.app))
            .arg("-c")
            .arg(format!(
                "REASSIGN OWNED BY \"{}\" TO CURRENT_USER",
                self.owner
            ))
            .arg("-c")
            .arg(format!("DROP OWNED BY \"{}\"", self.owner))
            .output();
        let dropped = Command::new("psql")
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(format!("{}/postgres", self.server))
            .arg("-c")
            .arg(format!(
                "DROP ROLE IF EXISTS \"{}\"; DROP ROLE IF EXISTS \"{}\"",
                self.app, self.owner
            ))
            .output();
        match dropped {
            Ok(output) if output.status.success() => {}
            Ok(output) => eprintln!(
                "could not drop test roles {roles}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(err) => eprintln!("could not run psql to drop test roles {roles}: {err}"),
        }
    }
}

/// Runs the backend binary with exactly these variables (nothing inherited).
fn run_backend(args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_backend"))
        .args(args)
        .env_clear()
        .env("RUST_LOG", "off")
        .envs(vars.iter().copied())
        .output()
        .expect("the backend binary runs")
}

/// A start that must fail: exit 2 with one line on stderr, no panic.
fn refused_start(app_url: &str) -> String {
    let output = run_backend(
        &[],
        &[
            ("DATABASE_URL", app_url),
            ("PLATFORM", "sandbox"),
            ("REDIS_URL", &testkit::redis_url()),
            ("BIND_ADDR", "127.0.0.1:0"),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    assert_eq!(
        output.status.code(),
        Some(2),
        "a refusal, not a panic: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Statements the app role must be refused, with `insufficient_privilege`.
const FORBIDDEN: &[&str] = &[
    "DROP TABLE orders",
    "ALTER TABLE orders ADD COLUMN x int",
    "CREATE TABLE t (x int)",
    "UPDATE payment_ledger SET amount_cents = 1",
    "DELETE FROM payment_ledger",
    // The books' entries are immutable, and no account is ever removed.
    "UPDATE transfers SET amount_cents = 1",
    "DELETE FROM transfers",
    "TRUNCATE transfers",
    "UPDATE ledger_accounts SET currency = 'USD'",
    "DELETE FROM ledger_accounts",
    "TRUNCATE accounts",
    // A key's hash and owner never change, and no merchant or key is removed;
    // an order never moves to another merchant.
    "UPDATE merchant_keys SET key_hash = 'x'",
    "UPDATE merchant_keys SET merchant_id = merchant_id",
    "DELETE FROM merchant_keys",
    "UPDATE merchants SET return_origins = '{}'",
    "DELETE FROM merchants",
    "UPDATE orders SET merchant_id = merchant_id",
    "UPDATE idempotency_keys SET response_status = 200",
    // Beyond the list: no rewriting what an order or an account was, no deleting
    // records, no schemas or temporary tables, no tampering with the migrations.
    "UPDATE orders SET amount_cents = 1",
    "UPDATE accounts SET opening_balance_cents = 0",
    "DELETE FROM orders",
    "DELETE FROM idempotency_keys",
    "UPDATE payment_callbacks SET outcome = 'x'",
    "DELETE FROM anomalies",
    "CREATE SCHEMA s",
    "CREATE TEMPORARY TABLE t (x int)",
    "DELETE FROM _sqlx_migrations",
    "DROP TABLE tower_sessions.session",
];

#[tokio::test]
async fn the_app_serves_as_a_role_that_may_only_read_and_write_rows() {
    let database = TestDatabase::new("checkout_test");
    let roles = Roles::new(&database);
    let first = roles.apply_script();
    assert!(first.contains("not there yet"), "{first}");

    // The owner migrates through the backend's own migrate step; the app URL is
    // set too, and must not be the one used.
    let migrated = run_backend(
        &["migrate"],
        &[
            ("DATABASE_URL", &roles.app_url()),
            ("DATABASE_MIGRATION_URL", &roles.owner_url()),
        ],
    );
    let said = stdout(&migrated);
    assert_eq!(
        migrated.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    assert!(
        said.contains(&format!("migrating as role \"{}\"", roles.owner)),
        "{said}"
    );
    assert!(said.contains("applied migration 20261202000001"), "{said}");
    assert!(
        said.contains("session table tower_sessions.session: created"),
        "{said}"
    );

    // Run again after migrating: the tables get their grants (and running twice is safe).
    let second = roles.apply_script();
    assert!(!second.contains("not there yet"), "{second}");
    assert!(!second.contains("WARNING"), "{second}");
    roles.assert_tables_owned_and_granted();

    let (app_url, owner_url) = (roles.app_url(), roles.owner_url());
    let app = spawn_app_on(database, |config| {
        config.database_url = app_url.into();
        config.database_migration_url = Some(SecretString::from(owner_url));
        // The test posts the platform's callbacks itself.
        config.sandbox_drop_callbacks = true;
    })
    .await;
    let (serving_as,): (String,) = sqlx::query_as("SELECT current_user::text")
        .fetch_one(&app.db)
        .await
        .expect("whoami");
    assert_eq!(serving_as, roles.app);

    // A whole checkout through HTTP: shopper, sign-in, catalogue, orders, tokens,
    // pays that succeed and fail, callbacks (a duplicate, a second success), sign-out.
    let account = app.create_shopper(10_000, "EUR").await;
    app.sign_in_as(&app.http, &account).await;
    app.put_product("roles-mug", "Mug", 1_250, "EUR").await;
    let placed = app
        .post_order(&json!({"sku": "roles-mug", "quantity": 2}))
        .await;
    assert_eq!(placed.status(), StatusCode::CREATED);
    let shop_order: api_types::api::Order = placed.json().await.expect("order");

    let order = app.create_order(&account, 2_000).await;
    let payment = app.hand_over(&order).await;
    let paid = app.post_success(&payment).await;
    assert_eq!(paid.status(), StatusCode::OK);
    assert_eq!(app.order(&order.order_no).await.status, OrderStatus::Paid);

    let declined = app.create_order(&account, 1_013).await;
    let payment = app.hand_over(&declined).await;
    let failed = app
        .post_callback(
            &new_callback_id(),
            &callback_body("payment.failed", &payment, 1_013, "EUR"),
        )
        .await;
    assert_eq!(failed.status(), StatusCode::OK);
    assert_eq!(
        app.order(&declined.order_no).await.status,
        OrderStatus::Failed
    );

    let payment = app.hand_over(&shop_order).await;
    let (id, body) = (new_callback_id(), success_body(&payment));
    for duplicate in [false, true] {
        let response = app.post_callback(&id, &body).await;
        assert_eq!(response.status(), StatusCode::OK);
        let answer: Value = response.json().await.expect("json");
        assert_eq!(answer, json!({"code": "SUCCESS", "duplicate": duplicate}));
    }
    let other = Payment::unsolicited(&shop_order);
    let again = app.post_success(&other).await;
    assert_eq!(again.status(), StatusCode::OK);
    app.assert_given_back_once(
        &shop_order,
        &other.platform_payment_id,
        &["SECOND_SUCCESS_FOR_PAID_ORDER"],
    )
    .await;
    assert_eq!(app.balance(&account).await, 10_000 - 2_000 - 2_500);
    assert_eq!(app.count("payment_ledger").await, 2);
    app.assert_invariants().await;
    let signed_out = app
        .http
        .delete(app.url("/api/session"))
        .send()
        .await
        .expect("sent");
    assert_eq!(signed_out.status(), StatusCode::NO_CONTENT);

    // The role itself: every statement that changes the schema or rewrites a
    // record is refused.
    let before = app.snapshot().await;
    let mut conn = PgConnection::connect(&roles.app_url())
        .await
        .expect("the app role connects");
    for statement in FORBIDDEN {
        let err = sqlx::query(statement)
            .execute(&mut conn)
            .await
            .expect_err(statement);
        let db = err
            .as_database_error()
            .unwrap_or_else(|| panic!("{statement}: {err}"));
        assert_eq!(
            db.code().as_deref(),
            Some("42501"),
            "{statement}: {}",
            db.message()
        );
        assert!(
            db.message().contains("permission denied") || db.message().contains("must be owner"),
            "{statement}: {}",
            db.message()
        );
    }
    conn.close().await.expect("closes");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("payment_ledger").await, 2);
}

#[tokio::test]
async fn an_app_role_alone_never_migrates_and_starts_once_the_owner_migrated_in_its_own_step() {
    let database = TestDatabase::new("checkout_test");
    let roles = Roles::new(&database);
    roles.apply_script();

    // Not migrated, and DATABASE_URL's role may not: one line that says what to set.
    let line = refused_start(&roles.app_url());
    assert!(line.starts_with("error: cannot apply migrations"), "{line}");
    assert!(line.contains("permission denied"), "{line}");
    assert!(
        line.contains("DATABASE_MIGRATION_URL") && line.contains("backend migrate"),
        "{line}"
    );
    assert_eq!(
        roles.superuser_rows(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname IN ('public', 'tower_sessions')"
        ),
        ["0"],
        "the app role created nothing"
    );

    // The deploy's migrate step, with the owner's URL only.
    let migrated = run_backend(&["migrate"], &[("DATABASE_URL", &roles.owner_url())]);
    assert_eq!(
        migrated.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let all = backend::startup::MIGRATOR.iter().count();
    assert!(
        stdout(&migrated).contains(&format!("schema is current: applied {all} of {all}")),
        "{}",
        stdout(&migrated)
    );
    let again = run_backend(&["migrate"], &[("DATABASE_URL", &roles.owner_url())]);
    assert_eq!(again.status.code(), Some(0));
    assert!(
        stdout(&again).contains(&format!("all {all} migrations were already applied")),
        "{}",
        stdout(&again)
    );

    // Migrated, but the script was not run again: the app role may not read the
    // new tables, and the backend says so at start instead of at the first request.
    let line = refused_start(&roles.app_url());
    assert!(line.contains("_sqlx_migrations"), "{line}");
    assert!(line.contains("scripts/db-roles.sql"), "{line}");

    // After the script, the app role alone starts (no DDL needed) and serves.
    roles.apply_script();
    let log = std::env::temp_dir().join(format!("checkout-db-roles-{}.log", roles.app));
    let backend = BackendProcess::start(
        &PathBuf::from(env!("CARGO_BIN_EXE_backend")),
        vec![
            ("DATABASE_URL".into(), roles.app_url()),
            ("PLATFORM".into(), "sandbox".into()),
            ("REDIS_URL".into(), testkit::redis_url()),
            (
                "REDIS_KEY_PREFIX".into(),
                format!("test:{}:", Uuid::new_v4().simple()),
            ),
            ("DEMO".into(), "true".into()),
            ("RUST_LOG".into(), "warn".into()),
        ],
        log.clone(),
    )
    .await
    .expect("the backend starts as the app role alone");
    let http = reqwest::Client::new();
    let health: Value = http
        .get(format!("{}/healthz", backend.url()))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(health, json!({"database": "ok", "redis": "ok"}));
    let products: Value = http
        .get(format!("{}/api/products", backend.url()))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert!(
        products.to_string().contains("coffee-beans"),
        "demo mode seeded the catalogue as the app role: {products}"
    );
    drop(backend);
    let _ = std::fs::remove_file(log);
}

#[tokio::test]
async fn a_database_migrated_by_the_superuser_is_handed_to_the_owner_role() {
    let database = TestDatabase::new("checkout_test");
    backend::schema::migrate(&database.url())
        .await
        .expect("the superuser migrates");
    let roles = Roles::new(&database);

    let stderr = roles.apply_script();

    assert!(stderr.contains("handing"), "{stderr}");
    roles.assert_tables_owned_and_granted();
    let functions = roles.superuser_rows(
        "SELECT DISTINCT pg_get_userbyid(proowner) FROM pg_proc p
         JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'",
    );
    assert_eq!(functions, std::slice::from_ref(&roles.owner));
    let db = backend::schema::prepare(&roles.app_url(), None, 2)
        .await
        .expect("the app role starts on the handed-over database");
    let err = sqlx::query("DROP TABLE payment_ledger")
        .execute(&db)
        .await
        .expect_err("the app role may not drop tables");
    assert_eq!(
        err.as_database_error().and_then(|e| e.code()).as_deref(),
        Some("42501")
    );
    db.close().await;
}
