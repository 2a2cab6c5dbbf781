//! The shop's side of a run: a shopper with money, signed in, and orders for
//! them placed through the merchant API, as a merchant's own shop would.

use anyhow::Context;
use serde_json::{Value, json};
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
