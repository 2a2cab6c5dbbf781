//! Sign-in, sign-out and sessions: the cookie's attributes, one answer for a
//! wrong email and a wrong password, sessions dead on the server after
//! sign-out, no session fixation, and idle expiry that a used session slides.

use crate::helpers::{PASSWORD, browser_client, error_code, spawn_app, spawn_app_with};
use api_types::api::{Me, SessionInfo};
use backend::config::PlatformKind;
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};

fn session_cookie(response: &reqwest::Response) -> String {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("checkout_session="))
        .expect("a session cookie")
        .to_owned()
}

fn cookie_value(set_cookie: &str) -> &str {
    set_cookie
        .split(';')
        .next()
        .and_then(|pair| pair.split_once('='))
        .map(|(_, value)| value)
        .expect("name=value")
}

#[tokio::test]
async fn sign_in_sets_an_http_only_lax_cookie_and_me_shows_the_shopper_and_their_accounts() {
    let app = spawn_app().await;
    let account = app.create_shopper(7_000, "EUR").await;
    let client = browser_client();

    let response = app
        .post_session(
            &client,
            &json!({"email": account.email.to_uppercase(), "password": PASSWORD}),
        )
        .await;

    assert_eq!(response.status(), StatusCode::OK);
    let cookie = session_cookie(&response);
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{attribute} missing: {cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "no Secure without COOKIE_SECURE: {cookie}"
    );
    let info: SessionInfo = response.json().await.expect("json");
    assert_eq!(info.shopper_id, account.shopper_id);
    assert_eq!(info.email, account.email);

    let me: Me = client
        .get(app.url("/api/me"))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(me.shopper_id, account.shopper_id);
    assert_eq!(me.accounts.len(), 1);
    assert_eq!(me.accounts[0].account_id, account.account_id);
    assert_eq!(me.accounts[0].balance_cents, 7_000);
}

#[tokio::test]
async fn the_cookie_is_secure_with_cookie_secure_and_answers_carry_hsts() {
    let app = spawn_app_with(|c| c.cookie_secure = true).await;
    let account = app.create_shopper(1_000, "EUR").await;

    let response = app
        .post_session(
            &browser_client(),
            &json!({"email": account.email, "password": PASSWORD}),
        )
        .await;

    assert_eq!(response.status(), StatusCode::OK);
    assert!(session_cookie(&response).contains("Secure"));
    assert!(
        response
            .headers()
            .get("strict-transport-security")
            .is_some_and(|v| v.to_str().unwrap_or_default().contains("max-age=")),
        "HSTS with COOKIE_SECURE"
    );
}

#[tokio::test]
async fn a_wrong_password_and_an_unknown_email_get_the_same_answer_in_similar_time() {
    let app = spawn_app().await;
    let account = app.create_shopper(1_000, "EUR").await;
    let client = browser_client();
    let mut timings = [Duration::ZERO; 2];
    let mut bodies = Vec::new();

    for round in 0..4 {
        for (i, email) in [account.email.as_str(), "nobody@shop.test"]
            .iter()
            .enumerate()
        {
            let started = Instant::now();
            let response = app
                .post_session(
                    &client,
                    &json!({"email": email, "password": "wrong-password-1"}),
                )
                .await;
            let took = started.elapsed();
            if round > 0 {
                timings[i] += took;
            }
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            assert!(response.headers().get("set-cookie").is_none());
            let body: serde_json::Value = response.json().await.expect("json");
            bodies.push(body);
        }
    }

    assert!(
        bodies.iter().all(|b| b == &bodies[0]),
        "one answer: {bodies:?}"
    );
    assert_eq!(bodies[0]["error"]["code"], "INVALID_CREDENTIALS");
    let (known, unknown) = (timings[0].as_secs_f64(), timings[1].as_secs_f64());
    let ratio = known / unknown;
    assert!(
        (0.5..2.0).contains(&ratio),
        "a wrong password took {known:.3} s, an unknown email {unknown:.3} s"
    );
}

#[tokio::test]
async fn after_sign_out_the_old_cookie_is_dead_on_the_server() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 1_000).await;
    let cookie = app.http.get(app.url("/api/me")).send().await.expect("sent");
    assert_eq!(cookie.status(), StatusCode::OK);
    // The session id as a browser would replay it, copied before signing out.
    let copied: String = sqlx::query_scalar("SELECT id FROM tower_sessions.session LIMIT 1")
        .fetch_one(&app.db)
        .await
        .expect("a session row");

    let out = app
        .http
        .delete(app.url("/api/session"))
        .send()
        .await
        .expect("sent");
    assert_eq!(out.status(), StatusCode::NO_CONTENT);

    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM tower_sessions.session")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(sessions, 0, "the session row is gone");
    let replay = reqwest::Client::new()
        .get(app.url(&format!("/api/orders/{}", order.order_no)))
        .header("cookie", format!("checkout_session={copied}"))
        .send()
        .await
        .expect("sent");
    assert_eq!(replay.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(replay).await, "UNAUTHENTICATED");
    let me = app.http.get(app.url("/api/me")).send().await.expect("sent");
    assert_eq!(me.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_cookie_planted_before_sign_in_is_not_the_session_after_it() {
    let app = spawn_app().await;
    let account = app.create_shopper(1_000, "EUR").await;
    let client = browser_client();
    // A first, wrong sign-in gives no cookie; plant one as an attacker would.
    let planted = "AAAAAAAAAAAAAAAAAAAAAA";
    let response = client
        .post(app.url("/api/session"))
        .header("cookie", format!("checkout_session={planted}"))
        .json(&json!({"email": account.email, "password": PASSWORD}))
        .send()
        .await
        .expect("sent");

    assert_eq!(response.status(), StatusCode::OK);
    let issued = session_cookie(&response);
    assert_ne!(cookie_value(&issued), planted);
    let planted_works = reqwest::Client::new()
        .get(app.url("/api/me"))
        .header("cookie", format!("checkout_session={planted}"))
        .send()
        .await
        .expect("sent");
    assert_eq!(planted_works.status(), StatusCode::UNAUTHORIZED);

    // Signing in again, already signed in, also gets a new id.
    let again = app
        .post_session(
            &client,
            &json!({"email": account.email, "password": PASSWORD}),
        )
        .await;
    assert_ne!(cookie_value(&session_cookie(&again)), cookie_value(&issued));
}

#[tokio::test]
async fn no_session_is_401_unauthenticated_on_me_and_sign_out() {
    let app = spawn_app().await;
    for response in [
        app.http.get(app.url("/api/me")).send().await.expect("sent"),
        app.http
            .delete(app.url("/api/session"))
            .send()
            .await
            .expect("sent"),
        app.http
            .get(app.url("/api/orders"))
            .send()
            .await
            .expect("sent"),
    ] {
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(error_code(response).await, "UNAUTHENTICATED");
    }
}

#[tokio::test]
async fn demo_shoppers_exist_only_in_a_sandbox_demo_and_cannot_sign_in_once_it_is_off() {
    let app = spawn_app_with(|c| c.demo = true).await;
    let platform: serde_json::Value = app.get_json("/api/platform").await;
    let demo = &platform["demo_shoppers"][0];
    let (email, password) = (
        demo["email"].as_str().expect("email"),
        demo["password"].as_str().expect("password"),
    );
    let products: Vec<serde_json::Value> = app.get_json("/api/products").await;
    assert!(!products.is_empty(), "demo mode seeds a catalogue");
    let demo_ids: Vec<uuid::Uuid> =
        sqlx::query_scalar("SELECT shopper_id FROM shoppers WHERE demo")
            .fetch_all(&app.db)
            .await
            .expect("ids");
    assert_eq!(demo_ids.len(), 2);
    assert!(
        demo_ids.iter().all(|id| id.get_version_num() == 4),
        "random ids"
    );
    let signed_in = app
        .post_session(&app.http, &json!({"email": email, "password": password}))
        .await;
    assert_eq!(signed_in.status(), StatusCode::OK);

    let demo_client = app.http.clone();
    let me = demo_client
        .get(app.url("/api/me"))
        .send()
        .await
        .expect("sent");
    assert_eq!(me.status(), StatusCode::OK);
    let mut app = app;
    app.config.demo = false;
    let app = app.restart().await;

    let platform: serde_json::Value = app.get_json("/api/platform").await;
    assert_eq!(platform["demo_shoppers"], json!([]));
    let products: Vec<serde_json::Value> = app.get_json("/api/products").await;
    assert!(
        products.is_empty(),
        "the demo catalogue is gone: {products:?}"
    );
    let refused = app
        .post_session(
            &browser_client(),
            &json!({"email": email, "password": password}),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(refused).await, "INVALID_CREDENTIALS");
    // The session made in demo mode died with it.
    let me = demo_client
        .get(app.url("/api/me"))
        .send()
        .await
        .expect("sent");
    assert_eq!(me.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_demo_shopper_left_by_a_sandbox_demo_cannot_sign_in_or_order_where_money_moves() {
    let app = spawn_app_with(|c| c.demo = true).await;
    let (email, password) = backend::http::routes::demo::DEMO_SHOPPERS[0];
    let demo_client = browser_client();
    let signed_in = app
        .post_session(&demo_client, &json!({"email": email, "password": password}))
        .await;
    assert_eq!(signed_in.status(), StatusCode::OK);

    // Act: demo mode stays on, but the platform is no simulator on this
    // machine's loopback (to the rule, 127.0.0.2 is a real platform's address;
    // nothing here pays, and anything sent would stay on this machine).
    let mut app = app;
    app.config.platform = Some(PlatformKind::Remote);
    app.config.platform_url = Some("http://127.0.0.2:9".into());
    let app = app.restart().await;
    let demo_shoppers: i64 = sqlx::query_scalar("SELECT count(*) FROM shoppers WHERE demo")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(demo_shoppers, 2, "left in the database by the sandbox demo");
    let sessions = app.count("tower_sessions.session").await;
    let before = app.snapshot().await;

    // Assert: their public password signs nobody in, their old session is
    // dead, and nothing can be ordered with it.
    let platform: serde_json::Value = app.get_json("/api/platform").await;
    assert_eq!(platform["demo_shoppers"], json!([]));
    let refused = app
        .post_session(
            &browser_client(),
            &json!({"email": email, "password": password}),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(refused.headers().get("set-cookie").is_none());
    assert_eq!(error_code(refused).await, "INVALID_CREDENTIALS");
    let me = demo_client
        .get(app.url("/api/me"))
        .send()
        .await
        .expect("sent");
    assert_eq!(me.status(), StatusCode::UNAUTHORIZED);
    let order = demo_client
        .post(app.url("/api/orders"))
        .header("idempotency-key", uuid::Uuid::new_v4().to_string())
        .json(&json!({"sku": "mug", "quantity": 1}))
        .send()
        .await
        .expect("sent");
    assert_eq!(order.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(order).await, "UNAUTHENTICATED");
    assert_eq!(app.count("tower_sessions.session").await, sessions);
    assert_eq!(app.snapshot().await, before);

    // The rule, not the flag alone: back on the sandbox, the demo shopper signs in again.
    let mut app = app;
    app.config.platform = Some(PlatformKind::Sandbox);
    app.config.platform_url = None;
    let app = app.restart().await;
    let again = app
        .post_session(
            &browser_client(),
            &json!({"email": email, "password": password}),
        )
        .await;
    assert_eq!(again.status(), StatusCode::OK);
}

#[tokio::test]
async fn an_email_no_shopper_can_have_is_invalid_credentials_not_a_500() {
    let app = spawn_app().await;
    for email in ["nul\u{0}@shop.test", &"x".repeat(300)] {
        let response = app
            .post_session(
                &browser_client(),
                &json!({"email": email, "password": "whatever-password"}),
            )
            .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(error_code(response).await, "INVALID_CREDENTIALS");
    }
}

/// The expiry of the only session row.
async fn session_expiry(app: &crate::helpers::TestApp) -> time::OffsetDateTime {
    sqlx::query_scalar("SELECT expiry_date FROM tower_sessions.session")
        .fetch_one(&app.db)
        .await
        .expect("one session row")
}

#[tokio::test]
async fn a_session_in_use_outlives_its_idle_time_and_an_idle_one_ends() {
    // 4 s of idle time: a session signed in at 0 s would be dead at 4 s if
    // reading it did not keep it alive.
    let app = spawn_app_with(|c| c.session_idle_secs = 4).await;
    let account = app.create_shopper(1_000, "EUR").await;
    let client = app.client_of(&account).await;
    let signed_in = Instant::now();

    while signed_in.elapsed() < Duration::from_secs(7) {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let me = client.get(app.url("/api/me")).send().await.expect("sent");
        assert_eq!(
            me.status(),
            StatusCode::OK,
            "a session used every 1.5 s is alive {:?} after sign-in",
            signed_in.elapsed()
        );
    }

    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let me = client.get(app.url("/api/me")).send().await.expect("sent");
    assert_eq!(me.status(), StatusCode::UNAUTHORIZED, "4.5 s idle: ended");
    assert_eq!(error_code(me).await, "UNAUTHENTICATED");
}

#[tokio::test]
async fn reading_a_session_writes_it_again_only_after_an_eighth_of_its_idle_time() {
    // 16 s of idle time: the row is written again at most every 2 s.
    let app = spawn_app_with(|c| c.session_idle_secs = 16).await;
    let account = app.create_shopper(1_000, "EUR").await;
    let client = app.client_of(&account).await;
    let at_sign_in = session_expiry(&app).await;

    for _ in 0..5 {
        let me = client.get(app.url("/api/me")).send().await.expect("sent");
        assert_eq!(me.status(), StatusCode::OK);
        assert!(
            me.headers().get("set-cookie").is_none(),
            "no new cookie when nothing was saved"
        );
    }
    assert_eq!(
        session_expiry(&app).await,
        at_sign_in,
        "requests right after sign-in leave the row alone"
    );

    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let me = client.get(app.url("/api/me")).send().await.expect("sent");
    assert_eq!(me.status(), StatusCode::OK);
    let cookie = session_cookie(&me);
    assert!(
        cookie.contains("Max-Age=16"),
        "the cookie is renewed: {cookie}"
    );
    let slid = session_expiry(&app).await;
    assert!(
        slid >= at_sign_in + time::Duration::seconds(2),
        "the expiry moved with the request: {at_sign_in} -> {slid}"
    );
}

#[tokio::test]
async fn the_store_loads_what_the_library_s_store_saved_over_a_kept_connection() {
    use backend::db::warm::WarmConnections;
    use backend::http::auth::session::Sessions;
    use tower_sessions::SessionStore;
    use tower_sessions::session::{Id, Record};
    use tower_sessions::session_store::Error;
    use tower_sessions_sqlx_store::PostgresStore;

    let (_database, db) = crate::helpers::seeds::database_with_pool(2).await;
    let library = PostgresStore::new(db.clone());
    let warm = WarmConnections::new(db.clone(), 1);
    let ours = Sessions::new(&db, warm.clone());
    let now = time::OffsetDateTime::now_utc();
    let record = |expiry_date| Record {
        id: Id::default(),
        data: [("shopper_id".to_owned(), json!(uuid::Uuid::new_v4()))]
            .into_iter()
            .collect(),
        expiry_date,
    };

    let mut live = record(now + time::Duration::hours(1));
    library.create(&mut live).await.expect("saved");
    let loaded = ours.load(&live.id).await.expect("loaded");
    assert_eq!(loaded, Some(live.clone()), "the library's row, decoded");
    assert_eq!(
        warm.stashed(),
        1,
        "the load's connection is kept for the next"
    );
    // The library's own load agrees.
    assert_eq!(library.load(&live.id).await.expect("loaded"), Some(live));

    let mut expired = record(now - time::Duration::seconds(1));
    library.create(&mut expired).await.expect("saved");
    assert_eq!(ours.load(&expired.id).await.expect("loaded"), None);
    assert_eq!(ours.load(&Id::default()).await.expect("loaded"), None);

    // A row that does not decode is an error, not a missing session.
    let mut broken = record(now + time::Duration::hours(1));
    library.create(&mut broken).await.expect("saved");
    sqlx::query("UPDATE tower_sessions.session SET data = '\\xc1'::bytea WHERE id = $1")
        .bind(broken.id.to_string())
        .execute(&db)
        .await
        .expect("updated");
    assert!(
        matches!(ours.load(&broken.id).await, Err(Error::Decode(_))),
        "undecodable session data is an error"
    );
}
