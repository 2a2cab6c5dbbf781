//! Rate limits: repeated wrong passwords and wrong admin tokens get 429 with
//! Retry-After (and a right one is no way around it while blocked, whatever
//! the email's spelling); per-shopper limits on tokens, pays and orders;
//! callbacks are never limited.

use crate::helpers::{
    ADMIN_TOKEN, PASSWORD, browser_client, error_code, new_callback_id, spawn_app, spawn_app_with,
    spawn_app_without_callbacks, success_body,
};
use api_types::api::{SessionInfo, ShopperCreated};
use backend::http::limits::LimitsConfig;
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

fn retry_after(response: &reqwest::Response) -> u64 {
    response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After in seconds")
}

#[tokio::test]
async fn repeated_wrong_passwords_get_429_with_retry_after_even_for_the_right_one_then() {
    let app = spawn_app().await;
    let account = app.create_shopper(1_000, "EUR").await;
    let client = browser_client();
    let wrong = json!({"email": account.email, "password": "not-the-password"});
    let mut statuses = Vec::new();
    let mut limited = None;

    for _ in 0..(LimitsConfig::default().signin_failures_per_email + 3) {
        let response = app.post_session(&client, &wrong).await;
        statuses.push(response.status().as_u16());
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(response);
        }
    }

    let limited = limited.unwrap_or_else(|| panic!("never limited: {statuses:?}"));
    assert!((1..=60).contains(&retry_after(&limited)));
    assert_eq!(error_code(limited).await, "RATE_LIMITED");
    assert!(statuses.starts_with(&[401; 5]), "{statuses:?}");
    let right = app
        .post_session(
            &client,
            &json!({"email": account.email, "password": PASSWORD}),
        )
        .await;
    assert_eq!(
        right.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "blocked means blocked"
    );
    assert!(right.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn wrong_passwords_for_many_emails_from_one_ip_get_429() {
    let app = spawn_app_with(|c| c.limits.signin_failures_per_ip = 4).await;
    let client = browser_client();
    let mut statuses = Vec::new();

    for n in 0..8 {
        let response = app
            .post_session(
                &client,
                &json!({"email": format!("guess{n}@shop.test"), "password": "x-password-guess"}),
            )
            .await;
        statuses.push(response.status().as_u16());
    }

    assert_eq!(&statuses[..4], &[401; 4], "{statuses:?}");
    assert!(statuses[4..].iter().all(|s| *s == 429), "{statuses:?}");
}

#[tokio::test]
async fn wrong_admin_tokens_get_429_with_retry_after_and_create_nothing() {
    let app = spawn_app().await;
    let before = app.snapshot().await;
    let mut statuses = Vec::new();
    let mut last = None;

    for _ in 0..30 {
        let response = app
            .http
            .post(app.url("/api/admin/shoppers"))
            .bearer_auth("a-wrong-admin-token-guess-0000000")
            .json(&json!({"email": "x@shop.test", "password": "long-enough-password", "balance_cents": 1, "currency": "EUR"}))
            .send()
            .await
            .expect("sent");
        statuses.push(response.status().as_u16());
        last = Some(response);
    }

    let last = last.expect("answers");
    assert_eq!(last.status(), StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");
    assert!(retry_after(&last) >= 1);
    assert_eq!(error_code(last).await, "RATE_LIMITED");
    assert_eq!(&statuses[..10], &[401; 10]);
    let right = app
        .http
        .get(app.url("/api/admin/anomalies"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("sent");
    assert_eq!(
        right.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "the IP is blocked"
    );
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_shopper_taking_too_many_tokens_or_paying_too_often_gets_429() {
    let app = spawn_app_with(|c| {
        c.limits.tokens_per_shopper = 3;
        c.limits.pays_per_shopper = 2;
        c.limits.orders_per_shopper = 2;
    })
    .await;
    let (_, order) = app.account_with_order(100_000, 1_000).await;
    app.put_product("mug", "Mug", 1_250, "EUR").await;

    let mut tokens = Vec::new();
    for _ in 0..4 {
        tokens.push(
            app.post_request_token(&order.order_no)
                .await
                .status()
                .as_u16(),
        );
    }
    let mut pays = Vec::new();
    for _ in 0..3 {
        pays.push(
            app.pay(&order.order_no, uuid::Uuid::new_v4())
                .await
                .status()
                .as_u16(),
        );
    }
    let mut orders = Vec::new();
    for _ in 0..3 {
        orders.push(
            app.post_order(&json!({"sku": "mug", "quantity": 1}))
                .await
                .status()
                .as_u16(),
        );
    }

    assert_eq!(tokens, [201, 201, 201, 429]);
    assert_eq!(pays, [409, 409, 429]);
    assert_eq!(orders, [201, 201, 429]);
    // Another shopper is not held back by the first one's limit.
    let other = app.create_account(100_000, "EUR").await;
    let theirs = app.create_order(&other, 500).await;
    assert_eq!(
        app.post_request_token(&theirs.order_no).await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn callbacks_are_never_rate_limited() {
    let app = spawn_app_without_callbacks().await;
    let (_, _, payment) = app.handed_over_order(10_000, 1_000).await;
    let body = success_body(&payment);

    // Far more wrong signatures than any failure limit.
    for _ in 0..60 {
        let response = app
            .post_callback_with_headers(&body, &new_callback_id(), "1", "v1,AAAA")
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    let id = new_callback_id();
    for _ in 0..60 {
        let response = app.post_callback(&id, &body).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert_eq!(app.count("payment_ledger").await, 1);
}

/// Eight wrong passwords for different emails, each from the address
/// `forwarded(n)` claims in `X-Forwarded-For`; their statuses.
async fn failures_claiming(
    app: &crate::helpers::TestApp,
    forwarded: impl Fn(usize) -> String,
) -> Vec<u16> {
    let client = browser_client();
    let mut statuses = Vec::new();
    for n in 0..8 {
        let response = client
            .post(app.url("/api/session"))
            .header("x-forwarded-for", forwarded(n))
            .json(&json!({"email": format!("guess{n}@shop.test"), "password": "x-password-guess"}))
            .send()
            .await
            .expect("sent");
        statuses.push(response.status().as_u16());
    }
    statuses
}

#[tokio::test]
async fn a_client_cannot_escape_the_limit_per_address_by_claiming_other_addresses() {
    // No trusted proxy: X-Forwarded-For is the client's own words.
    let app = spawn_app_with(|c| c.limits.signin_failures_per_ip = 4).await;

    let statuses = failures_claiming(&app, |n| format!("203.0.113.{n}")).await;

    assert_eq!(&statuses[..4], &[401; 4], "{statuses:?}");
    assert!(statuses[4..].iter().all(|s| *s == 429), "{statuses:?}");
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_limit() {
    let app = spawn_app_with(|c| {
        c.limits.signin_failures_per_ip = 4;
        c.trusted_proxies = vec!["127.0.0.1".parse().expect("an address")];
    })
    .await;

    // One client behind the balancer (which appended its address last),
    // writing whatever it likes to the left of it.
    let one = failures_claiming(&app, |n| format!("198.51.100.{n}, 203.0.113.7")).await;
    assert_eq!(&one[..4], &[401; 4], "{one:?}");
    assert!(one[4..].iter().all(|s| *s == 429), "{one:?}");

    // Another client behind the same balancer is not blocked by the first.
    let other = failures_claiming(&app, |_| "203.0.113.8".to_owned()).await;
    assert_eq!(&other[..4], &[401; 4], "{other:?}");
    assert!(other[4..].iter().all(|s| *s == 429), "{other:?}");
}

/// Spellings of `email` that differ from it in case only, through the edge
/// cases of Unicode case mapping, each with its name. Which of them find the
/// shopper with `email` is the database's `lower()` to say.
fn spellings(email: &str) -> Vec<(&'static str, String)> {
    let (local, domain) = email.split_once('@').expect("an email");
    let full_width: String = local
        .chars()
        .map(|c| match c {
            'a'..='z' => char::from_u32(u32::from(c) - u32::from('a') + 0xFF21)
                .expect("a full-width capital"),
            other => other,
        })
        .collect();
    vec![
        ("upper case", email.to_uppercase()),
        (
            "dotted capital I (U+0130) for i",
            email.replace('i', "\u{130}"),
        ),
        ("Kelvin sign (U+212A) for k", email.replace('k', "\u{212A}")),
        ("sharp s for ss", email.replace("ss", "\u{DF}")),
        (
            "capital sharp s (U+1E9E) for ss",
            email.replace("ss", "\u{1E9E}"),
        ),
        ("full-width capitals", format!("{full_width}@{domain}")),
    ]
}

/// A fresh email with an i, a k and an ss in it.
fn fresh_email() -> String {
    format!("kim.strass-{}@shop.test", Uuid::new_v4().simple())
}

/// A shopper with `email` and [`PASSWORD`]; their id.
async fn shopper_with_email(app: &crate::helpers::TestApp, email: &str) -> Uuid {
    let created = app
        .post_shopper(&json!({"email": email, "password": PASSWORD, "balance_cents": 1_000, "currency": "EUR"}))
        .await;
    assert_eq!(created.status(), StatusCode::CREATED, "{email}");
    created
        .json::<ShopperCreated>()
        .await
        .expect("JSON")
        .shopper_id
}

/// The statuses of `count` wrong passwords for `email`.
async fn failures(app: &crate::helpers::TestApp, email: &str, count: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for _ in 0..count {
        let response = app
            .post_session(
                &browser_client(),
                &json!({"email": email, "password": "not-the-password"}),
            )
            .await;
        statuses.push(response.status().as_u16());
    }
    statuses
}

#[tokio::test]
async fn every_spelling_that_finds_a_shopper_counts_against_their_one_sign_in_limit() {
    // Every request comes from one address: only the per-email limit here.
    let app = spawn_app_with(|c| {
        c.limits.signin_failures_per_ip = 0;
        c.limits.signin_failures_per_email = 2;
    })
    .await;
    let right = |email: &str| json!({"email": email, "password": PASSWORD});
    let mut found_beyond_ascii = Vec::new();

    for n in 0..spellings("x@y").len() {
        // Arrange: a shopper per spelling (a blocked email stays blocked a
        // while), and whether the spelling finds them: the right password
        // through it, before any failure.
        let email = fresh_email();
        let shopper_id = shopper_with_email(&app, &email).await;
        let (name, variant) = spellings(&email).swap_remove(n);
        let probe = app.post_session(&browser_client(), &right(&variant)).await;
        let finds = probe.status() == StatusCode::OK;
        if finds {
            let info: SessionInfo = probe.json().await.expect("JSON");
            assert_eq!(info.shopper_id, shopper_id, "{name}");
            if !variant.is_ascii() {
                found_beyond_ascii.push(name);
            }
        } else {
            assert_eq!(probe.status(), StatusCode::UNAUTHORIZED, "{name}");
        }

        // Act: wrong passwords for the email as stored until it is blocked
        // (the failure past the limit answers 429), then the right one
        // through the spelling.
        let statuses = failures(&app, &email, 3).await;
        assert_eq!(statuses, [401, 401, 429], "{name}");
        let sessions = app.count("tower_sessions.session").await;
        let before = app.snapshot().await;
        let response = app.post_session(&browser_client(), &right(&variant)).await;

        // Assert: blocked with the shopper it finds; nothing signed in or changed.
        if finds {
            assert_eq!(
                response.status(),
                StatusCode::TOO_MANY_REQUESTS,
                "{name}: a spelling that finds the shopper is blocked with them"
            );
            assert!(response.headers().get("set-cookie").is_none(), "{name}");
            assert_eq!(error_code(response).await, "RATE_LIMITED", "{name}");
        } else {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{name}");
        }
        assert_eq!(
            app.count("tower_sessions.session").await,
            sessions,
            "{name}"
        );
        assert_eq!(app.snapshot().await, before, "{name}");

        // And the other way round: failures through the spelling block the
        // email as stored, when the spelling finds its shopper.
        let email = fresh_email();
        shopper_with_email(&app, &email).await;
        let (_, variant) = spellings(&email).swap_remove(n);
        let statuses = failures(&app, &variant, 3).await;
        assert_eq!(statuses, [401, 401, 429], "{name}");
        let response = app.post_session(&browser_client(), &right(&email)).await;
        let expected = if finds {
            StatusCode::TOO_MANY_REQUESTS
        } else {
            StatusCode::OK
        };
        assert_eq!(response.status(), expected, "{name}: failures through it");
    }
    assert!(
        !found_beyond_ascii.is_empty(),
        "no spelling beyond ASCII case found the shopper: nothing about Unicode was tested"
    );
}

#[tokio::test]
async fn the_sign_in_limit_tells_nothing_about_whether_an_email_exists_whatever_its_spelling() {
    let app = spawn_app_with(|c| {
        c.limits.signin_failures_per_ip = 0;
        c.limits.signin_failures_per_email = 2;
    })
    .await;
    let existing = fresh_email();
    shopper_with_email(&app, &existing).await;
    let nobody = fresh_email();

    // The same wrong passwords, through the email and each of its spellings.
    let mut answers = Vec::new();
    for email in [&existing, &nobody] {
        let mut statuses = Vec::new();
        let tried =
            std::iter::once(email.clone()).chain(spellings(email).into_iter().map(|(_, s)| s));
        for spelling in tried {
            let response = app
                .post_session(
                    &browser_client(),
                    &json!({"email": spelling, "password": "not-the-password"}),
                )
                .await;
            statuses.push(response.status().as_u16());
        }
        answers.push(statuses);
    }

    assert!(
        answers[0].contains(&429),
        "the limit was reached: {answers:?}"
    );
    assert_eq!(answers[0], answers[1], "a shopper's email against nobody's");
}
