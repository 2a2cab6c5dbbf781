//! `GET /metrics` of a backend process after a known storm: every count
//! equals what the database (or, for refusals that write nothing, what the
//! test sent) says; and nobody reads it without the admin token.

use crate::rig::{ADMIN, Binary, Rig, RigOptions, failures};
use api_types::Currency;
use std::collections::BTreeMap;
use std::time::Duration;
use storm::platform::{Answer, Callback, Sender};

/// One scrape: every sample line, by its series (`name{labels}`).
struct Scrape(BTreeMap<String, f64>);

impl Scrape {
    fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("series and value");
                (series.to_owned(), value.parse().expect("a number"))
            })
            .collect();
        Self(samples)
    }

    /// The sum of `name`'s samples whose labels include every one of `labels`.
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .iter()
            .filter(|(series, _)| {
                let (series_name, rest) = series.split_once('{').unwrap_or((series, ""));
                series_name == name
                    && labels
                        .iter()
                        .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
            })
            .map(|(_, value)| value)
            .sum()
    }
}

async fn scrape(http: &reqwest::Client, url: &str) -> Scrape {
    let response = http
        .get(format!("{url}/metrics"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("metrics answer");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("an ASCII header")
        .to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    Scrape::parse(&response.text().await.expect("text"))
}

async fn db_count(rig: &Rig, sql: &str) -> f64 {
    let n: i64 = sqlx::query_scalar(sql)
        .fetch_one(&rig.db)
        .await
        .expect("count");
    #[allow(clippy::cast_precision_loss)]
    let n = n as f64;
    n
}

#[tokio::test]
async fn metrics_after_a_storm_equal_the_database() {
    let rig = Rig::start(RigOptions {
        binary: Binary::Ordinary,
        ..RigOptions::default()
    })
    .await;
    let http = reqwest::Client::new();
    let url = rig.url().to_owned();

    // Nobody reads it without the admin token.
    let anonymous = http
        .get(format!("{url}/metrics"))
        .send()
        .await
        .expect("answered");
    assert_eq!(anonymous.status(), 401);
    let wrong = http
        .get(format!("{url}/metrics"))
        .bearer_auth("not-the-admin-token-at-all-0000000")
        .send()
        .await
        .expect("answered");
    assert_eq!(wrong.status(), 401);

    // Three orders paid, one left waiting.
    let orders = rig.paid_orders(3, 700).await;
    let waiting = rig.orders(1, 700).await;

    // A pay replayed with a used token, and one with a token never issued.
    let shopper = rig.shopper_http().await;
    let used_token: uuid::Uuid =
        sqlx::query_scalar("SELECT request_token FROM payment_attempts WHERE order_no = $1")
            .bind(&orders[0].order_no)
            .fetch_one(&rig.db)
            .await
            .expect("the query runs");
    let pay = |order_no: String, token: uuid::Uuid| {
        let shopper = shopper.clone();
        let url = url.clone();
        async move {
            shopper
                .post(format!("{url}/api/orders/{order_no}/pay"))
                .json(&serde_json::json!({ "request_token": token }))
                .send()
                .await
                .expect("answered")
        }
    };
    let replay = pay(orders[0].order_no.clone(), used_token).await;
    assert_eq!(replay.status(), 202);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let unknown = pay(waiting[0].clone(), uuid::Uuid::new_v4()).await;
    assert_eq!(unknown.status(), 409);

    // The incident: 40 identical callbacks at once per order.
    let answers = rig
        .storm(
            &orders,
            700,
            40,
            Duration::from_millis(100),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(failures(&answers), 0, "{answers:?}");

    // Two forged callbacks (another secret): refused, nothing written.
    let forger =
        Sender::new(&url, callback_signing::CallbackSecret::generate().expose()).expect("a sender");
    let forged = Callback::success(&orders[0], 700, Currency::EUR);
    for _ in 0..2 {
        assert_eq!(forger.deliver(&forged).await, Answer::Status(401));
    }
    // One callback id reused with another body: a conflict.
    let mut conflicting = Callback::success(&orders[1], 700, Currency::EUR);
    let first_id: String =
        sqlx::query_scalar("SELECT callback_id FROM payment_callbacks WHERE order_no = $1")
            .bind(&orders[0].order_no)
            .fetch_one(&rig.db)
            .await
            .expect("the query runs");
    conflicting.id = first_id;
    assert_eq!(
        rig.senders()[0].deliver(&conflicting).await,
        Answer::Status(409)
    );

    // Other methods on the callback and pay paths are 405s, not callbacks or
    // pays; invented methods all share one label.
    for method in ["GET", "FOO1", "FOO2"] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        for path in [
            "/api/payments/callback".to_owned(),
            format!("/api/orders/{}/pay", orders[0].order_no),
        ] {
            let answer = http
                .request(method.clone(), format!("{url}{path}"))
                .send()
                .await
                .expect("answered");
            assert_eq!(answer.status(), 405, "{method} {path}");
        }
    }

    let m = scrape(&http, &url).await;
    assert!(
        !m.0.keys().any(|series| series.contains("FOO")),
        "an invented method became a label"
    );
    assert_eq!(
        m.sum(
            "checkout_http_request_duration_seconds_count",
            &[("method", "OTHER")]
        ),
        4.0
    );
    let received = "checkout_callbacks_received_total";

    // Callbacks: applied = ids claimed; duplicates and conflicts = the delivery log's.
    assert_eq!(
        m.sum(received, &[("platform", "sandbox"), ("outcome", "applied")]),
        db_count(&rig, "SELECT count(*) FROM payment_callbacks").await
    );
    assert_eq!(m.sum(received, &[("outcome", "applied")]), 3.0);
    assert_eq!(
        m.sum(received, &[("outcome", "duplicate")]),
        db_count(
            &rig,
            "SELECT count(*) FROM callback_deliveries WHERE outcome = 'DUPLICATE'"
        )
        .await
    );
    assert!(m.sum(received, &[("outcome", "duplicate")]) >= 117.0);
    assert_eq!(
        m.sum(received, &[("outcome", "conflict")]),
        db_count(
            &rig,
            "SELECT count(*) FROM callback_deliveries WHERE outcome = 'CALLBACK_CONFLICT'"
        )
        .await
    );
    assert_eq!(m.sum(received, &[("outcome", "conflict")]), 1.0);
    // Nothing else was counted as a callback: every one is a delivery or a forgery.
    assert_eq!(
        m.sum(received, &[]),
        db_count(&rig, "SELECT count(*) FROM callback_deliveries").await + 2.0
    );
    assert_eq!(
        m.sum(
            received,
            &[("outcome", "refused"), ("reason", "SIGNATURE_INVALID")]
        ),
        2.0
    );
    // What the charge transaction did, result by result, is the delivery log.
    let logged: Vec<(String, i64)> =
        sqlx::query_as("SELECT outcome, count(*) FROM callback_deliveries GROUP BY outcome")
            .fetch_all(&rig.db)
            .await
            .expect("the query runs");
    for (outcome, n) in &logged {
        #[allow(clippy::cast_precision_loss)]
        let n = *n as f64;
        assert_eq!(
            m.sum("checkout_callback_results_total", &[("result", outcome)]),
            n,
            "result {outcome}"
        );
    }
    assert_eq!(
        m.sum("checkout_callback_results_total", &[]),
        db_count(&rig, "SELECT count(*) FROM callback_deliveries").await
    );

    // Pay requests and tokens.
    let pays = "checkout_pay_requests_total";
    assert_eq!(
        m.sum(pays, &[("outcome", "accepted")]),
        db_count(&rig, "SELECT count(*) FROM payment_attempts").await
    );
    assert_eq!(m.sum(pays, &[("outcome", "replayed")]), 1.0);
    assert_eq!(m.sum(pays, &[("outcome", "token_invalid")]), 1.0);
    assert_eq!(m.sum(pays, &[]), 5.0);
    assert_eq!(
        m.sum("checkout_request_tokens_issued_total", &[]),
        db_count(&rig, "SELECT count(*) FROM request_tokens_issued").await
    );
    assert_eq!(m.sum("checkout_request_tokens_consumed_total", &[]), 3.0);
    assert_eq!(
        m.sum(
            "checkout_platform_calls_total",
            &[("operation", "hand_over"), ("result", "accepted")]
        ),
        3.0
    );

    // Latency: one sample per request; the charge transaction once per charge.
    assert_eq!(
        m.sum(
            "checkout_http_request_duration_seconds_count",
            &[("route", "/api/orders/{order_no}/pay"), ("method", "POST")]
        ),
        5.0
    );
    assert_eq!(
        m.sum(
            "checkout_http_request_duration_seconds_count",
            &[("route", "/api/orders/{order_no}/pay")]
        ),
        8.0
    );
    assert_eq!(
        m.sum("checkout_charge_transaction_duration_seconds_count", &[]),
        db_count(
            &rig,
            "SELECT count(*) FROM payment_ledger WHERE kind = 'CHARGE'"
        )
        .await
    );

    // The database's own numbers.
    assert_eq!(
        m.sum("checkout_orders_pending", &[]),
        db_count(&rig, "SELECT count(*) FROM orders WHERE status = 'PENDING'").await
    );
    assert_eq!(m.sum("checkout_orders_pending", &[]), 1.0);
    assert_eq!(m.sum("checkout_payment_attempts_open", &[]), 0.0);
    assert_eq!(
        m.sum("checkout_anomalies_total", &[("kind", "CALLBACK_CONFLICT")]),
        1.0
    );
    assert_eq!(
        m.sum("checkout_anomalies_total", &[]),
        db_count(&rig, "SELECT count(*) FROM anomalies").await
    );
    // Money held that is not ours: the books' suspense balance.
    assert_eq!(
        m.sum("checkout_suspense_balance_minor_units", &[]),
        db_count(
            &rig,
            "SELECT coalesce(sum(CASE WHEN t.credit_account_id = s.ledger_account_id THEN t.amount_cents
                                      ELSE -t.amount_cents END), 0)::bigint
             FROM ledger_accounts s JOIN transfers t
                  ON s.ledger_account_id IN (t.debit_account_id, t.credit_account_id)
             WHERE s.kind = 'SUSPENSE'"
        )
        .await
    );
    assert_eq!(m.sum("checkout_metrics_database_read", &[]), 1.0);
    rig.assert_each_order_paid_once(
        &orders
            .iter()
            .map(|o| o.order_no.clone())
            .collect::<Vec<_>>(),
        "metrics",
    )
    .await;
}
