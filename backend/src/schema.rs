//! The database schema: creating the database, applying the migrations, and
//! checking, before serving, that the role the app serves with sees a current
//! schema it may use.
//!
//! Two roles may be involved (docs/SECURITY.md, "Database roles"):
//! - the *owner* (`DATABASE_MIGRATION_URL`) creates the database, applies the
//!   sqlx migrations in `migrations/` and creates the session table, over one
//!   short-lived connection ([`migrate`]);
//! - the *app* (`DATABASE_URL`) only reads and writes rows: the serving pool
//!   never runs DDL when a migration URL is given ([`prepare`]).
//!
//! With one URL for both (no `DATABASE_MIGRATION_URL`), the serving role
//! migrates whatever is pending, as the backend always did; when nothing is
//! pending it runs no DDL at all, so a DML-only role whose schema was migrated
//! in a separate step (`backend migrate`) starts too.

use anyhow::{Context, bail};
use sqlx::migrate::{MigrateDatabase, Migration, Migrator};
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, Postgres};
use std::collections::HashMap;
use std::time::Duration;
use tower_sessions_sqlx_store::PostgresStore;

/// The migrations in `migrations/`, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// The schema of the session store's table (`tower-sessions-sqlx-store`'s default).
pub const SESSION_SCHEMA: &str = "tower_sessions";
/// The session store's table in [`SESSION_SCHEMA`].
pub const SESSION_TABLE: &str = "session";

/// Where [`prepare`]'s hint points an operator whose app role may not migrate.
const ROLES_HINT: &str = "set DATABASE_MIGRATION_URL to the schema owner's URL, or run \
                          `backend migrate` with it first (docs/SECURITY.md, \"Database roles\")";

/// PostgreSQL's `insufficient_privilege`.
const INSUFFICIENT_PRIVILEGE: &str = "42501";

/// What [`migrate`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// The database, as the server names it.
    pub database: String,
    /// The role that migrated it.
    pub role: String,
    /// True when the database did not exist and was created.
    pub database_created: bool,
    /// The migrations applied by this run (version, description), in order.
    pub applied: Vec<(i64, String)>,
    /// How many migrations this build has in all.
    pub known: usize,
    /// True when the session table was created by this run.
    pub session_table_created: bool,
}

impl Migrated {
    /// What was done, one line per step, for `backend migrate` to print.
    pub fn report(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "database {:?} ({}), migrating as role {:?}",
            self.database,
            if self.database_created {
                "created"
            } else {
                "exists"
            },
            self.role
        )];
        for (version, description) in &self.applied {
            lines.push(format!("applied migration {version} {description}"));
        }
        lines.push(format!(
            "session table {SESSION_SCHEMA}.{SESSION_TABLE}: {}",
            if self.session_table_created {
                "created"
            } else {
                "exists"
            }
        ));
        lines.push(if self.applied.is_empty() {
            format!(
                "schema is current: all {} migrations were already applied",
                self.known
            )
        } else {
            format!(
                "schema is current: applied {} of {} migrations; if the app serves as its own role, \
                 run scripts/db-roles.sql again now so it may use new tables",
                self.applied.len(),
                self.known
            )
        });
        lines
    }
}

/// Creates the database if missing, applies the pending migrations and creates
/// the session table, over one connection that is closed before returning.
/// `url` is the schema owner's (or, with one role for everything, the app's).
pub async fn migrate(url: &str) -> anyhow::Result<Migrated> {
    let database_created = create_database_if_missing(url).await?;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .with_context(|| format!("cannot connect to {} to migrate it", redact(url)))?;
    let result = migrate_on(&pool).await;
    pool.close().await;
    let mut migrated = result?;
    migrated.database_created = database_created;
    Ok(migrated)
}

/// The serving pool, on a current schema.
///
/// With `migration_url`, the migrations run over a short-lived connection with
/// it ([`migrate`]) and the pool on `database_url` runs no DDL at all. Without
/// it, `database_url` does both, as it always did: the database is created if
/// missing and pending migrations are applied; a role that may not do that gets
/// one line saying what to set.
///
/// Either way the pool's role must then see every migration applied and be able
/// to read every table (a table added by a migration but not yet granted to the
/// app role is refused here, not at the first request that needs it).
pub async fn prepare(
    database_url: &str,
    migration_url: Option<&str>,
    max_connections: u32,
) -> anyhow::Result<PgPool> {
    let db = match migration_url {
        Some(owner) => {
            let migrated = migrate(owner)
                .await
                .context("cannot migrate with DATABASE_MIGRATION_URL")?;
            tracing::info!(
                role = %migrated.role,
                database = %migrated.database,
                applied = migrated.applied.len(),
                "migrations checked with DATABASE_MIGRATION_URL"
            );
            open_pool(database_url, max_connections).await?
        }
        None => {
            create_database_if_missing(database_url).await?;
            let db = open_pool(database_url, max_connections).await?;
            if needs_ddl(&db).await? {
                migrate_on(&db).await?;
            }
            db
        }
    };
    check_serving_role(&db).await?;
    Ok(db)
}

/// Creates the database if it does not exist; returns whether it did.
async fn create_database_if_missing(url: &str) -> anyhow::Result<bool> {
    if Postgres::database_exists(url)
        .await
        .with_context(|| format!("cannot reach PostgreSQL at {}", redact(url)))?
    {
        return Ok(false);
    }
    tracing::info!(database = %redact(url), "creating the database");
    if let Err(err) = Postgres::create_database(url).await {
        // Another process may have created it at the same moment.
        if !Postgres::database_exists(url).await.unwrap_or(false) {
            return Err(err).context("cannot create the database");
        }
        return Ok(false);
    }
    Ok(true)
}

async fn open_pool(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(max_connections)
        // A missing database must turn into a quick 503, not a hung request.
        .acquire_timeout(Duration::from_secs(3))
        // No health-check round trip at every checkout (it cost 10-15% of callback
        // throughput, docs/BENCHMARKS.md): a dead connection fails its first
        // statement instead, the request answers 503, the platform retries, and
        // sqlx drops the connection.
        .test_before_acquire(false)
        .connect(url)
        .await
        .context("cannot connect to the database")
}

/// Applies what is pending over `db`, without DDL when nothing is.
async fn migrate_on(db: &PgPool) -> anyhow::Result<Migrated> {
    let (database, role): (String, String) =
        sqlx::query_as("SELECT current_database()::text, current_user::text")
            .fetch_one(db)
            .await
            .context("cannot ask the database who we are")?;
    let pending = pending_migrations(db).await?;
    if !pending.is_empty() {
        MIGRATOR
            .run(db)
            .await
            .map_err(anyhow::Error::from)
            .map_err(|err| explain_privileges(err, "cannot apply migrations"))?;
    }
    let session_table_created = !session_table_exists(db).await?;
    if session_table_created {
        PostgresStore::new(db.clone())
            .migrate()
            .await
            .map_err(anyhow::Error::from)
            .map_err(|err| explain_privileges(err, "cannot create the session table"))?;
    }
    Ok(Migrated {
        database,
        role,
        database_created: false,
        applied: pending
            .iter()
            .map(|m| (m.version, m.description.to_string()))
            .collect(),
        known: up_migrations().count(),
        session_table_created,
    })
}

/// Whether the schema needs any DDL: a pending migration or no session table.
async fn needs_ddl(db: &PgPool) -> anyhow::Result<bool> {
    Ok(!pending_migrations(db).await?.is_empty() || !session_table_exists(db).await?)
}

fn up_migrations() -> impl Iterator<Item = &'static Migration> {
    MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
}

/// The migrations of this build not yet applied, read without DDL. Refuses what
/// `sqlx migrate` refuses: a half-applied migration, an applied one this build
/// does not know, one whose file changed since it was applied.
async fn pending_migrations(db: &PgPool) -> anyhow::Result<Vec<&'static Migration>> {
    let table: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(db)
        .await
        .context("cannot look for the migrations table")?;
    if !table {
        return Ok(up_migrations().collect());
    }
    let rows: Vec<(i64, Vec<u8>, bool)> =
        sqlx::query_as("SELECT version, checksum, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(db)
            .await
            .map_err(anyhow::Error::from)
            .map_err(|err| match permission_denied(&err) {
                Some(message) => anyhow::anyhow!(
                    "cannot read _sqlx_migrations: {message} (scripts/db-roles.sql grants the app \
                     role SELECT on it: run it again after migrating)"
                ),
                None => err.context("cannot read _sqlx_migrations"),
            })?;
    if let Some((version, _, _)) = rows.iter().find(|(_, _, success)| !success) {
        bail!(
            "migration {version} was left half-applied (dirty): repair it by hand before starting"
        );
    }
    let applied: HashMap<i64, &[u8]> = rows
        .iter()
        .map(|(version, checksum, _)| (*version, checksum.as_slice()))
        .collect();
    for version in applied.keys() {
        if !MIGRATOR.version_exists(*version) {
            bail!(
                "the database has migration {version}, which this build does not know \
                 (is this build older than the database?)"
            );
        }
    }
    let mut pending = Vec::new();
    for migration in up_migrations() {
        match applied.get(&migration.version) {
            Some(checksum) if *checksum != &*migration.checksum => bail!(
                "migration {} was changed after it was applied (never edit an applied migration)",
                migration.version
            ),
            Some(_) => {}
            None => pending.push(migration),
        }
    }
    Ok(pending)
}

async fn session_table_exists(db: &PgPool) -> anyhow::Result<bool> {
    // The catalogue, not to_regclass: a role without USAGE on the schema can
    // still learn whether the table is there.
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = $2)",
    )
    .bind(SESSION_SCHEMA)
    .bind(SESSION_TABLE)
    .fetch_one(db)
    .await
    .context("cannot look for the session table")
}

/// Refuses a serving role that would fail at its first request: a schema not
/// migrated (the migration URL named another database?), or tables it may not read.
async fn check_serving_role(db: &PgPool) -> anyhow::Result<()> {
    let pending = pending_migrations(db).await?;
    if !pending.is_empty() {
        bail!(
            "the database DATABASE_URL names is not migrated ({} of {} migrations pending): \
             do DATABASE_URL and DATABASE_MIGRATION_URL name the same database?",
            pending.len(),
            up_migrations().count()
        );
    }
    if !session_table_exists(db).await? {
        bail!(
            "the database DATABASE_URL names has no session table {SESSION_SCHEMA}.{SESSION_TABLE}: {ROLES_HINT}"
        );
    }
    let unreadable: Vec<String> = sqlx::query_scalar(
        "SELECT format('%I.%I', n.nspname, c.relname)
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relkind IN ('r', 'p', 'v') AND n.nspname IN (current_schema(), $1)
           AND NOT (has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT'))
         ORDER BY 1",
    )
    .bind(SESSION_SCHEMA)
    .fetch_all(db)
    .await
    .context("cannot check the serving role's privileges")?;
    if !unreadable.is_empty() {
        bail!(
            "the role in DATABASE_URL may not read {}: run scripts/db-roles.sql again after \
             migrating (docs/SECURITY.md, \"Database roles\")",
            unreadable.join(", ")
        );
    }
    Ok(())
}

/// The database's message when `err` is a `permission denied` (insufficient privilege).
fn permission_denied(err: &anyhow::Error) -> Option<String> {
    err.chain().find_map(|cause| {
        let db = cause
            .downcast_ref::<sqlx::Error>()
            .and_then(sqlx::Error::as_database_error)?;
        (db.code().as_deref() == Some(INSUFFICIENT_PRIVILEGE)).then(|| db.message().to_owned())
    })
}

/// Says what to do when the failure is a role that may not change the schema.
fn explain_privileges(err: anyhow::Error, what: &str) -> anyhow::Error {
    match permission_denied(&err) {
        Some(message) => {
            anyhow::anyhow!("{what}: {message}: this role may not change the schema; {ROLES_HINT}")
        }
        None => err.context(what.to_owned()),
    }
}

/// A database URL without its user and password, for messages.
pub fn redact(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((scheme_and_user, host)) => {
            let scheme = scheme_and_user.split("://").next().unwrap_or("postgres");
            format!("{scheme}://***@{host}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_user_and_password() {
        assert_eq!(
            redact("postgres://app:s3cr@t@db:5432/checkout"),
            "postgres://***@db:5432/checkout"
        );
        assert_eq!(
            redact("postgres://127.0.0.1/checkout"),
            "postgres://127.0.0.1/checkout"
        );
    }

    #[test]
    fn the_report_says_what_was_applied_and_to_re_grant() {
        let migrated = Migrated {
            database: "checkout".into(),
            role: "checkout_owner".into(),
            database_created: true,
            applied: vec![(1, "core schema".into())],
            known: 2,
            session_table_created: false,
        };
        let report = migrated.report().join("\n");
        assert!(report.contains("\"checkout\" (created)"), "{report}");
        assert!(
            report.contains("applied migration 1 core schema"),
            "{report}"
        );
        assert!(report.contains("applied 1 of 2"), "{report}");
        assert!(report.contains("scripts/db-roles.sql"), "{report}");
    }
}
