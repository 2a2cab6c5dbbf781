//! A flood of sign-ins against a backend process. Each password check
//! (argon2id) holds 19 MiB and a core until it ends; the backend runs a few at
//! a time, so its memory stays bounded whatever arrives at once, every request
//! still gets a clear answer, and a shopper signs in afterwards.

use crate::rig::{ADMIN, Binary, Rig, RigOptions};
use futures::future::join_all;
use serde_json::{Value, json};
use uuid::Uuid;

/// Sign-ins sent at once: far more than the cores that check them.
const FLOOD: usize = 32;

#[tokio::test]
async fn a_flood_of_sign_ins_checks_a_few_passwords_at_a_time_and_memory_stays_bounded() {
    // Arrange: a backend whose sign-in failure limits are off, so that every
    // request of the flood is checked (the limits would stop one address early).
    let rig = Rig::start(RigOptions {
        binary: Binary::Ordinary,
        env: vec![
            (
                backend::env::RATE_LIMIT_SIGNIN_FAILURES_PER_IP.to_owned(),
                "0".to_owned(),
            ),
            (
                backend::env::RATE_LIMIT_SIGNIN_FAILURES_PER_EMAIL.to_owned(),
                "0".to_owned(),
            ),
        ],
        ..RigOptions::default()
    })
    .await;
    let url = rig.url().to_owned();
    // The backend's memory, KiB: (peak so far, resident now).
    let memory_kib = || async {
        let backend = rig.backends[0].lock().await;
        (backend.peak_rss_kib(), backend.rss_kib())
    };
    let peak_rss_kib = || async { memory_kib().await.0.expect("the backend runs") };
    let http = reqwest::Client::new();
    let (email, password) = (
        format!("flood-{}@shop.test", Uuid::new_v4().simple()),
        Uuid::new_v4().simple().to_string(),
    );
    let created = http
        .post(format!("{url}/api/admin/shoppers"))
        .bearer_auth(ADMIN)
        .json(&json!({"email": email, "password": password,
                      "balance_cents": 1_000, "currency": "EUR"}))
        .send()
        .await
        .expect("admin answers");
    assert_eq!(created.status(), 201, "the shopper is created");
    let before = peak_rss_kib().await;

    // Act: wrong passwords, for the shopper and for unknown emails, all at once.
    let answers = join_all((0..FLOOD).map(|i| {
        let (http, url) = (http.clone(), url.clone());
        let email = if i % 2 == 0 {
            email.clone()
        } else {
            format!("nobody-{i}@shop.test")
        };
        async move {
            let response = http
                .post(format!("{url}/api/session"))
                .json(&json!({"email": email, "password": format!("wrong-password-{i}")}))
                .send()
                .await
                .expect("an answer");
            let status = response.status().as_u16();
            let body: Value = response.json().await.expect("a JSON error body");
            (
                status,
                body["error"]["code"].as_str().unwrap_or("").to_owned(),
            )
        }
    }))
    .await;

    // Assert: each refused clearly, none signed in; the peak memory rose by a
    // few checks' worth, not one per request (32 at once: over 600 MiB).
    for (status, code) in &answers {
        assert!(
            (*status, code.as_str()) == (401, "INVALID_CREDENTIALS")
                || (*status, code.as_str()) == (503, "SERVICE_UNAVAILABLE"),
            "{answers:?}"
        );
    }
    assert!(
        answers.iter().any(|(status, _)| *status == 401),
        "some were checked: {answers:?}"
    );
    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM tower_sessions.session")
        .fetch_one(&rig.db)
        .await
        .expect("count");
    assert_eq!(sessions, 0, "no session was made");
    let risen_mib = (peak_rss_kib().await.saturating_sub(before)) / 1024;
    eprintln!("the flood of {FLOOD} sign-ins raised the backend's peak memory by {risen_mib} MiB");
    let bound_mib = (backend::http::auth::passwords::checks_at_once() as u64 + 2) * 20;
    assert!(
        risen_mib <= bound_mib,
        "the flood raised the backend's peak memory by {risen_mib} MiB (bound {bound_mib} MiB)"
    );

    // The right password still signs in.
    let signed_in = http
        .post(format!("{url}/api/session"))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(signed_in.status(), 200);

    // Once no check has used it for a while, the checks' working memory goes
    // back to the system: the flood does not leave the process larger for good.
    let rss_kib = || async { memory_kib().await.1.expect("the backend runs") };
    let after_flood = rss_kib().await;
    let kept = backend::http::auth::passwords::IDLE_MEMORY_KEPT;
    tokio::time::sleep(kept + kept / 2 + std::time::Duration::from_secs(1)).await;
    let fell_mib = after_flood.saturating_sub(rss_kib().await) / 1024;
    eprintln!("{kept:?} after the last sign-in the backend's memory fell by {fell_mib} MiB");
    let slots = backend::http::auth::passwords::checks_at_once() as u64;
    assert!(
        fell_mib >= slots * 15,
        "the idle working memory of {slots} password-check slots (19 MiB each) was not given back: \
         the backend's memory fell by {fell_mib} MiB"
    );
}
