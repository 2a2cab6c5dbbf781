//! Property tests of `POST /api/payments/callback` against one running app:
//! arbitrary signature headers, extra headers and bodies (random bytes, random
//! JSON, callback JSON that is nearly right, bodies over the limit).
//!
//! - Unsigned or wrongly signed (bad secret, other body, other id, stale or
//!   future timestamp): always `401 SIGNATURE_INVALID` (or `413` over 64 KiB),
//!   the connection survives, and not one row of the database changes.
//! - Correctly signed arbitrary bodies: never a 5xx, never a dropped
//!   connection, and the exactly-once invariants hold afterwards.
//!
//! The orders aimed at were handed to the platform where they could be paid,
//! so a callback naming their real payment can charge (and a forged one would).

use crate::helpers::{Payment, Snapshot, TestApp, new_callback_id, spawn_app_with, success_body};
use api_types::api::Order;
use backend::http::routes::notify::MAX_CALLBACK_BYTES;
use callback_signing::CallbackSecret;
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use tokio::runtime::Runtime;

/// Cases per property: enough to reach every branch, small enough for seconds.
const CASES: u32 = 200;

/// The tables a refused callback must not touch.
const TABLES: &[&str] = &[
    "payment_callbacks",
    "payment_ledger",
    "callback_deliveries",
    "anomalies",
    "orders",
    "accounts",
];

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        // No regression files from an integration test; a failure prints its case.
        failure_persistence: None,
        ..Config::default()
    })
}

/// One order the fuzzer can aim at: number, amount, currency, and the payment
/// handed over for it (our payment id, the platform's), if any.
#[derive(Debug, Clone)]
struct Target {
    order_no: String,
    amount_cents: i64,
    currency: String,
    payment: Option<(String, String)>,
}

impl From<&Order> for Target {
    fn from(order: &Order) -> Self {
        Self {
            order_no: order.order_no.clone(),
            amount_cents: order.amount_cents,
            currency: order.currency.as_str().to_owned(),
            payment: None,
        }
    }
}

/// An app whose platform posts no callbacks of its own and is never asked
/// about a payment while the properties run: only the fuzzer's callbacks
/// change anything.
async fn spawn_quiet_app() -> TestApp {
    spawn_app_with(|c| {
        c.sandbox_drop_callbacks = true;
        c.query_after_secs = 3_600;
    })
    .await
}

/// Accounts with PENDING orders: some affordable and handed over, one not
/// payable (no payment), one in USD.
async fn seed(app: &TestApp) -> Vec<Target> {
    let mut targets = Vec::new();
    for (balance, amount) in [(10_000, 2_500), (10_000, 9_999), (100, 5_000)] {
        let (_, order) = app.account_with_order(balance, amount).await;
        targets.push(handed_over_if_affordable(app, &order, balance).await);
    }
    let usd = app.create_account(50_000, "USD").await;
    let order = app.create_order(&usd, 1_200).await;
    targets.push(handed_over_if_affordable(app, &order, 50_000).await);
    // An order number that does not exist.
    targets.push(Target {
        order_no: "ord_doesnotexist".into(),
        amount_cents: 100,
        currency: "EUR".into(),
        payment: None,
    });
    targets
}

/// The order as a target, paid by its shopper (signed in on `app.http`) if the balance covers it.
async fn handed_over_if_affordable(app: &TestApp, order: &Order, balance: i64) -> Target {
    let mut target = Target::from(order);
    if balance >= order.amount_cents {
        let payment = app.hand_over(order).await;
        target.payment = Some((payment.payment_id.to_string(), payment.platform_payment_id));
    }
    target
}

/// Everything the database holds that a callback could change.
#[derive(Debug, PartialEq, Eq)]
struct State {
    counts: Vec<(&'static str, i64)>,
    rows: Snapshot,
}

async fn state(app: &TestApp) -> State {
    let mut counts = Vec::new();
    for table in TABLES {
        counts.push((*table, app.count(table).await));
    }
    State {
        counts,
        rows: app.snapshot().await,
    }
}

// ---- strategies -------------------------------------------------------------

/// Bytes a header value may carry: tab, visible ASCII and space, obs-text.
fn header_byte() -> impl Strategy<Value = u8> {
    prop_oneof![Just(b'\t'), 0x20u8..=0x7e, 0x80u8..=0xff]
}

/// Any header value: short, or huge (up to 8 KiB, well within the head limit).
fn any_header_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => vec(header_byte(), 0..64),
        1 => vec(header_byte(), 1_000..8_000),
    ]
}

fn plausible_id() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "evt_[a-z0-9]{1,40}",
        Just(String::new()),
        "evt_[a-z]{300,400}",
        "[ -~]{1,30}",
    ]
    .prop_map(String::into_bytes)
}

fn plausible_timestamp() -> impl Strategy<Value = Vec<u8>> {
    let now = OffsetDateTime::now_utc().unix_timestamp();
    prop_oneof![
        (-200i64..200).prop_map(move |offset| (now + offset).to_string()),
        any::<i64>().prop_map(|t| t.to_string()),
        "[0-9]{0,30}",
        "-?[0-9]{1,12}\\.[0-9]{1,6}",
        "[ -~]{0,20}",
    ]
    .prop_map(String::into_bytes)
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn plausible_signature() -> impl Strategy<Value = Vec<u8>> {
    let one = (
        prop_oneof![Just("v1"), Just("v1a"), Just("v2"), Just("")],
        vec(any::<u8>(), 0..48),
    )
        .prop_map(|(version, mac)| format!("{version},{}", base64_of(&mac)));
    prop_oneof![
        vec(one, 1..4).prop_map(|all| all.join(" ")),
        "v1,[A-Za-z0-9+/=]{0,100}",
        "v1,[ -~]{0,60}",
    ]
    .prop_map(String::into_bytes)
}

fn header_slot(plausible: BoxedStrategy<Vec<u8>>) -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        3 => plausible.prop_map(Some),
        2 => any_header_value().prop_map(Some),
    ]
}

/// How a request fails to be signed by the app's secret.
#[derive(Debug, Clone)]
enum Forgery {
    /// The three headers as generated (each may be missing).
    Raw {
        id: Option<Vec<u8>>,
        timestamp: Option<Vec<u8>>,
        signature: Option<Vec<u8>>,
    },
    /// Correctly signed, with another secret.
    OtherSecret,
    /// Signed by the app's secret over another body.
    OtherBody,
    /// Signed by the app's secret for another callback id.
    OtherId,
    /// Signed by the app's secret, this many seconds outside the tolerance.
    Stale(i64),
    /// Signed by the app's secret, this many seconds in the future.
    Future(i64),
}

fn forgery() -> impl Strategy<Value = Forgery> {
    prop_oneof![
        6 => (
            header_slot(plausible_id().boxed()),
            header_slot(plausible_timestamp().boxed()),
            header_slot(plausible_signature().boxed()),
        )
            .prop_map(|(id, timestamp, signature)| Forgery::Raw {
                id,
                timestamp,
                signature,
            }),
        1 => Just(Forgery::OtherSecret),
        1 => Just(Forgery::OtherBody),
        1 => Just(Forgery::OtherId),
        1 => (400i64..1_000_000).prop_map(Forgery::Stale),
        1 => (400i64..1_000_000).prop_map(Forgery::Future),
    ]
}

/// Names of extra headers: anything but the signature headers and the ones
/// that frame the message (the client sets those).
fn extra_headers() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let name = "[a-z][a-z0-9-]{0,24}".prop_filter("not a framing or signature header", |name| {
        !name.starts_with("webhook-")
            && !name.starts_with("proxy-")
            && ![
                "content-length",
                "transfer-encoding",
                "host",
                "connection",
                "keep-alive",
                "te",
                "trailer",
                "upgrade",
                "expect",
            ]
            .contains(&name.as_str())
    });
    vec((name, any_header_value()), 0..4)
}

fn content_type() -> impl Strategy<Value = Option<Vec<u8>>> {
    option::of(prop_oneof![
        Just(b"application/json".to_vec()),
        "[ -~]{0,40}".prop_map(String::into_bytes),
    ])
}

/// Any text of up to `max` characters (any Unicode scalar but line feed, U+0000
/// included: see [`a_signed_callback_with_a_nul_in_a_string_is_refused_not_a_500`]).
fn text(max: usize) -> BoxedStrategy<String> {
    proptest::string::string_regex(&format!("[^\\n]{{0,{max}}}"))
        .expect("a valid pattern")
        .boxed()
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text(20).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(text(10), inner, 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// How a generated callback names the payment: the target's real one, or made up.
#[derive(Debug, Clone)]
enum Name {
    Real,
    Made(String),
}

fn payment_name(made: BoxedStrategy<String>) -> impl Strategy<Value = Name> {
    prop_oneof![2 => Just(Name::Real), 1 => made.prop_map(Name::Made)]
}

/// A callback body for one of `targets`, as is or with fields broken: wrong
/// type, amount, currency, missing or mistyped fields, odd strings, naming the
/// order's payment or another one (or, without `merchant_reference`, only by
/// the platform's id).
fn near_valid_callback(targets: Vec<Target>) -> impl Strategy<Value = String> {
    (
        select(targets),
        prop_oneof![
            3 => Just("payment.succeeded".to_owned()),
            2 => Just("payment.failed".to_owned()),
            1 => Just("refund.succeeded".to_owned()),
            1 => Just("refund.failed".to_owned()),
            1 => "[a-z._]{0,24}",
        ],
        prop_oneof![
            3 => Just(None),
            1 => any::<i64>().prop_map(Some),
            1 => (-3i64..3).prop_map(Some),
        ],
        prop_oneof![
            3 => Just(None),
            1 => prop_oneof![Just("USD"), Just("EUR"), Just("eur"), Just("")]
                .prop_map(|c| Some(c.to_owned())),
            1 => "[A-Za-z]{0,5}".prop_map(Some),
        ],
        payment_name(prop_oneof!["pay_[a-z0-9]{1,32}".boxed(), text(300)].boxed()),
        option::of(payment_name(
            prop_oneof![
                "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}".boxed(),
                text(40).boxed(),
            ]
            .boxed(),
        )),
        prop_oneof![
            3 => Just(json!("2026-12-02T10:00:00Z")),
            1 => json_value(),
        ],
        option::of(0usize..7),
        option::of((0usize..7, json_value())),
        // For refund events: our refund number and the platform's refund id.
        option::of(prop_oneof!["ref_[a-z0-9]{1,32}".boxed(), text(40)]),
        option::of(prop_oneof!["[A-Za-z0-9]{1,32}".boxed(), text(40)]),
    )
        .prop_map(
            |(
                target,
                kind,
                amount,
                currency,
                payment_id,
                reference,
                timestamp,
                drop,
                retype,
                refund_no,
                refund_id,
            )| {
                let real = target.payment.clone().unwrap_or_else(|| {
                    (
                        uuid::Uuid::new_v4().to_string(),
                        "pay_neverhandedover".to_owned(),
                    )
                });
                let named = |name: Name, real: String| match name {
                    Name::Real => real,
                    Name::Made(made) => made,
                };
                let mut data = json!({
                    "order_no": target.order_no,
                    "amount_cents": amount.unwrap_or(target.amount_cents),
                    "currency": currency.unwrap_or(target.currency),
                    "payment_id": named(payment_id, real.1),
                });
                if let Some(reference) = reference {
                    data["merchant_reference"] = json!(named(reference, real.0));
                }
                if let Some(refund_no) = refund_no {
                    data["refund_no"] = json!(refund_no);
                }
                if let Some(refund_id) = refund_id {
                    data["refund_id"] = json!(refund_id);
                }
                let mut body = json!({"type": kind, "timestamp": timestamp});
                let fields = [
                    "type",
                    "timestamp",
                    "order_no",
                    "amount_cents",
                    "currency",
                    "payment_id",
                    "merchant_reference",
                ];
                if let Some((field, value)) = retype {
                    let object = if field < 2 { &mut body } else { &mut data };
                    object[fields[field]] = value;
                }
                if let Some(field) = drop {
                    let object = if field < 2 { &mut body } else { &mut data };
                    if let Some(map) = object.as_object_mut() {
                        map.remove(fields[field]);
                    }
                }
                body["data"] = data;
                body.to_string()
            },
        )
}

/// Bodies of every kind; `utf8_only` for bodies that will be signed.
fn body(targets: Vec<Target>, utf8_only: bool) -> BoxedStrategy<Vec<u8>> {
    let over_limit =
        (MAX_CALLBACK_BYTES + 1..MAX_CALLBACK_BYTES + 4_096).prop_map(|len| vec![b'{'; len]);
    let at_limit = Just(vec![b' '; MAX_CALLBACK_BYTES]);
    let text = prop_oneof![
        text(300).prop_map(String::into_bytes),
        json_value().prop_map(|v| v.to_string().into_bytes()),
    ];
    if utf8_only {
        prop_oneof![
            3 => text,
            6 => near_valid_callback(targets).prop_map(String::into_bytes),
            1 => at_limit,
        ]
        .boxed()
    } else {
        prop_oneof![
            3 => vec(any::<u8>(), 0..2_048),
            3 => text,
            6 => near_valid_callback(targets).prop_map(String::into_bytes),
            1 => over_limit,
            1 => at_limit,
        ]
        .boxed()
    }
}

// ---- requests ----------------------------------------------------------------

fn value(bytes: &[u8]) -> HeaderValue {
    HeaderValue::from_bytes(bytes).expect("generated header values are valid")
}

/// Posts `body` with `headers`; panics if the connection is dropped.
async fn post(app: &TestApp, headers: HeaderMap, body: Vec<u8>) -> (u16, Value) {
    let response = app
        .http
        .post(app.url("/api/payments/callback"))
        .headers(headers)
        .body(body)
        .send()
        .await
        .expect("the server answers (no dropped connection)");
    let status = response.status().as_u16();
    let bytes = response
        .bytes()
        .await
        .expect("the whole answer arrives (no dropped connection)");
    let answer = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
        panic!(
            "answer {status} is not JSON: {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (status, answer)
}

fn signature_headers(id: &str, timestamp: i64, signature: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("webhook-id", value(id.as_bytes()));
    headers.insert("webhook-timestamp", value(timestamp.to_string().as_bytes()));
    headers.insert("webhook-signature", value(signature.as_bytes()));
    headers
}

/// The signature headers of `forgery` for `body`: never a valid signature.
fn forged_headers(app: &TestApp, forgery: &Forgery, body: &[u8]) -> HeaderMap {
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let id = format!("evt_fuzz_{}", uuid::Uuid::new_v4().simple());
    let signed = |secret: &CallbackSecret, id: &str, at: i64, over: &[u8]| {
        secret
            .sign(id, at, over)
            .ok()
            .map(|signed| signature_headers(&signed.id, signed.timestamp, &signed.signature))
    };
    let headers = match forgery {
        Forgery::Raw {
            id,
            timestamp,
            signature,
        } => {
            let mut headers = HeaderMap::new();
            for (name, slot) in [
                ("webhook-id", id),
                ("webhook-timestamp", timestamp),
                ("webhook-signature", signature),
            ] {
                if let Some(bytes) = slot {
                    headers.insert(name, value(bytes));
                }
            }
            Some(headers)
        }
        Forgery::OtherSecret => signed(&CallbackSecret::generate(), &id, now, body),
        Forgery::OtherBody => {
            let mut other = body.to_vec();
            other.push(b' ');
            signed(&app.webhook, &id, now, &other).map(|mut headers| {
                headers.insert("webhook-id", value(id.as_bytes()));
                headers
            })
        }
        Forgery::OtherId => signed(&app.webhook, &format!("{id}x"), now, body).map(|mut h| {
            h.insert("webhook-id", value(id.as_bytes()));
            h
        }),
        Forgery::Stale(seconds) => signed(&app.webhook, &id, now - 300 - seconds, body),
        Forgery::Future(seconds) => signed(&app.webhook, &id, now + 300 + seconds, body),
    };
    // A body that is not UTF-8 cannot be signed at all: send it with a made-up signature.
    headers.unwrap_or_else(|| signature_headers(&id, now, &format!("v1,{}", base64_of(&[7; 32]))))
}

fn add_extras(
    headers: &mut HeaderMap,
    extras: &[(String, Vec<u8>)],
    content_type: Option<&Vec<u8>>,
) {
    for (name, bytes) in extras {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("generated names are valid");
        headers.append(name, value(bytes));
    }
    if let Some(content_type) = content_type {
        headers.insert("content-type", value(content_type));
    }
}

// ---- properties ----------------------------------------------------------------

#[test]
fn unsigned_or_wrongly_signed_callbacks_are_refused_and_change_nothing() {
    let started = Instant::now();
    let rt = runtime();
    let app = rt.block_on(spawn_quiet_app());
    let targets = rt.block_on(seed(&app));
    let before = rt.block_on(state(&app));

    let case = (
        forgery(),
        body(targets, false),
        extra_headers(),
        content_type(),
    );
    let result = runner().run(&case, |(forgery, body, extras, content_type)| {
        rt.block_on(async {
            let mut headers = forged_headers(&app, &forgery, &body);
            add_extras(&mut headers, &extras, content_type.as_ref());
            let len = body.len();
            let (status, answer) = post(&app, headers, body).await;
            let (expected_status, expected_code) = if len > MAX_CALLBACK_BYTES {
                (413, "PAYLOAD_TOO_LARGE")
            } else {
                (401, "SIGNATURE_INVALID")
            };
            prop_assert_eq!(status, expected_status, "answer {}", answer);
            prop_assert_eq!(&answer["error"]["code"], expected_code, "answer {}", answer);
            prop_assert!(answer["error"]["message"].is_string(), "answer {}", answer);
            Ok::<(), TestCaseError>(())
        })
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }

    let after = rt.block_on(state(&app));
    assert_eq!(after, before, "a refused callback changed the database");
    eprintln!("{CASES} refused callbacks in {:?}", started.elapsed());
    drop(app);
}

#[test]
fn signed_arbitrary_bodies_never_get_a_5xx_and_keep_the_invariants() {
    let started = Instant::now();
    let rt = runtime();
    let app = rt.block_on(spawn_quiet_app());
    let targets = rt.block_on(seed(&app));

    let case = (
        body(targets, true),
        // A few ids repeat, to reach duplicates and conflicting bodies.
        prop_oneof![
            2 => "evt_[a-z0-9]{20}",
            1 => (0u8..4).prop_map(|n| format!("evt_repeated_{n}")),
        ],
        extra_headers(),
        content_type(),
    );
    let result = runner().run(&case, |(body, id, extras, content_type)| {
        rt.block_on(async {
            let signed = app
                .webhook
                .sign_now(&id, &body)
                .expect("the generated body is UTF-8");
            let mut headers = signature_headers(&signed.id, signed.timestamp, &signed.signature);
            add_extras(&mut headers, &extras, content_type.as_ref());
            let (status, answer) = post(&app, headers, body).await;
            prop_assert!(status < 500, "answer {} {}", status, answer);
            if status == 200 {
                prop_assert_eq!(&answer["code"], "SUCCESS", "answer {}", answer);
            } else {
                prop_assert!(answer["error"]["code"].is_string(), "answer {}", answer);
            }
            Ok::<(), TestCaseError>(())
        })
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }

    rt.block_on(app.assert_invariants());
    eprintln!("{CASES} signed callbacks in {:?}", started.elapsed());
    // Leave the runtime alive until the app is gone.
    drop(app);
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// PostgreSQL text cannot hold U+0000: a signed callback whose `payment_id`
/// (or `order_no`) contains one (`\u0000` in the JSON) once failed inside the
/// charge transaction with a 500, which a platform retries forever. It is
/// refused as a malformed body (400, logged as a delivery). Found by
/// [`signed_arbitrary_bodies_never_get_a_5xx_and_keep_the_invariants`].
#[tokio::test]
async fn a_signed_callback_with_a_nul_in_a_string_is_refused_not_a_500() {
    let app = spawn_quiet_app().await;
    let (account, _, payment) = app.handed_over_order(10_000, 2_500).await;
    let body = success_body(&payment).replace("\"pay_", "\"\\u0000pay_");
    assert!(body.contains("\\u0000pay_"), "{body}");

    let response = app.post_callback(&new_callback_id(), &body).await;

    assert_eq!(response.status(), reqwest::StatusCode::BAD_REQUEST);
    assert_eq!(app.balance(&account).await, 10_000);
    app.assert_invariants().await;
}

/// The same for `merchant_reference`: were it let through, the anomaly's
/// details (which quote the reference) would fail to insert into `jsonb` and
/// answer a 500 the platform retries forever. Found by
/// [`signed_arbitrary_bodies_never_get_a_5xx_and_keep_the_invariants`].
#[tokio::test]
async fn a_signed_callback_with_a_nul_in_its_merchant_reference_is_refused_not_a_500() {
    let app = spawn_quiet_app().await;
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    let never_paid = app.create_order(&account, 1_000).await;
    let payment = app.hand_over(&order).await;

    for body in [
        success_body(&payment),
        success_body(&Payment::unsolicited(&never_paid)),
    ] {
        let mut body: Value = serde_json::from_str(&body).expect("json");
        body["data"]["merchant_reference"] = json!("\u{0}not-a-uuid");
        let response = app
            .post_callback(&new_callback_id(), &body.to_string())
            .await;

        assert_eq!(
            response.status(),
            reqwest::StatusCode::BAD_REQUEST,
            "{body}"
        );
    }
    assert_eq!(app.balance(&account).await, 10_000);
    assert_eq!(app.held(&account).await, 2_500);
    app.assert_invariants().await;
}

/// The same for the strings of a refund event: a signed `refund.succeeded`
/// whose `refund_no` (or `refund_id`) holds U+0000 once answered 500, which
/// the platform delivers again for days. Refused as malformed, nothing booked.
#[tokio::test]
async fn a_signed_refund_callback_with_a_nul_in_its_refund_no_is_refused_not_a_500() {
    let app = spawn_quiet_app().await;
    let (account, _, payment) = app.handed_over_order(10_000, 2_500).await;
    let paid = app.post_success(&payment).await;
    assert_eq!(paid.status(), reqwest::StatusCode::OK);
    let before = app.snapshot().await;
    let refunds_before = app.count("refunds").await;

    for (field, value) in [
        ("refund_no", "ref_\u{0}1"),
        ("refund_id", "\u{0}"),
        ("refund_no", "\u{0}"),
    ] {
        let mut body: Value = serde_json::from_str(&success_body(&payment)).expect("json");
        body["type"] = json!("refund.succeeded");
        body["data"]["amount_cents"] = json!(1_000);
        body["data"]["refund_no"] = json!("ref_0123");
        body["data"]["refund_id"] = json!("re_0123");
        body["data"][field] = json!(value);
        let response = app
            .post_callback(&new_callback_id(), &body.to_string())
            .await;

        assert_eq!(
            response.status(),
            reqwest::StatusCode::BAD_REQUEST,
            "{body}"
        );
        let answer: Value = response.json().await.expect("json");
        assert_eq!(answer["error"]["code"], "BAD_REQUEST", "{body}");
    }
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("refunds").await, refunds_before);
    assert_eq!(app.balance(&account).await, 7_500);
    app.assert_invariants().await;
}
