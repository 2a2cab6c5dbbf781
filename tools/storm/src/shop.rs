//! The shop's side of a run: a shopper with money, signed in, orders for them
//! placed through the merchant API, as a merchant's own shop would, and the
//! shopper paying them, as the payment page does.
//!
//! A success callback charges only when it names the order's payment: our
//! `payment_id` (the merchant reference) and the platform's id for it. So a run
//! pays its orders first ([`pay_orders`]) and builds its callbacks from the
//! [`PaidOrder`]s it gets back.

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

/// A signed-in shopper: `client` carries their session cookie.
#[derive(Debug, Clone)]
pub struct Shopper {
    /// Their id.
    pub shopper_id: String,
    /// An HTTP client holding their session cookie.
    pub client: reqwest::Client,
}

/// Creates a shopper holding `balance_cents` EUR through the admin API and signs them in.
pub async fn open_shopper(
    url: &str,
    admin_token: &str,
    balance_cents: i64,
) -> anyhow::Result<Shopper> {
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .timeout(std::time::Duration::from_secs(10))
        .build()?;
    let email = format!("run-{}@shop.test", Uuid::new_v4().simple());
    let password = Uuid::new_v4().simple().to_string();
    let created: Value = client
        .post(format!("{url}/api/admin/shoppers"))
        .bearer_auth(admin_token)
        .json(&json!({"email": email, "password": password, "balance_cents": balance_cents, "currency": "EUR"}))
        .send()
        .await?
        .error_for_status()
        .context("cannot create the run's shopper (is ADMIN_TOKEN right?)")?
        .json()
        .await?;
    let shopper_id = created["shopper_id"]
        .as_str()
        .context("no shopper_id")?
        .to_owned();
    client
        .post(format!("{url}/api/session"))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await?
        .error_for_status()
        .context("cannot sign the run's shopper in")?;
    Ok(Shopper { shopper_id, client })
}

/// Places `count` EUR orders of `amount_cents` for `shopper` through the merchant API.
pub async fn place_orders(
    url: &str,
    merchant_key: &str,
    shopper: &Shopper,
    count: usize,
    amount_cents: i64,
) -> anyhow::Result<Vec<String>> {
    let mut orders = Vec::with_capacity(count);
    for _ in 0..count {
        let order: Value = shopper
            .client
            .post(format!("{url}/api/merchant/orders"))
            .bearer_auth(merchant_key)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&json!({
                "shopper_id": shopper.shopper_id,
                "amount_cents": amount_cents,
                "currency": "EUR",
                "description": "storm order",
            }))
            .send()
            .await?
            .error_for_status()
            .context("cannot place an order (is MERCHANT_API_KEY right?)")?
            .json()
            .await?;
        orders.push(
            order["order_no"]
                .as_str()
                .context("no order_no")?
                .to_owned(),
        );
    }
    Ok(orders)
}

/// An order the shopper paid, with the names a result must carry to be about its payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaidOrder {
    /// The order.
    pub order_no: String,
    /// Our id for the payment (`payment_id` of the pay's 202): the platform's merchant reference.
    pub payment_id: Uuid,
    /// The platform's id for the payment, recorded when it accepted the hand-over.
    pub platform_payment_id: String,
}

/// Pays at most this many orders at once.
const PAYS_AT_ONCE: usize = 8;

/// Presses "Pay now" on `order_no` as `shopper`: takes a request token, pays
/// with it, and returns our payment id from the 202. A 429 is waited out
/// (its `Retry-After`) and asked again.
pub async fn pay(url: &str, shopper: &Shopper, order_no: &str) -> anyhow::Result<Uuid> {
    let token: Value = send_until_not_limited(|| {
        shopper
            .client
            .post(format!("{url}/api/orders/{order_no}/request-token"))
    })
    .await?
    .error_for_status()
    .with_context(|| format!("cannot get a request token for {order_no}"))?
    .json()
    .await?;
    let request_token = token["request_token"]
        .as_str()
        .context("no request_token")?
        .to_owned();
    let response = send_until_not_limited(|| {
        shopper
            .client
            .post(format!("{url}/api/orders/{order_no}/pay"))
            .json(&json!({ "request_token": request_token }))
    })
    .await?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or_default();
    anyhow::ensure!(
        status == reqwest::StatusCode::ACCEPTED,
        "pay for {order_no} answered {status}: {body}"
    );
    let payment_id = body["payment_id"].as_str().context("no payment_id")?;
    Ok(Uuid::parse_str(payment_id)?)
}

/// Sends the request `build` makes until it is not answered 429 (ten tries).
async fn send_until_not_limited(
    build: impl Fn() -> reqwest::RequestBuilder,
) -> anyhow::Result<reqwest::Response> {
    for _ in 0..10 {
        let response = build().send().await?;
        if response.status() != reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Ok(response);
        }
        let wait = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        tokio::time::sleep(Duration::from_secs(wait)).await;
    }
    anyhow::bail!("still rate limited after ten tries (the backend's per-shopper limits)")
}

/// Pays every order as `shopper` (a few at once), then waits, reading the
/// backend's database `db`, until the platform has accepted each payment and
/// its id is recorded, for at most `deadline`. In the order of `order_nos`.
pub async fn pay_orders(
    url: &str,
    shopper: &Shopper,
    db: &PgPool,
    order_nos: &[String],
    deadline: Duration,
) -> anyhow::Result<Vec<PaidOrder>> {
    let payment_ids: Vec<Uuid> = futures::stream::iter(order_nos)
        .map(|order_no| pay(url, shopper, order_no))
        .buffered(PAYS_AT_ONCE)
        .try_collect()
        .await?;
    let platform_ids = wait_handed_over(db, &payment_ids, deadline).await?;
    Ok(order_nos
        .iter()
        .zip(payment_ids)
        .zip(platform_ids)
        .map(|((order_no, payment_id), platform_payment_id)| PaidOrder {
            order_no: order_no.clone(),
            payment_id,
            platform_payment_id,
        })
        .collect())
}

/// Polls `payment_attempts` until every payment has its `platform_payment_id`;
/// returns them in the order of `payment_ids`.
async fn wait_handed_over(
    db: &PgPool,
    payment_ids: &[Uuid],
    deadline: Duration,
) -> anyhow::Result<Vec<String>> {
    let started = tokio::time::Instant::now();
    loop {
        let rows: Vec<(Uuid, Option<String>)> = sqlx::query_as(
            "SELECT payment_id, platform_payment_id FROM payment_attempts WHERE payment_id = ANY($1)",
        )
        .bind(payment_ids)
        .fetch_all(db)
        .await?;
        let recorded: std::collections::HashMap<Uuid, String> = rows
            .into_iter()
            .filter_map(|(id, platform_id)| Some((id, platform_id?)))
            .collect();
        if let Some(ids) = payment_ids
            .iter()
            .map(|id| recorded.get(id).cloned())
            .collect::<Option<Vec<_>>>()
        {
            return Ok(ids);
        }
        anyhow::ensure!(
            started.elapsed() < deadline,
            "{} of {} payments were not accepted by the platform within {deadline:?}",
            payment_ids.len() - recorded.len(),
            payment_ids.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
