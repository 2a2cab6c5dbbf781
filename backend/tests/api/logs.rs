//! What the backend writes to its logs, run as a deploy runs it: the real binary
//! as a process, its stdout and stderr captured.

use backend::env;
use backend::infra::tokens::TokenFingerprint;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use testkit::{BackendProcess, TestDatabase};
use uuid::Uuid;

const ADMIN: &str = "logs-test-admin-token-of-32-characters";
const MERCHANT: &str = "logs-test-merchant-key-of-32-characters";
const PASSWORD: &str = "logs-test-password-never-logged";
const KEY_SECRET: &str = "logs-test-merchant-key-secret-of-32-characters";

/// An order paid through the sandbox by a backend run at `RUST_LOG=debug`, and
/// what a reader of its log must (not) find there.
pub(crate) struct PaidOrder {
    database: TestDatabase,
    log: PathBuf,
    output: String,
    order_no: String,
    payment_id: String,
    token: Uuid,
    session_id: String,
    /// Keys of a merchant made through the admin API, used and rotated.
    merchant_keys: Vec<String>,
}

impl PaidOrder {
    /// Runs the backend with `extra_env`, signs a shopper in and pays one of two
    /// orders with every path a token takes (refused on the other order, paid,
    /// replayed), waits until it is PAID and stops the backend.
    pub(crate) async fn pay(prefix: &str, extra_env: Vec<(String, String)>) -> Self {
        let database = TestDatabase::new(prefix);
        let log = testkit::target_dir().join(format!("test-logs/{}.log", database.name()));
        let mut env_vars = vec![
            (env::PLATFORM.into(), "sandbox".into()),
            (env::DATABASE_URL.into(), database.url()),
            (env::REDIS_URL.into(), testkit::redis_url()),
            (
                env::REDIS_KEY_PREFIX.into(),
                format!("test:{}:", Uuid::new_v4().simple()),
            ),
            (env::ADMIN_TOKEN.into(), ADMIN.into()),
            (env::MERCHANT_API_KEY.into(), MERCHANT.into()),
            (env::MERCHANT_KEY_SECRET.into(), KEY_SECRET.into()),
            (env::SANDBOX_CALLBACK_DELAY_MS.into(), "50".into()),
            // Debug, not just info: an operator turning logging up must not leak tokens either.
            (env::RUST_LOG.into(), "debug".into()),
        ];
        env_vars.extend(extra_env);
        let mut backend = BackendProcess::start(
            Path::new(env!("CARGO_BIN_EXE_backend")),
            env_vars,
            log.clone(),
        )
        .await
        .expect("the backend starts");
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .build()
            .expect("client");
        let url = |path: &str| format!("{}{path}", backend.url());
        let post = |path: &str, body: Value| http.post(url(path)).json(&body).send();
        let shopper: Value = http
            .post(url("/api/admin/shoppers"))
            .bearer_auth(ADMIN)
            .json(&json!({"email": "logs@shop.test", "password": PASSWORD, "balance_cents": 10_000, "currency": "EUR"}))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("shopper");
        let signed_in = post(
            "/api/session",
            json!({"email": "logs@shop.test", "password": PASSWORD}),
        )
        .await
        .expect("sent");
        assert_eq!(signed_in.status(), StatusCode::OK);
        let session_id = signed_in
            .cookies()
            .find(|cookie| cookie.name() == "checkout_session")
            .map(|cookie| cookie.value().to_owned())
            .expect("a session cookie");
        let order_body = |amount: i64| json!({"shopper_id": shopper["shopper_id"], "amount_cents": amount, "currency": "EUR", "description": "logs"});
        let merchant_order = |amount: i64| {
            http.post(url("/api/merchant/orders"))
                .bearer_auth(MERCHANT)
                .header("idempotency-key", Uuid::new_v4().to_string())
                .json(&order_body(amount))
                .send()
        };
        let order: Value = merchant_order(2_000)
            .await
            .expect("sent")
            .json()
            .await
            .expect("order");
        let other: Value = merchant_order(3_000)
            .await
            .expect("sent")
            .json()
            .await
            .expect("order");
        let (order_no, other_no) = (
            order["order_no"].as_str().expect("order_no"),
            other["order_no"].as_str().expect("order_no"),
        );
        let issued: Value = post(&format!("/api/orders/{order_no}/request-token"), json!({}))
            .await
            .expect("sent")
            .json()
            .await
            .expect("token");
        let token: Uuid = issued["request_token"]
            .as_str()
            .and_then(|text| text.parse().ok())
            .expect("a request token");
        let pay = |order_no: &str| {
            post(
                &format!("/api/orders/{order_no}/pay"),
                json!({"request_token": token}),
            )
        };

        // Every path a token takes: refused on another order, paid, replayed.
        let refused = pay(other_no).await.expect("sent");
        let paid = pay(order_no).await.expect("sent");
        let replayed = pay(order_no).await.expect("sent");
        assert_eq!(refused.status(), StatusCode::CONFLICT);
        assert_eq!(paid.status(), StatusCode::ACCEPTED);
        assert_eq!(replayed.status(), StatusCode::ACCEPTED);
        let accepted: Value = paid.json().await.expect("the attempt");
        let payment_id = accepted["payment_id"]
            .as_str()
            .expect("a payment id")
            .to_owned();
        let mut status = String::new();
        for _ in 0..200 {
            let order: Value = http
                .get(url(&format!("/api/orders/{order_no}")))
                .send()
                .await
                .expect("sent")
                .json()
                .await
                .expect("order");
            status = order["status"].as_str().unwrap_or_default().to_owned();
            if status != "PENDING" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(status, "PAID");

        // A merchant made, its key used, rotated, the new one used and revoked.
        let made: Value = http
            .post(url("/api/admin/merchants"))
            .bearer_auth(ADMIN)
            .json(&json!({"name": "Logged Shop", "return_origins": ["https://logged.example"]}))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("merchant");
        let first = made["api_key"].as_str().expect("a key").to_owned();
        let merchant_id = made["merchant_id"].as_str().expect("an id");
        let rotated: Value = http
            .post(url(&format!("/api/admin/merchants/{merchant_id}/keys")))
            .bearer_auth(ADMIN)
            .json(&json!({"expire_old_after_secs": 60}))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("rotated");
        let second = rotated["api_key"].as_str().expect("a key").to_owned();
        for key in [&first, &second, &format!("{first}x")] {
            http.get(url("/api/merchant/balance"))
                .bearer_auth(key)
                .send()
                .await
                .expect("sent");
        }
        let revoked = http
            .delete(url(&format!(
                "/api/admin/merchants/{merchant_id}/keys/{}",
                rotated["key_prefix"].as_str().expect("a prefix")
            )))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("sent");
        assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
        backend.terminate();
        let output = std::fs::read_to_string(&log).expect("the backend's output");
        Self {
            database,
            log,
            output,
            order_no: order_no.to_owned(),
            payment_id,
            token,
            session_id,
            merchant_keys: vec![first, second],
        }
    }

    /// What the backend wrote to stdout and stderr.
    pub(crate) fn output(&self) -> &str {
        &self.output
    }

    /// Neither the request token (in either spelling), nor the session id, the
    /// admin token, a merchant key (the shop's, or one made, rotated, used),
    /// the key secret or the password is anywhere in the output; the token's
    /// fingerprint and the keys' prefixes are.
    fn assert_no_secrets(&self) {
        let where_ = self.log.display();
        let lowercase = self.output.to_lowercase();
        for form in [
            self.token.as_hyphenated().to_string(),
            self.token.simple().to_string(),
        ] {
            assert!(
                !lowercase.contains(&form),
                "the token {form} is in {where_}"
            );
        }
        // The session id in the cookie's spelling and in `Id`'s Debug spelling (an i128).
        let session_number = self
            .session_id
            .parse::<tower_sessions::session::Id>()
            .expect("a session id")
            .0
            .to_string();
        for secret in [
            PASSWORD,
            &self.session_id,
            &session_number,
            ADMIN,
            MERCHANT,
            KEY_SECRET,
        ]
        .into_iter()
        .chain(self.merchant_keys.iter().map(String::as_str))
        {
            assert!(!self.output.contains(secret), "a secret is in {where_}");
        }
        // The merchant's keys are named by their prefixes only.
        assert!(
            self.output.contains("merchant key rotated") && self.output.contains("mk_"),
            "{where_}"
        );
        let fingerprint = TokenFingerprint::of(self.token).to_string();
        assert!(
            self.output.contains(&fingerprint),
            "the fingerprint {fingerprint} is not in {where_}"
        );
    }
}

#[tokio::test]
async fn the_logs_of_a_paid_order_name_its_request_token_only_by_its_fingerprint() {
    let paid = PaidOrder::pay("checkout_logs", Vec::new()).await;
    let output = &paid.output;
    assert!(
        output.contains("payment attempt created")
            && output.contains("token presented for another order")
            && output.contains("shopper signed in"),
        "the output holds the pay's log lines: {}",
        paid.log.display()
    );
    paid.assert_no_secrets();
    let _ = std::fs::remove_file(&paid.log);
}

/// Every string value a JSON log line holds for `name`: in the event's own
/// `fields`, in `span` (the innermost span) and in every entry of `spans`.
fn values_of<'a>(line: &'a Value, name: &str) -> Vec<&'a str> {
    let mut objects = vec![&line["fields"], &line["span"]];
    if let Some(spans) = line["spans"].as_array() {
        objects.extend(spans);
    }
    objects
        .into_iter()
        .filter_map(|object| object.get(name).and_then(Value::as_str))
        .collect()
}

#[tokio::test]
async fn with_log_format_json_every_line_is_json_and_names_its_callback_order_and_payment() {
    let paid = PaidOrder::pay(
        "checkout_logs_json",
        vec![(env::LOG_FORMAT.into(), "json".into())],
    )
    .await;
    let where_ = paid.log.display();
    let lines: Vec<Value> = paid
        .output
        .lines()
        .enumerate()
        .map(|(number, line)| {
            serde_json::from_str(line).unwrap_or_else(|err| {
                panic!(
                    "line {} of {where_} is not JSON ({err}): {line}",
                    number + 1
                )
            })
        })
        .collect();
    assert!(
        lines.iter().all(Value::is_object),
        "every line is an object: {where_}"
    );

    let pool = sqlx::PgPool::connect(&paid.database.url())
        .await
        .expect("the test database");
    let callback_id: String =
        sqlx::query_scalar("SELECT callback_id FROM payment_callbacks WHERE order_no = $1")
            .bind(&paid.order_no)
            .fetch_one(&pool)
            .await
            .expect("the order's callback");
    pool.close().await;

    // The callback's lines: each names its order; the one applying it, the outcome.
    let callback_lines: Vec<&Value> = lines
        .iter()
        .filter(|line| values_of(line, "callback_id").contains(&callback_id.as_str()))
        .collect();
    assert!(
        !callback_lines.is_empty(),
        "no line names the callback {callback_id}: {where_}"
    );
    for line in &callback_lines {
        assert!(
            values_of(line, "order_no").contains(&paid.order_no.as_str()),
            "a line of the callback does not name its order: {line}"
        );
    }
    let applied = callback_lines
        .iter()
        .find(|line| line["fields"]["message"] == "callback applied")
        .unwrap_or_else(|| panic!("no line reports applying the callback: {where_}"));
    assert!(
        values_of(applied, "outcome").contains(&"CHARGED"),
        "the line applying the callback does not name its outcome: {applied}"
    );
    assert!(
        values_of(applied, "payment_id").contains(&paid.payment_id.as_str()),
        "the line applying the callback does not name the payment: {applied}"
    );

    // Every line that mentions the payment names it as `payment_id`, with its order.
    let payment_lines: Vec<&Value> = lines
        .iter()
        .filter(|line| line.to_string().contains(&paid.payment_id))
        .collect();
    assert!(
        payment_lines
            .iter()
            .any(|line| line["fields"]["message"] == "payment attempt created"),
        "the pay's line is not there: {where_}"
    );
    for line in &payment_lines {
        assert!(
            values_of(line, "payment_id").contains(&paid.payment_id.as_str())
                && values_of(line, "order_no").contains(&paid.order_no.as_str()),
            "a line mentioning the payment does not name it and its order: {line}"
        );
    }

    paid.assert_no_secrets();
    let _ = std::fs::remove_file(&paid.log);
}

#[test]
fn log_format_xml_refuses_to_start_with_a_message_naming_log_format() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_backend"))
        .env(env::LOG_FORMAT, "xml")
        .env(env::PLATFORM, "sandbox")
        .output()
        .expect("the backend runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("LOG_FORMAT"), "{stderr}");
    assert!(stderr.contains("xml"), "{stderr}");
}
