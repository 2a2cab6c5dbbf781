//! Start-up refusals: the backend binary, run as a deploy would run it, refuses
//! configurations that would take money wrongly, with one line that says what
//! to set, before it connects to anything.

use std::process::{Command, Output};

/// Runs the backend binary with exactly these variables (nothing inherited).
fn run_backend(args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_backend"))
        .args(args)
        .env_clear()
        .envs(vars.iter().copied())
        // Nothing listens here: a start that got past the checks would fail
        // differently (and later), not with the refusal under test.
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/checkout")
        .env("RUST_LOG", "off")
        .output()
        .expect("the backend binary runs")
}

fn refusal(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(2), "exit code of a refusal");
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn without_platform_the_backend_refuses_to_start_and_says_what_to_set() {
    let output = run_backend(&[], &[]);

    let line = refusal(&output);
    assert!(line.starts_with("error: PLATFORM is not set"), "{line}");
    assert!(line.contains("PLATFORM=sandbox") && line.contains("PLATFORM=remote"));
}

#[test]
fn a_remote_platform_without_url_or_secret_is_refused() {
    let line = refusal(&run_backend(&[], &[("PLATFORM", "remote")]));
    assert!(line.contains("PLATFORM_URL"), "{line}");

    let line = refusal(&run_backend(
        &[],
        &[
            ("PLATFORM", "remote"),
            ("PLATFORM_URL", "http://127.0.0.1:4000"),
        ],
    ));
    assert!(line.contains("WEBHOOK_SECRET is not set"), "{line}");
}

#[test]
fn an_empty_or_short_webhook_secret_is_refused_without_printing_it() {
    for secret in ["whsec_", "whsec_c2hvcnQta2V5LTE2Ynl0ZQ=="] {
        for platform in ["sandbox", "remote"] {
            let output = run_backend(
                &[],
                &[
                    ("PLATFORM", platform),
                    ("PLATFORM_URL", "http://127.0.0.1:4000"),
                    ("WEBHOOK_SECRET", secret),
                ],
            );
            let line = refusal(&output);
            assert!(line.contains("WEBHOOK_SECRET is not usable"), "{line}");
            assert!(line.contains("at least 24"), "{line}");
            let key = secret.trim_start_matches("whsec_");
            assert!(
                key.is_empty() || !line.contains(key),
                "secret printed: {line}"
            );
        }
    }
}

#[test]
fn an_unknown_platform_name_is_refused() {
    let output = run_backend(&[], &[("PLATFORM", "paypal")]);

    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("sandbox") && stderr.contains("remote"),
        "{stderr}"
    );
}

#[test]
fn help_never_shows_the_secrets_set_in_the_environment() {
    let secret = callback_signing::CallbackSecret::generate();
    let output = run_backend(
        &["--help"],
        &[
            ("WEBHOOK_SECRET", secret.expose()),
            ("ADMIN_TOKEN", "admin-token-in-the-environment-32+"),
            ("MERCHANT_API_KEY", "merchant-key-in-the-environment-32+"),
        ],
    );

    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(
        help.contains("WEBHOOK_SECRET"),
        "documents the variable: {help}"
    );
    assert!(!help.contains(&secret.expose()[6..]), "{help}");
    assert!(!help.contains("admin-token-in-the-environment"), "{help}");
    assert!(!help.contains("merchant-key-in-the-environment"), "{help}");
}

#[test]
fn an_empty_merchant_key_is_refused_instead_of_opening_the_merchant_api() {
    let line = refusal(&run_backend(
        &[],
        &[("PLATFORM", "sandbox"), ("MERCHANT_API_KEY", "")],
    ));
    assert!(
        line.contains("MERCHANT_API_KEY must be at least 32 characters"),
        "{line}"
    );
}

#[test]
fn an_empty_admin_token_is_refused_instead_of_opening_the_admin_api() {
    let line = refusal(&run_backend(
        &[],
        &[("PLATFORM", "sandbox"), ("ADMIN_TOKEN", "")],
    ));
    assert!(
        line.contains("ADMIN_TOKEN must be at least 32 characters"),
        "{line}"
    );
}

#[test]
fn the_published_example_webhook_secret_is_refused() {
    let line = refusal(&run_backend(
        &[],
        &[
            ("PLATFORM", "remote"),
            ("PLATFORM_URL", "http://127.0.0.1:4000"),
            ("WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        ],
    ));
    assert!(line.contains("published example"), "{line}");
}

/// A query's single value, run by psql on `database_url`.
fn psql_value(database_url: &str, sql: &str) -> String {
    let output = Command::new("psql")
        .args([
            "-X",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            database_url,
            "-c",
            sql,
        ])
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn backend_migrate_creates_and_migrates_the_database_says_so_and_exits_0() {
    let database = testkit::TestDatabase::new("checkout_test");
    let migrate = || {
        Command::new(env!("CARGO_BIN_EXE_backend"))
            .arg("migrate")
            .env_clear()
            // No PLATFORM and no secrets: migrating needs only the database.
            .env("DATABASE_URL", database.url())
            .env("RUST_LOG", "off")
            .output()
            .expect("the backend binary runs")
    };

    let first = migrate();

    let said = String::from_utf8_lossy(&first.stdout).into_owned();
    assert_eq!(
        first.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        said.contains(&format!("database \"{}\" (created)", database.name())),
        "{said}"
    );
    assert!(said.contains("applied migration 20261202000001"), "{said}");
    assert!(said.contains("applied migration 20261203000001"), "{said}");
    let all = backend::startup::MIGRATOR.iter().count();
    assert!(said.contains(&format!("applied {all} of {all}")), "{said}");
    assert_eq!(
        psql_value(
            &database.url(),
            "SELECT count(*) FROM _sqlx_migrations WHERE success"
        ),
        all.to_string()
    );
    assert_eq!(
        psql_value(
            &database.url(),
            "SELECT to_regclass('tower_sessions.session') IS NOT NULL"
        ),
        "t"
    );

    let second = migrate();

    let said = String::from_utf8_lossy(&second.stdout).into_owned();
    assert_eq!(second.status.code(), Some(0), "{said}");
    assert!(said.contains("(exists)"), "{said}");
    assert!(
        said.contains(&format!("all {all} migrations were already applied")),
        "{said}"
    );
    assert!(!said.contains("applied migration"), "{said}");
}

#[test]
fn an_unparsable_redis_sentinel_address_is_refused_without_printing_the_redis_password() {
    let line = refusal(&run_backend(
        &[],
        &[
            ("PLATFORM", "sandbox"),
            ("REDIS_URL", "redis://app:redis-password@127.0.0.1:6379/0"),
            ("REDIS_SENTINELS", "127.0.0.1:26379,sentinel-without-port"),
        ],
    ));
    assert!(line.contains("REDIS_SENTINELS must be"), "{line}");
    assert!(line.contains("sentinel-without-port"), "{line}");
    assert!(!line.contains("redis-password"), "{line}");
}
