//! The `storm` command, run as a user would: it starts the backend itself.

use std::process::Command;

/// Runs storm with `args` against the backend binary it starts itself, and
/// returns what it printed; fails the test unless it exited 0 and dropped the
/// database it made.
fn storm_succeeds(args: &[&str]) -> String {
    let backend = storm::processes::backend_binary().expect("backend binary");
    let output = Command::new(env!("CARGO_BIN_EXE_storm"))
        .args(args)
        .arg("--backend-bin")
        .arg(backend)
        .output()
        .expect("storm runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "storm failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_database_dropped(&stdout);
    stdout
}

#[test]
fn storm_replays_the_incident_quickly_and_reports_exactly_once() {
    let stdout = storm_succeeds(&[
        "--time-scale",
        "0.01",
        "--orders",
        "2",
        "--concurrency",
        "30",
        "--quiet",
    ]);

    assert!(
        stdout.contains("burst: 30 at once x 2 order(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("balance deducted: 9998 (expected 9998)"),
        "{stdout}"
    );
    assert!(stdout.contains("EXACTLY ONCE"), "{stdout}");
}

/// The database storm made for its backend (named on its "starting" line) is
/// gone after a run that ended exactly once.
fn assert_database_dropped(stdout: &str) {
    let name = stdout
        .split_whitespace()
        .find(|word| word.starts_with("checkout_storm_"))
        .unwrap_or_else(|| panic!("no database named in:\n{stdout}"));
    assert!(
        stdout.contains(&format!("storm: database {name} dropped")),
        "{stdout}"
    );
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/checkout".into());
    let server = url
        .rsplit_once('/')
        .map_or(url.as_str(), |(server, _)| server);
    let output = Command::new("psql")
        .args(["-Atq", "-d"])
        .arg(format!("{server}/postgres"))
        .arg("-c")
        .arg(format!(
            "SELECT count(*) FROM pg_database WHERE datname = '{name}'"
        ))
        .output()
        .expect("psql runs");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "0",
        "{name} still exists"
    );
}

/// The incident without callbacks, with `platform_args` before the rest: 2
/// orders the active query must settle, then 10 late copies at once each,
/// the retries, a restart and one more, all acknowledged and changing nothing.
fn storm_late(platform_args: &[&str]) -> String {
    let mut args = platform_args.to_vec();
    args.extend([
        "--drop-callbacks",
        "--time-scale",
        "0.01",
        "--orders",
        "2",
        "--concurrency",
        "10",
        "--quiet",
    ]);
    let stdout = storm_succeeds(&args);
    assert!(
        stdout.contains("the active query settled 2/2 order(s)"),
        "{stdout}"
    );
    assert_eq!(
        counts(&stdout, "burst: 10 at once x 2 order(s) (late)"),
        [20, 20, 0],
        "sent, acknowledged, other: {stdout}"
    );
    assert_eq!(stdout.matches("  query\n").count(), 2, "{stdout}");
    // The sandbox's shopper pays by wallet; a real platform's by platform,
    // which changes no wallet.
    let deducted = if platform_args.is_empty() { 9998 } else { 0 };
    assert!(
        stdout.contains(&format!(
            "balance deducted: {deducted} (expected {deducted})"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("EXACTLY ONCE"), "{stdout}");
    stdout
}

#[test]
fn storm_without_callbacks_waits_for_the_active_query_then_delivers_late() {
    storm_late(&[]);
}

/// The rows of the refund run's order table: order, status, refunds, REFUND
/// rows, refunded, settled by.
fn refund_rows(stdout: &str) -> Vec<Vec<&str>> {
    stdout
        .lines()
        .skip_while(|line| !(line.starts_with("order") && line.contains("REFUND rows")))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().collect())
        .collect()
}

/// The numbers after `phase` on its line of the phase table: sent, 200, other.
fn counts(stdout: &str, phase: &str) -> Vec<u64> {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(phase))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn storm_refunds_every_paid_order_once_through_the_same_callback_storm() {
    storm_refunds(&[]);
}

/// The refund incident after the payment incident, with `platform_args`
/// before the rest: 3 orders paid once, each refunded once in full through 20
/// copies at once of its refund result, the retries, a restart and one more.
fn storm_refunds(platform_args: &[&str]) -> String {
    let mut args = platform_args.to_vec();
    args.extend([
        "--refunds",
        "--time-scale",
        "0.01",
        "--orders",
        "3",
        "--concurrency",
        "20",
        "--quiet",
    ]);
    let stdout = storm_succeeds(&args);

    // Refunds run against platform-sim over HTTP (the in-process sandbox
    // forgets its payments on restart): the platform pays, no wallet changes.
    assert!(
        stdout.contains("balance deducted: 0 (expected 0)"),
        "paid first: {stdout}"
    );
    assert!(
        stdout.contains("3/3 replayed (Idempotent-Replayed: true, same refund_no)"),
        "{stdout}"
    );
    assert_eq!(
        counts(&stdout, "burst: 20 at once x 3 refund(s)"),
        [60, 60, 0],
        "sent, acknowledged, other: {stdout}"
    );
    assert_eq!(
        stdout.matches("after restart: 1 more").count(),
        2,
        "a restart in the payment and in the refund incident: {stdout}"
    );
    let rows = refund_rows(&stdout);
    assert_eq!(rows.len(), 3, "one row per order: {stdout}");
    for row in &rows {
        assert_eq!(
            row[1..5],
            ["REFUNDED", "1", "1", "4999"],
            "REFUNDED with one refund, one REFUND row, all of it back: {stdout}"
        );
    }
    assert!(
        stdout.contains("balance credited: 0 (expected 0); below opening: 0 (expected 0)"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("invariants: hold").count(), 2, "{stdout}");
    assert!(stdout.contains("EXACTLY ONCE"), "{stdout}");
    stdout
}

/// Runs the incident in `platform`'s notification format (2 CNY orders, 20
/// copies at once, 3 quick retries, a restart, one more) and checks what
/// every platform's run must print: every delivery acknowledged by the
/// platform's rule (`acknowledged`), one charge per order, the invariants.
fn storm_in_platform_format(platform: &str, acknowledged: &str) -> String {
    let stdout = storm_succeeds(&[
        "--platform",
        platform,
        "--schedule",
        "fixed:100msx3",
        "--time-scale",
        "0.1",
        "--orders",
        "2",
        "--concurrency",
        "20",
        "--quiet",
    ]);
    assert!(
        stdout.contains(&format!("platform-sim speaking {platform}")),
        "{stdout}"
    );
    assert_eq!(
        counts(&stdout, "burst: 20 at once x 2 order(s)"),
        [40, 40, 0],
        "sent, acknowledged, other: {stdout}"
    );
    assert_eq!(counts(&stdout, "retries: 3"), [6, 6, 0], "{stdout}");
    assert_eq!(
        counts(&stdout, "after restart: 1 more"),
        [2, 2, 0],
        "{stdout}"
    );
    // CNY orders of 49.99, one charge each, paid by the platform: no wallet changes.
    assert!(
        stdout.contains("balance deducted: 0 (expected 0)"),
        "{stdout}"
    );
    assert_eq!(stdout.matches(" PAID ").count(), 2, "{stdout}");
    // Each order: one ledger row (its one transfer), the whole amount.
    for line in stdout.lines().filter(|line| line.contains(" PAID ")) {
        let row: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(row[1..4], ["PAID", "1", "4999"], "{stdout}");
    }
    assert!(stdout.contains("invariants: hold"), "{stdout}");
    assert!(
        stdout.contains(&format!("every delivery {acknowledged}.")),
        "{stdout}"
    );
    stdout
}

#[test]
fn storm_replays_the_incident_in_wechat_pay_notifications() {
    let stdout = storm_in_platform_format("wechatpay", "acknowledged (WeChat Pay: 200 or 204)");
    assert!(
        stdout.contains("20 identical WeChat Pay notifications at once"),
        "{stdout}"
    );
}

#[test]
fn storm_replays_the_incident_in_alipay_notifications() {
    let stdout = storm_in_platform_format(
        "alipay",
        "acknowledged (Alipay: 200 with the body `success`)",
    );
    assert!(
        stdout.contains("20 identical Alipay notifications at once"),
        "{stdout}"
    );
}

/// Runs storm with `args` and returns its exit code and stderr; it must not
/// get as far as starting anything.
fn storm_refuses(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_storm"))
        .args(args)
        .output()
        .expect("storm runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn storm_refuses_a_real_platform_with_a_given_backend() {
    let (code, stderr) = storm_refuses(&[
        "--platform",
        "wechatpay",
        "--backend-url",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--platform wechatpay needs a backend storm starts itself"),
        "{stderr}"
    );
}

/// The refund incident in `platform`'s format: its refund results are called
/// `results`, and every delivery must be `acknowledged` by its rule.
fn storm_refunds_in(platform: &str, results: &str, acknowledged: &str) {
    let stdout = storm_refunds(&["--platform", platform, "--schedule", "fixed:100msx3"]);
    assert!(
        stdout.contains(&format!("20 identical {results} at once")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("every delivery {acknowledged}.")),
        "{stdout}"
    );
}

#[test]
fn storm_refunds_in_wechat_pay_notifications() {
    storm_refunds_in(
        "wechatpay",
        "WeChat Pay REFUND.SUCCESS notifications",
        "acknowledged (WeChat Pay: 200 or 204)",
    );
}

#[test]
fn storm_refunds_in_alipay_notifications() {
    storm_refunds_in(
        "alipay",
        "Alipay refund notifications",
        "acknowledged (Alipay: 200 with the body `success`)",
    );
}

/// The incident without callbacks in `platform`'s format: every late
/// delivery must be `acknowledged` by its rule.
fn storm_late_in(platform: &str, acknowledged: &str) {
    let stdout = storm_late(&["--platform", platform, "--schedule", "fixed:100msx3"]);
    assert!(
        stdout.contains(&format!(
            "every late delivery {acknowledged} and changed nothing"
        )),
        "{stdout}"
    );
}

#[test]
fn storm_without_wechat_pay_notifications_waits_for_the_active_query() {
    storm_late_in("wechatpay", "acknowledged (WeChat Pay: 200 or 204)");
}

#[test]
fn storm_without_alipay_notifications_waits_for_the_active_query() {
    storm_late_in(
        "alipay",
        "acknowledged (Alipay: 200 with the body `success`)",
    );
}
