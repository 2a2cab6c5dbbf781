//! Daily bill reconciliation against a real platform-sim over HTTP and orders
//! paid through the real flow: a clean day is all MATCHED, each disagreement
//! the platform's bill knobs inject is found once as its class with its
//! anomaly, a second run stores nothing, the daily worker reconciles
//! yesterday, and `backend reconcile` as a process refuses what it must.

use crate::helpers::{ADMIN_TOKEN, TestApp, spawn_app_with, start_platform};
use api_types::api::{Order, Reconciliation};
use api_types::{OrderStatus, ReconClass};
use backend::config::PlatformKind;
use backend::platform::Platform;
use backend::reconcile::{Report, reconcile};
use callback_signing::CallbackSecret;
use platform_sim::{Chaos, Simulator};
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use time::{Date, OffsetDateTime};

/// The app paying through platform-sim over HTTP, the simulator, its URL and
/// a connector to it (the one `backend reconcile` builds).
struct Rig {
    app: TestApp,
    simulator: Simulator,
    platform_url: String,
    secret: CallbackSecret,
    platform: Platform,
}

async fn rig(adjust: impl FnOnce(&mut backend::config::Config)) -> Rig {
    let secret = CallbackSecret::generate();
    let (simulator, platform_url) =
        start_platform(&secret, Chaos::default(), Duration::from_millis(50)).await;
    let app = spawn_app_with(|c| {
        c.webhook_secret = Some(SecretString::from(secret.expose()));
        c.platform = Some(PlatformKind::Remote);
        c.platform_url = Some(platform_url.clone());
        adjust(c);
    })
    .await;
    let platform =
        Platform::remote(&platform_url, app.address.clone()).expect("a connector to the platform");
    Rig {
        app,
        simulator,
        platform_url,
        secret,
        platform,
    }
}

fn today() -> Date {
    OffsetDateTime::now_utc().date()
}

/// A new shopper's order of `amount` EUR cents, paid through the platform.
async fn paid(app: &TestApp, amount: i64) -> Order {
    let (_, order) = app.account_with_order(1_000_000, amount).await;
    let order = app.pay_until_final(&order.order_no).await;
    assert_eq!(order.status, OrderStatus::Paid, "{order:?}");
    order
}

/// The platform payment id the ledger's CHARGE of the order names.
async fn charged_payment(app: &TestApp, order_no: &str) -> String {
    sqlx::query_scalar(
        "SELECT payment_id FROM payment_ledger WHERE order_no = $1 AND kind = 'CHARGE'",
    )
    .bind(order_no)
    .fetch_one(&app.db)
    .await
    .expect("the order was charged")
}

/// Row counts of both tables a reconciliation writes, and the anomalies.
async fn written(app: &TestApp) -> (i64, i64, i64) {
    (
        app.count("reconciliation_items").await,
        app.count("anomalies").await,
        app.count("reconciliation_runs").await,
    )
}

fn counts(report: &Report) -> BTreeMap<&'static str, i64> {
    report
        .counts
        .iter()
        .map(|count| (count.class.as_str(), count.count))
        .collect()
}

/// The stored class of the row with this key.
fn class_of(report: &Report, row_key: &str) -> Option<ReconClass> {
    report
        .items
        .iter()
        .find(|item| item.row_key == row_key)
        .map(|item| item.class)
}

/// The details of the order's anomalies of `kind`.
async fn anomaly_details(app: &TestApp, order_no: &str, kind: &str) -> Vec<(String, Value)> {
    sqlx::query_as(
        "SELECT callback_id, details FROM anomalies WHERE order_no = $1 AND kind = $2 ORDER BY anomaly_id",
    )
    .bind(order_no)
    .bind(kind)
    .fetch_all(&app.db)
    .await
    .expect("anomalies")
}

#[tokio::test]
async fn a_clean_day_reconciles_every_charge_and_refund_as_matched_and_a_second_run_adds_nothing() {
    let rig = rig(|_| {}).await;
    let app = &rig.app;
    let first = paid(app, 2_450).await;
    paid(app, 1_000).await;
    paid(app, 3_000).await;
    app.refund_settled(&first.order_no, 450, "one item returned")
        .await;
    let charges = app.ledger_rows(None, "CHARGE").await;
    let refunds = app.ledger_rows(None, "REFUND").await;
    assert_eq!((charges, refunds), (3, 1));

    let report = reconcile(&app.db, &rig.platform, today())
        .await
        .expect("reconciled");

    assert_eq!(report.bill_rows, 4);
    assert_eq!(report.recorded_now, 4);
    let expected: BTreeMap<&str, i64> = [
        ("MATCHED", charges + refunds),
        ("MISSING_IN_LEDGER", 0),
        ("MISSING_IN_BILL", 0),
        ("AMOUNT_MISMATCH", 0),
        ("STATE_MISMATCH", 0),
    ]
    .into();
    assert_eq!(counts(&report), expected);
    assert_eq!(report.mismatches().count(), 0);
    let first_payment = charged_payment(app, &first.order_no).await;
    assert_eq!(
        class_of(&report, &format!("payment:{first_payment}")),
        Some(ReconClass::Matched)
    );
    let before = written(app).await;
    assert_eq!(before, (4, 0, 1));

    let again = reconcile(&app.db, &rig.platform, today())
        .await
        .expect("reconciled again");

    assert_eq!(again.recorded_now, 0);
    assert_eq!(written(app).await, before);
    assert_eq!(counts(&again), expected);

    // The operator's view of the day.
    let response = app
        .http
        .get(app.url(&format!("/api/admin/reconciliations/{}", today())))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::OK);
    let view: Reconciliation = response.json().await.expect("a reconciliation");
    assert_eq!(view.date, today().to_string());
    assert!(view.reconciled_at.is_some());
    assert_eq!(view.bill_rows, Some(4));
    assert_eq!(view.items.len(), 4);
    assert!(
        view.counts
            .iter()
            .any(|c| c.class == ReconClass::Matched && c.count == 4)
    );
}

#[tokio::test]
async fn each_disagreement_of_the_bill_is_found_once_as_its_class_with_its_anomaly() {
    let rig = rig(|_| {}).await;
    let app = &rig.app;
    let clean = paid(app, 1_000).await;
    rig.simulator.set_chaos(Chaos {
        bill_omit: true,
        ..Chaos::default()
    });
    let dropped = paid(app, 2_000).await;
    rig.simulator.set_chaos(Chaos {
        bill_amount_delta_cents: 100,
        ..Chaos::default()
    });
    let changed = paid(app, 3_000).await;
    // Collected by the platform, every callback lost, and the backend's query
    // not due for a minute: money we never booked.
    rig.simulator.set_chaos(Chaos {
        drop_callbacks: true,
        ..Chaos::default()
    });
    let (_, unbooked) = app.account_with_order(1_000_000, 4_000).await;
    app.submitted_payment(&unbooked).await;
    rig.simulator.set_chaos(Chaos::default());
    let started = Instant::now();
    while !rig
        .simulator
        .daily_bill(today())
        .contains(&unbooked.order_no)
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never collected"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        app.order(&unbooked.order_no).await.status,
        OrderStatus::Pending
    );

    let report = reconcile(&app.db, &rig.platform, today())
        .await
        .expect("reconciled");

    let key = |id: String| format!("payment:{id}");
    assert_eq!(
        class_of(&report, &key(charged_payment(app, &clean.order_no).await)),
        Some(ReconClass::Matched)
    );
    assert_eq!(
        class_of(&report, &key(charged_payment(app, &dropped.order_no).await)),
        Some(ReconClass::MissingInBill)
    );
    assert_eq!(
        class_of(&report, &key(charged_payment(app, &changed.order_no).await)),
        Some(ReconClass::AmountMismatch)
    );
    let unbooked_item = report
        .items
        .iter()
        .find(|item| item.order_no == unbooked.order_no)
        .expect("the unbooked payment is reported");
    assert_eq!(unbooked_item.class, ReconClass::MissingInLedger);
    assert_eq!(report.items.len(), 4, "{:#?}", report.items);
    assert_eq!(report.mismatches().count(), 3);
    // One anomaly each, of the class's name, and none for the clean order.
    assert!(app.anomalies(&clean.order_no).await.is_empty());
    assert_eq!(app.anomalies(&dropped.order_no).await, ["MISSING_IN_BILL"]);
    assert_eq!(app.anomalies(&changed.order_no).await, ["AMOUNT_MISMATCH"]);
    assert_eq!(
        app.anomalies(&unbooked.order_no).await,
        ["MISSING_IN_LEDGER"]
    );
    // What the bill said and what the ledger said, for the person who looks.
    let details = anomaly_details(app, &changed.order_no, "AMOUNT_MISMATCH").await;
    let (callback_id, details) = &details[0];
    assert!(
        callback_id.starts_with(&format!("reconcile:{}:payment:", today())),
        "{callback_id}"
    );
    assert_eq!(details["bill"]["amount_cents"], 3_100);
    assert_eq!(details["ledger"]["amount_cents"], 3_000);
    let missing = anomaly_details(app, &dropped.order_no, "MISSING_IN_BILL").await;
    assert_eq!(missing[0].1["bill"], Value::Null);
    assert_eq!(missing[0].1["ledger"]["kind"], "CHARGE");
    let before = written(app).await;
    assert_eq!(before, (4, 3, 1));

    let again = reconcile(&app.db, &rig.platform, today())
        .await
        .expect("reconciled again");

    assert_eq!(again.recorded_now, 0);
    assert_eq!(written(app).await, before);
}

#[tokio::test]
async fn money_the_checkout_knowingly_gives_back_is_matched_not_missing_from_the_ledger() {
    let rig = rig(|_| {}).await;
    let app = &rig.app;
    let order = paid(app, 2_500).await;
    // A second payment for the paid order, made at the platform: the checkout
    // cannot book it and gives it back in full by an automatic refund.
    let (second, _) = rig
        .simulator
        .create_payment(
            &uuid::Uuid::new_v4().to_string(),
            platform_sim::CreatePayment {
                order_no: order.order_no.clone(),
                amount_cents: order.amount_cents,
                currency: order.currency,
                notify_url: app.url("/api/payments/callback"),
                merchant_reference: Some(uuid::Uuid::new_v4().to_string()),
            },
        )
        .await
        .expect("the platform takes the payment");
    let started = Instant::now();
    let refund_no: String = loop {
        let settled: Option<String> = sqlx::query_scalar(
            "SELECT refund_no FROM refunds
             WHERE platform_payment_id = $1 AND requested_by = 'automatic' AND status = 'SUCCEEDED'",
        )
        .bind(&second.payment_id)
        .fetch_optional(&app.db)
        .await
        .expect("refunds");
        if let Some(refund_no) = settled {
            break refund_no;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the second payment was not given back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let anomalies_before = app.count("anomalies").await;

    let report = reconcile(&app.db, &rig.platform, today())
        .await
        .expect("reconciled");

    assert_eq!(report.bill_rows, 3, "{:#?}", report.items);
    assert_eq!(
        class_of(&report, &format!("payment:{}", second.payment_id)),
        Some(ReconClass::Matched)
    );
    assert_eq!(
        class_of(&report, &format!("refund:{refund_no}")),
        Some(ReconClass::Matched)
    );
    assert_eq!(
        class_of(
            &report,
            &format!("payment:{}", charged_payment(app, &order.order_no).await)
        ),
        Some(ReconClass::Matched)
    );
    assert_eq!(report.mismatches().count(), 0, "{:#?}", report.items);
    assert_eq!(app.count("anomalies").await, anomalies_before);
}

#[tokio::test]
async fn the_daily_worker_reconciles_yesterday_once_its_time_of_day_has_come() {
    let rig = rig(|c| {
        c.reconcile_daily = true;
        c.reconcile_at_utc = time::macros::time!(00:00);
    })
    .await;
    let yesterday = today().previous_day().expect("a day");
    let started = Instant::now();
    loop {
        let runs: i64 =
            sqlx::query_scalar("SELECT count(*) FROM reconciliation_runs WHERE bill_date = $1")
                .bind(yesterday)
                .fetch_one(&rig.app.db)
                .await
                .expect("count");
        if runs == 1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "yesterday was not reconciled"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(rig.app.count("reconciliation_runs").await, 1);
}

/// `backend reconcile` as a process, against the rig's database and platform.
async fn run_reconcile(rig: &Rig, args: &[&str], platform_url: &str) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_backend"))
        .arg("reconcile")
        .args(args)
        .env_clear()
        .env("DATABASE_URL", rig.app.config.database_url.expose())
        .env("PLATFORM", "remote")
        .env("PLATFORM_URL", platform_url)
        .env("WEBHOOK_SECRET", rig.secret.expose())
        .env("RUST_LOG", "off")
        .output()
        .await
        .expect("the backend runs")
}

#[tokio::test]
async fn the_reconcile_command_prints_its_summary_and_refuses_bad_dates_and_a_silent_platform() {
    let rig = rig(|_| {}).await;
    let yesterday = today().previous_day().expect("a day").to_string();
    let stderr =
        |output: &std::process::Output| String::from_utf8_lossy(&output.stderr).into_owned();

    let bad = run_reconcile(&rig, &["--date", "2026-02-30"], &rig.platform_url).await;
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("YYYY-MM-DD"), "{}", stderr(&bad));

    let not_over = run_reconcile(&rig, &["--date", &today().to_string()], &rig.platform_url).await;
    assert_eq!(not_over.status.code(), Some(2), "{}", stderr(&not_over));
    assert!(
        stderr(&not_over).contains("not over yet"),
        "{}",
        stderr(&not_over)
    );

    let port = testkit::free_port().expect("a free port");
    let silent = run_reconcile(
        &rig,
        &["--date", &yesterday],
        &format!("http://127.0.0.1:{port}"),
    )
    .await;
    assert_eq!(silent.status.code(), Some(1), "{}", stderr(&silent));
    assert!(
        stderr(&silent).contains(&format!("cannot reconcile {yesterday}")),
        "{}",
        stderr(&silent)
    );
    assert_eq!(rig.app.count("reconciliation_runs").await, 0);

    let done = run_reconcile(&rig, &["--date", &yesterday], &rig.platform_url).await;
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(
        stdout.contains(&format!("reconciliation of {yesterday}: 0 bill rows")),
        "{stdout}"
    );
    for class in ReconClass::ALL {
        assert!(stdout.contains(class.as_str()), "{stdout}");
    }
    assert_eq!(rig.app.count("reconciliation_runs").await, 1);
}

#[tokio::test]
async fn the_admin_view_of_a_day_needs_the_token_and_a_date_and_shows_a_day_not_reconciled_yet() {
    let app = crate::helpers::spawn_app().await;
    let get = |path: String, token: Option<&'static str>| {
        let mut request = app.http.get(app.url(&path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };

    let stranger = get(format!("/api/admin/reconciliations/{}", today()), None)
        .await
        .expect("request sent");
    assert_eq!(stranger.status(), StatusCode::UNAUTHORIZED);
    let bad = get(
        "/api/admin/reconciliations/2026-13-01".to_owned(),
        Some(ADMIN_TOKEN),
    )
    .await
    .expect("request sent");
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(crate::helpers::error_code(bad).await, "BAD_REQUEST");
    let pending = get(
        format!("/api/admin/reconciliations/{}", today()),
        Some(ADMIN_TOKEN),
    )
    .await
    .expect("request sent");
    assert_eq!(pending.status(), StatusCode::OK);
    let view: Reconciliation = pending.json().await.expect("a reconciliation");
    assert_eq!(view.reconciled_at, None);
    assert!(view.items.is_empty());
    assert_eq!(view.counts.len(), ReconClass::ALL.len());
    assert!(view.counts.iter().all(|count| count.count == 0));
}
