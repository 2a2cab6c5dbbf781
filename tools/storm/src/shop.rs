//! The shop's side of a run: a shopper with money, signed in, orders for them
//! placed through the merchant API, as a merchant's own shop would, and the
//! shopper paying them, as the payment page does.
//!
//! A success callback charges only when it names the order's payment: our
//! `payment_id` (the merchant reference) and the platform's id for it. So a run
//! pays its orders first ([`pay_orders`]) and builds its callbacks from the
//! [`PaidOrder`]s it gets back.
//!
//! The merchant refunds a paid order through the merchant API too
//! ([`request_refund`]); a refund's result names the platform's id for the
//! refund, so a run waits until the backend has handed each refund over
//! ([`wait_refunds_handed_over`]) and builds its refund callbacks from the
//! [`HandedOverRefund`]s.

use anyhow::Context;
use api_types::Currency;
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

/// What pays for a pay that names no method, as the run's pays do: the first
/// of `GET /api/platform`'s `methods` (the wallet in the sandbox, the platform
/// under every real one, which then changes no wallet).
pub async fn default_method(url: &str) -> anyhow::Result<api_types::PaymentMethod> {
    let info: api_types::api::PlatformInfo = reqwest::get(format!("{url}/api/platform"))
        .await?
        .error_for_status()
        .context("cannot read GET /api/platform")?
        .json()
        .await?;
    info.methods
        .first()
        .copied()
        .context("GET /api/platform offers no payment method")
}

/// Creates a shopper holding `balance_cents` in `currency` through the admin API and signs them in.
pub async fn open_shopper(
    url: &str,
    admin_token: &str,
    balance_cents: i64,
    currency: Currency,
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
        .json(&json!({"email": email, "password": password, "balance_cents": balance_cents, "currency": currency}))
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

/// Places `count` orders of `amount_cents` in `currency` (the shopper's) for
/// `shopper` through the merchant API.
pub async fn place_orders(
    url: &str,
    merchant_key: &str,
    shopper: &Shopper,
    count: usize,
    amount_cents: i64,
    currency: Currency,
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
                "currency": currency,
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

/// Where a run learns the platform's id for each payment it made.
#[derive(Clone)]
pub enum PaymentIds {
    /// The backend records it (`payment_attempts.platform_payment_id`) when
    /// the platform accepts the hand-over: the checkout's own platform and the sandbox.
    Recorded,
    /// WeChat Pay and Alipay give it (`transaction_id`, `trade_no`) only with
    /// the result: once the backend has handed the payment over (its attempt
    /// no longer CREATED), it is read from platform-sim's book, where the order
    /// is the merchant reference `prefix` + order number.
    Book {
        /// The platform the backend hands over to.
        simulator: platform_sim::Simulator,
        /// The book's prefix of the platform's merchant numbers (`wechatpay:`, `alipay:`).
        prefix: &'static str,
    },
}

/// Pays every order as `shopper` (a few at once), then waits until the
/// platform has accepted each payment and its id is known ([`PaymentIds`];
/// recorded in the backend's database `db`, or in the platform's book), for
/// at most `deadline`. In the order of `order_nos`.
pub async fn pay_orders(
    url: &str,
    shopper: &Shopper,
    db: &PgPool,
    order_nos: &[String],
    deadline: Duration,
    ids: &PaymentIds,
) -> anyhow::Result<Vec<PaidOrder>> {
    let payment_ids: Vec<Uuid> = futures::stream::iter(order_nos)
        .map(|order_no| pay(url, shopper, order_no))
        .buffered(PAYS_AT_ONCE)
        .try_collect()
        .await?;
    let platform_ids = match ids {
        PaymentIds::Recorded => wait_handed_over(db, &payment_ids, deadline).await?,
        PaymentIds::Book { simulator, prefix } => {
            wait_submitted(db, &payment_ids, deadline).await?;
            let mut ids = Vec::with_capacity(order_nos.len());
            for order_no in order_nos {
                let payment = simulator
                    .query_by_reference(&format!("{prefix}{order_no}"))
                    .await
                    .map_err(|err| {
                        anyhow::anyhow!("the platform has no payment for {order_no}: {err}")
                    })?;
                ids.push(payment.payment_id);
            }
            ids
        }
    };
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

/// Polls `payment_attempts` until no payment of `payment_ids` is CREATED any
/// more: each was handed over (or already decided).
async fn wait_submitted(
    db: &PgPool,
    payment_ids: &[Uuid],
    deadline: Duration,
) -> anyhow::Result<()> {
    let started = tokio::time::Instant::now();
    loop {
        let submitted: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM payment_attempts WHERE payment_id = ANY($1) AND status <> 'CREATED'",
        )
        .bind(payment_ids)
        .fetch_one(db)
        .await?;
        if usize::try_from(submitted).unwrap_or(0) == payment_ids.len() {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < deadline,
            "{} of {} payments were not handed over to the platform within {deadline:?}",
            payment_ids.len() as i64 - submitted,
            payment_ids.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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

/// The merchant API's answer to a refund request.
#[derive(Debug, Clone)]
pub struct RefundAnswer {
    /// Its HTTP status (202 when the refund was taken).
    pub status: reqwest::StatusCode,
    /// Whether it carried `Idempotent-Replayed: true`: the stored answer to an earlier request.
    pub replayed: bool,
    /// The refund, when the status was 202.
    pub refund: Option<api_types::api::Refund>,
    /// The raw body, for a report when it was not.
    pub body: String,
}

/// Asks the merchant API for a refund of `amount_cents` of `order_no`,
/// idempotently by `idempotency_key`: the same key and body again is answered
/// with the stored answer, marked replayed.
pub async fn request_refund(
    http: &reqwest::Client,
    url: &str,
    merchant_key: &str,
    order_no: &str,
    idempotency_key: &str,
    amount_cents: i64,
    reason: &str,
) -> anyhow::Result<RefundAnswer> {
    let response = http
        .post(format!("{url}/api/merchant/orders/{order_no}/refunds"))
        .bearer_auth(merchant_key)
        .header("idempotency-key", idempotency_key)
        .json(&api_types::api::CreateRefund {
            amount_cents,
            reason: reason.to_owned(),
        })
        .send()
        .await
        .with_context(|| format!("cannot ask for a refund of {order_no}"))?;
    let status = response.status();
    let replayed = response
        .headers()
        .get(backend::idempotency::REPLAYED_HEADER)
        .is_some_and(|value| value.as_bytes() == b"true");
    let body = response.text().await?;
    let refund = if status == reqwest::StatusCode::ACCEPTED {
        Some(
            serde_json::from_str(&body)
                .with_context(|| format!("the refund of {order_no} answered {body}"))?,
        )
    } else {
        None
    };
    Ok(RefundAnswer {
        status,
        replayed,
        refund,
        body,
    })
}

/// A refund the platform has accepted, with the names its result carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandedOverRefund {
    /// Our refund number.
    pub refund_no: String,
    /// The order refunded.
    pub order_no: String,
    /// The amount given back, in minor units.
    pub amount_cents: i64,
    /// Its currency.
    pub currency: api_types::Currency,
    /// The platform's id of the refunded payment (the charge's).
    pub platform_payment_id: String,
    /// The platform's id for the refund, recorded when it accepted the hand-over.
    pub platform_refund_id: String,
}

/// A refund as `refunds` has it while a run waits for its hand-over.
#[derive(sqlx::FromRow)]
struct RefundRow {
    refund_no: String,
    order_no: String,
    amount_cents: i64,
    currency: String,
    status: String,
    platform_payment_id: String,
    platform_refund_id: Option<String>,
    failure_reason: Option<String>,
}

/// Polls `refunds` until the platform has accepted every refund of
/// `refund_nos` and its id is recorded, for at most `deadline`; returns them
/// in the order of `refund_nos`. Fails at once when one has FAILED instead
/// (the platform refused it), with the platform's answer.
pub async fn wait_refunds_handed_over(
    db: &PgPool,
    refund_nos: &[String],
    deadline: Duration,
) -> anyhow::Result<Vec<HandedOverRefund>> {
    let started = tokio::time::Instant::now();
    loop {
        let rows: Vec<RefundRow> = sqlx::query_as(
            "SELECT refund_no, order_no, amount_cents, currency, status, platform_payment_id,
                    platform_refund_id, failure_reason
             FROM refunds WHERE refund_no = ANY($1)",
        )
        .bind(refund_nos)
        .fetch_all(db)
        .await?;
        let mut handed_over = std::collections::HashMap::new();
        for row in rows {
            anyhow::ensure!(
                row.status != "FAILED",
                "refund {} of {} FAILED before any result was sent: {}",
                row.refund_no,
                row.order_no,
                row.failure_reason
                    .as_deref()
                    .unwrap_or("no reason recorded")
            );
            let Some(platform_refund_id) = row.platform_refund_id else {
                continue;
            };
            let currency = row
                .currency
                .parse()
                .map_err(|err| anyhow::anyhow!("refund {}: {err:?}", row.refund_no))?;
            handed_over.insert(
                row.refund_no.clone(),
                HandedOverRefund {
                    refund_no: row.refund_no,
                    order_no: row.order_no,
                    amount_cents: row.amount_cents,
                    currency,
                    platform_payment_id: row.platform_payment_id,
                    platform_refund_id,
                },
            );
        }
        if let Some(refunds) = refund_nos
            .iter()
            .map(|no| handed_over.get(no).cloned())
            .collect::<Option<Vec<_>>>()
        {
            return Ok(refunds);
        }
        anyhow::ensure!(
            started.elapsed() < deadline,
            "{} of {} refunds were not accepted by the platform within {deadline:?}",
            refund_nos.len() - handed_over.len(),
            refund_nos.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
