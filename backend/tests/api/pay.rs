use crate::helpers::{error_code, spawn_app, spawn_app_with, spawn_app_without_callbacks};
use api_types::OrderStatus;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn pay_returns_202_and_the_sandbox_callback_charges_the_order_once() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.headers().get("idempotent-replayed").is_none());
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["order_no"], order.order_no.as_str());
    assert_eq!(body["status"], "PENDING");
    assert!(
        body["payment_id"]
            .as_str()
            .is_some_and(|id| id.parse::<Uuid>().is_ok())
    );

    let settled = app.wait_until_final(&order.order_no).await;
    assert_eq!(settled.status, OrderStatus::Paid);
    assert!(settled.paid_at.is_some());
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(app.count("payment_ledger").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn pay_replays_the_winners_answer_for_the_same_token_at_any_later_time() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let first = app.pay(&order.order_no, token).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first_body = first.text().await.expect("body");
    app.wait_until_final(&order.order_no).await;

    let again = app.pay(&order.order_no, token).await;

    assert_eq!(again.status(), StatusCode::ACCEPTED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again_body: Value = again.json().await.expect("json");
    assert_eq!(
        again_body,
        serde_json::from_str::<Value>(&first_body).expect("json")
    );
    assert_eq!(app.count("payment_attempts").await, 1);
    assert_eq!(app.balance(&account).await, 8_000);
}

/// What one burst of concurrent submits of one token got back.
struct Burst {
    /// Answers without `Idempotent-Replayed` (the token's one winner).
    fresh: usize,
    /// Answers replaying the winner's (at once, or after `PAY_IN_PROGRESS`).
    replayed: usize,
    /// `PAY_IN_PROGRESS` answers that were retried with the same token.
    in_progress: usize,
    /// The payment ids the 202s named.
    payment_ids: std::collections::HashSet<String>,
}

/// Sends the same pay `n` times at once, as pages re-sending after a network
/// drop do: a `409 PAY_IN_PROGRESS` is retried after its `Retry-After` with the
/// same token. Any other answer fails the test.
async fn burst_of_submits(
    app: &crate::helpers::TestApp,
    order_no: &str,
    token: Uuid,
    n: usize,
) -> Burst {
    let submits = (0..n).map(|_| async move {
        let mut waited = 0;
        loop {
            let response = app.pay(order_no, token).await;
            let status = response.status();
            if status == StatusCode::CONFLICT {
                let retry_after = response.headers().get("retry-after").cloned();
                let code = error_code(response).await;
                assert_eq!(
                    code, "PAY_IN_PROGRESS",
                    "a concurrent submit of the same token"
                );
                assert_eq!(retry_after.expect("Retry-After"), "1");
                waited += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            assert_eq!(
                status,
                StatusCode::ACCEPTED,
                "{}",
                response.text().await.unwrap_or_default()
            );
            let replayed = response.headers().get("idempotent-replayed").is_some();
            let body: Value = response.json().await.expect("json");
            return (
                replayed,
                waited,
                body["payment_id"].as_str().expect("payment_id").to_owned(),
            );
        }
    });
    let answers = join_all(submits).await;
    Burst {
        fresh: answers.iter().filter(|(replayed, _, _)| !replayed).count(),
        replayed: answers.iter().filter(|(replayed, _, _)| *replayed).count(),
        in_progress: answers.iter().map(|(_, waited, _)| waited).sum(),
        payment_ids: answers.into_iter().map(|(_, _, id)| id).collect(),
    }
}

#[tokio::test]
async fn fifty_concurrent_pays_with_one_token_make_exactly_one_attempt() {
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 300).await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;

    let burst = burst_of_submits(&app, &order.order_no, token, 50).await;

    assert_eq!(burst.fresh, 1, "exactly one submit wins");
    assert_eq!(
        burst.replayed, 49,
        "every other submit replays the winner's answer"
    );
    assert_eq!(burst.payment_ids.len(), 1, "one payment named by all");
    assert_eq!(app.count("payment_attempts").await, 1);
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_000);
    app.assert_invariants().await;
}

#[tokio::test]
async fn concurrent_submits_of_one_token_are_never_told_the_token_is_invalid() {
    // A page that re-sends after a network drop, or a double click: 2, 5 and
    // 50 submits of one token at once, a hundred times each. The first use
    // charges; every other use must get its answer replayed (after waiting for
    // the attempt's commit, or after PAY_IN_PROGRESS), never TOKEN_INVALID,
    // which the page would read as "nothing was charged". No callback, and no
    // active query within the test (a slow machine takes over a minute): every
    // order stays PENDING with its hold.
    let app = spawn_app_with(|config| {
        config.sandbox_drop_callbacks = true;
        config.query_after_secs = 3_600;
    })
    .await;
    let rounds = 100;
    let sizes = [2, 5, 50];
    let account = app.create_account(2_000 * 3 * rounds, "EUR").await;
    let mut in_progress = 0;
    for n in sizes {
        for _ in 0..rounds {
            let order = app.create_order(&account, 2_000).await;
            let token = app.request_token(&order.order_no).await;
            let burst = burst_of_submits(&app, &order.order_no, token, n).await;
            assert_eq!(burst.fresh, 1, "{n} submits: exactly one winner");
            assert_eq!(burst.replayed, n - 1, "{n} submits: the others replay");
            assert_eq!(burst.payment_ids.len(), 1, "{n} submits: one payment");
            in_progress += burst.in_progress;
        }
    }
    let orders = i64::try_from(sizes.len() * rounds as usize).expect("small");
    assert_eq!(
        app.count("payment_attempts").await,
        orders,
        "one attempt per order"
    );
    assert_eq!(
        app.held(&account).await,
        2_000 * orders,
        "each order held once"
    );
    println!("{orders} bursts, {in_progress} PAY_IN_PROGRESS answers retried");
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_submit_whose_token_is_in_flight_without_an_attempt_answers_pay_in_progress_and_changes_nothing()
 {
    // The submit that took the token died before its commit: its in-flight
    // marker is all there is. A second submit waits for the attempt, then
    // says the payment is in progress; it neither charges nor claims the
    // token is invalid.
    let app = spawn_app_without_callbacks().await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let key = app.token_key(token);
    let mut redis = app.redis().await;
    let binding: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .expect("binding");
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(format!("inflight:{binding}"))
        .arg("EX")
        .arg(30)
        .query_async(&mut redis)
        .await
        .expect("marker");
    let before = app.snapshot().await;

    let started = std::time::Instant::now();
    let response = app.pay(&order.order_no, token).await;

    assert!(
        started.elapsed() >= backend::http::routes::pay::IN_FLIGHT_WAIT,
        "it waited for the attempt first"
    );
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(error_code(response).await, "PAY_IN_PROGRESS");
    assert_eq!(app.snapshot().await, before);

    // The winner gives the token back (a failure on our side) while a
    // submit waits: the waiting submit takes it and pays.
    let waiting = app.pay(&order.order_no, token);
    let give_back = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg(&binding)
            .arg("EX")
            .arg(60)
            .query_async(&mut redis)
            .await
            .expect("restore");
    };
    let (response, ()) = tokio::join!(waiting, give_back);
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.headers().get("idempotent-replayed").is_none());
    assert_eq!(app.count("payment_attempts").await, 1);
}

#[tokio::test]
async fn a_submit_refused_by_the_order_releases_the_token_so_a_concurrent_one_is_not_kept_waiting()
{
    let app = spawn_app_without_callbacks().await;
    let (account, order) = app.account_with_order(1_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;

    let started = std::time::Instant::now();
    let answers = join_all((0..5).map(|_| app.pay(&order.order_no, token))).await;

    let mut codes = Vec::new();
    for response in answers {
        codes.push(error_code(response).await);
    }
    assert_eq!(
        codes
            .iter()
            .filter(|code| *code == "INSUFFICIENT_FUNDS")
            .count(),
        1,
        "{codes:?}"
    );
    assert!(
        codes
            .iter()
            .all(|code| code == "INSUFFICIENT_FUNDS" || code == "TOKEN_INVALID"),
        "{codes:?}"
    );
    assert!(
        started.elapsed() < backend::http::routes::pay::IN_FLIGHT_WAIT,
        "nobody waited out the in-flight wait for an attempt that will never come"
    );
    assert_eq!(
        app.token_ttl(token).await,
        -2,
        "the refused token is used up"
    );
    assert_eq!(app.held(&account).await, 0);
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_second_token_for_an_order_already_being_paid_joins_the_first_attempt() {
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 2_000).await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let first_token = app.request_token(&order.order_no).await;
    let second_token = app.request_token(&order.order_no).await;
    let first: Value = app
        .pay(&order.order_no, first_token)
        .await
        .json()
        .await
        .expect("json");

    let second = app.pay(&order.order_no, second_token).await;

    assert_eq!(second.status(), StatusCode::ACCEPTED);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    let second: Value = second.json().await.expect("json");
    assert_eq!(second["payment_id"], first["payment_id"]);
    assert_eq!(app.count("payment_attempts").await, 1);
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_000);
}

#[tokio::test]
async fn pay_with_an_unknown_token_is_409_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, Uuid::new_v4()).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_with_an_expired_token_is_409_and_changes_nothing() {
    let app = spawn_app_with(|c| c.token_ttl_secs = 1).await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_with_a_token_of_another_order_is_409_and_changes_nothing() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let other = app.create_order(&account, 3_000).await;
    let token = app.request_token(&other.order_no).await;
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_with_a_missing_or_malformed_token_or_body_is_400_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, order) = app.account_with_order(10_000, 2_000).await;
    app.request_token(&order.order_no).await;
    let before = app.snapshot().await;

    for body in [
        "{}".to_owned(),
        "{\"request_token\": \"not-a-uuid\"}".to_owned(),
        "{\"request_token\": 42}".to_owned(),
        "{\"request_token\":".to_owned(),
        "".to_owned(),
        json!({"request_token": null}).to_string(),
    ] {
        let response = app.pay_raw(&order.order_no, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body:?}");
        assert_eq!(error_code(response).await, "BAD_REQUEST", "{body:?}");
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn pay_for_an_order_that_is_not_pending_is_409_order_not_payable() {
    let app = spawn_app_without_callbacks().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let payment = app.hand_over(&order).await;
    let paid = app.post_success(&payment).await;
    assert_eq!(paid.status(), StatusCode::OK);
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(response).await, "ORDER_NOT_PAYABLE");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 8_000);
}

#[tokio::test]
async fn pay_with_a_balance_below_the_amount_is_422_and_changes_nothing() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(1_000, 2_000).await;
    let token = app.request_token(&order.order_no).await;
    let before = app.snapshot().await;

    let response = app.pay(&order.order_no, token).await;

    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(response).await, "INSUFFICIENT_FUNDS");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.balance(&account).await, 1_000);
}

#[tokio::test]
async fn a_token_presented_on_another_order_is_refused_unused_and_still_pays_its_own_order() {
    let app = spawn_app().await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let other = app.create_order(&account, 3_000).await;
    let token = app.request_token(&order.order_no).await;
    let ttl_before = app.token_ttl(token).await;
    let before = app.snapshot().await;

    let refused = app.pay(&other.order_no, token).await;

    assert_eq!(refused.status(), StatusCode::CONFLICT);
    assert_eq!(error_code(refused).await, "TOKEN_INVALID");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.count("payment_attempts").await, 0);
    assert_eq!(
        app.order(&other.order_no).await.status,
        OrderStatus::Pending
    );
    let ttl_after = app.token_ttl(token).await;
    assert!(
        (ttl_before - 2..=ttl_before).contains(&ttl_after),
        "the token is still there with its own expiry: {ttl_before} s then {ttl_after} s"
    );

    let own = app.pay(&order.order_no, token).await;

    assert_eq!(own.status(), StatusCode::ACCEPTED);
    assert!(own.headers().get("idempotent-replayed").is_none());
    assert_eq!(
        app.wait_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(app.count("payment_attempts").await, 1);
    assert_eq!(app.count("payment_ledger").await, 1);
    assert_eq!(
        app.order(&other.order_no).await.status,
        OrderStatus::Pending
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn submits_of_a_token_on_another_order_racing_the_shoppers_own_never_make_it_fail() {
    let app = spawn_app_with(|c| c.sandbox_callback_delay_ms = 300).await;
    let (account, order) = app.account_with_order(10_000, 2_000).await;
    let other = app.create_order(&account, 3_000).await;
    let token = app.request_token(&order.order_no).await;

    let (wrong, own) = tokio::join!(
        join_all((0..25).map(|_| app.pay(&other.order_no, token))),
        app.pay(&order.order_no, token),
    );

    for response in wrong {
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(error_code(response).await, "TOKEN_INVALID");
    }
    assert_eq!(own.status(), StatusCode::ACCEPTED);
    assert!(own.headers().get("idempotent-replayed").is_none());
    assert_eq!(app.count("payment_attempts").await, 1);
    app.wait_until_final(&order.order_no).await;
    assert_eq!(app.balance(&account).await, 8_000);
    assert_eq!(
        app.order(&other.order_no).await.status,
        OrderStatus::Pending
    );
    app.assert_invariants().await;
}
