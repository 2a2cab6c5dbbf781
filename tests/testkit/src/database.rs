//! Where the test services are, and a PostgreSQL database per test.

use std::process::Command;

/// `TEST_POSTGRES_URL`: the PostgreSQL server tests create their databases on
/// (no database name), default `postgres://postgres@127.0.0.1:5432`.
/// `scripts/ensure-services.sh` sets it when it runs the project's own cluster.
pub fn postgres_server_url() -> String {
    std::env::var("TEST_POSTGRES_URL")
        .map(|url| url.trim_end_matches('/').to_owned())
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// `TEST_REDIS_URL`: the Redis tests share (each with its own key prefix),
/// default `redis://127.0.0.1:6379`.
pub fn redis_url() -> String {
    std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The name of one test's database. The app creates and migrates it; when the
/// test passes it is dropped, and when it fails it is kept and its name printed,
/// so the state that failed can be looked at with `psql`.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    server: String,
}

impl TestDatabase {
    /// A fresh name, `{prefix}_{uuid}`, on [`postgres_server_url`]. Nothing is created yet.
    pub fn new(prefix: &str) -> Self {
        Self {
            name: format!("{prefix}_{}", uuid::Uuid::new_v4().simple()),
            server: postgres_server_url(),
        }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its URL, for `DATABASE_URL`.
    pub fn url(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "test failed: kept its database for inspection: psql {}",
                self.url()
            );
            return;
        }
        // `Drop` cannot await and may run on a runtime's thread: psql does the
        // drop synchronously. FORCE ends the connections the app still holds.
        let dropped = Command::new("psql")
            .args(["-q", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(format!("{}/postgres", self.server))
            .arg("-c")
            .arg(format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .output();
        match dropped {
            Ok(output) if output.status.success() => {}
            Ok(output) => eprintln!(
                "could not drop test database {}: {}",
                self.name,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(err) => eprintln!("could not run psql to drop {}: {err}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_fresh_and_urls_put_the_name_on_the_server() {
        let (a, b) = (TestDatabase::new("unit"), TestDatabase::new("unit"));
        assert_ne!(a.name(), b.name());
        assert!(a.name().starts_with("unit_"));
        assert_eq!(a.url(), format!("{}/{}", postgres_server_url(), a.name()));
    }
}

#[cfg(test)]
mod lifecycle_tests {
    use super::*;

    fn exists(database: &str) -> bool {
        let output = Command::new("psql")
            .args(["-Atq", "-d"])
            .arg(format!("{}/postgres", postgres_server_url()))
            .arg("-c")
            .arg(format!(
                "SELECT count(*) FROM pg_database WHERE datname = '{database}'"
            ))
            .output()
            .expect("psql runs");
        String::from_utf8_lossy(&output.stdout).trim() == "1"
    }

    fn create(database: &TestDatabase) {
        let status = Command::new("psql")
            .args(["-q", "-d"])
            .arg(format!("{}/postgres", postgres_server_url()))
            .arg("-c")
            .arg(format!("CREATE DATABASE \"{}\"", database.name()))
            .status()
            .expect("psql runs");
        assert!(status.success());
    }

    #[test]
    fn a_passing_tests_database_is_dropped_and_a_failing_tests_is_kept() {
        let passing = TestDatabase::new("testkit_lifecycle");
        create(&passing);
        let name = passing.name().to_owned();
        assert!(exists(&name));
        drop(passing);
        assert!(!exists(&name), "dropped after a pass");

        let failing = TestDatabase::new("testkit_lifecycle");
        create(&failing);
        let kept = failing.name().to_owned();
        let outcome = std::panic::catch_unwind(move || {
            let _database = failing;
            panic!("the test fails");
        });
        assert!(outcome.is_err());
        assert!(exists(&kept), "kept after a failure");
        // Clean up what this test deliberately kept.
        drop(TestDatabase {
            name: kept.clone(),
            server: postgres_server_url(),
        });
        assert!(!exists(&kept));
    }
}
