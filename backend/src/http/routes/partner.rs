//! The demo's second merchant, "Partner Shop": a shop whose catalogue lives
//! elsewhere, played by three small pages this backend serves only in demo
//! mode where no money moves. It does what a real merchant's server does,
//! through the merchant API and its own key, never around it:
//!
//! - `GET /partner`: its shop window, one teapot, for a demo shopper;
//! - `POST /partner/buy`: places the order (`POST /api/merchant/orders` with
//!   its key, a `return_url` back to it) and sends the shopper to `pay_url`;
//! - `GET /partner/thanks?order_no=...&status=...`: where the payment page
//!   returns the shopper; it reads the order from the API before saying
//!   anything, because the return itself proves nothing.
//!
//! Its key is made at start (`seed`) and kept in memory; the merchant account
//! (`Partner Shop (demo)`) returns to `PUBLIC_ORIGIN`.

use crate::error::ApiError;
use crate::merchants::KeyHasher;
use crate::state::{AppState, DemoPartner};
use api_types::api::{CreateMerchantOrder, Order};
use axum::Form;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use checkout_rules::order_no::OrderNo;
use checkout_rules::return_url;
use secrecy::ExposeSecret;
use serde::Deserialize;
use uuid::Uuid;

/// The demo partner's merchant id.
pub const PARTNER_MERCHANT_ID: Uuid = Uuid::from_u128(2);
/// Its name, as the payment page's "Return to ..." shows it.
pub const PARTNER_NAME: &str = "Partner Shop (demo)";
/// What it sells, in minor units of the demo currency.
const TEAPOT_CENTS: i64 = 2_300;

/// Makes (or finds) the partner's merchant account and a key for this
/// process (the keys of earlier starts end a day later, so other instances
/// keep theirs). `None` when `PUBLIC_ORIGIN` cannot be a return origin.
pub async fn seed(
    db: &sqlx::PgPool,
    hasher: &KeyHasher,
    public_origin: &str,
    api: String,
) -> anyhow::Result<Option<DemoPartner>> {
    let Ok(origin) = return_url::origin(public_origin) else {
        tracing::info!(%public_origin, "the demo partner shop is off: PUBLIC_ORIGIN is not a return origin");
        return Ok(None);
    };
    crate::db::merchants::ensure(db, PARTNER_MERCHANT_ID, PARTNER_NAME, &[origin]).await?;
    let key = hasher.generate();
    let old_keys_end = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    crate::db::merchants::rotate(
        db,
        PARTNER_MERCHANT_ID,
        &key.prefix,
        &key.hash,
        old_keys_end,
    )
    .await?;
    tracing::info!(key_prefix = %key.prefix, "demo partner shop at {public_origin}/partner");
    Ok(Some(DemoPartner {
        key: key.key,
        api,
        public_origin: public_origin.to_owned(),
        http: reqwest::Client::new(),
    }))
}

/// The partner's pages, for the router (each answers 404 without a demo partner).
pub fn routes() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/partner", get(window))
        .route("/partner/buy", post(buy))
        .route("/partner/thanks", get(thanks))
}

fn partner(state: &AppState) -> Result<&DemoPartner, ApiError> {
    state.demo_partner.as_deref().ok_or(ApiError::NotFound)
}

/// A page of the partner's site: its own look, no script.
fn page(body: &str) -> Response {
    (
        [(header::CACHE_CONTROL, "no-store")],
        Html(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{PARTNER_NAME}</title></head><body>\
             <header><h1 id=\"partner\">{PARTNER_NAME}</h1>\
             <p>A second merchant of this demo: its own key, its own orders, its own way back.</p></header>\
             <main>{body}</main></body></html>"
        )),
    )
        .into_response()
}

/// `GET /partner`: the shop window.
async fn window(State(state): State<AppState>) -> Result<Response, ApiError> {
    partner(&state)?;
    let choices: String = state
        .demo_shoppers
        .iter()
        .map(|shopper| {
            format!(
                "<label><input type=\"radio\" name=\"email\" value=\"{email}\" required> {email}</label><br>",
                email = shopper.email
            )
        })
        .collect();
    Ok(page(&format!(
        "<h2>Cast-iron teapot, 23.00</h2>\
         <form method=\"post\" action=\"/partner/buy\">\
         <p>Who is buying (one of the demo shoppers)?</p>{choices}\
         <p><button id=\"partner-buy\" type=\"submit\">Buy and pay at the checkout</button></p></form>"
    )))
}

/// The form of `POST /partner/buy`.
#[derive(Debug, Deserialize)]
struct Buy {
    email: String,
}

/// `POST /partner/buy`: places the order through the merchant API, then
/// sends the shopper to pay it.
async fn buy(State(state): State<AppState>, Form(form): Form<Buy>) -> Result<Response, ApiError> {
    let partner = partner(&state)?;
    if !state.demo_shoppers.iter().any(|s| s.email == form.email) {
        return Err(ApiError::BadRequest(
            "choose one of the demo shoppers".into(),
        ));
    }
    let shopper = crate::db::shoppers::find_by_email(&state.db, &form.email)
        .await?
        .ok_or(ApiError::ShopperNotFound)?;
    let currency = crate::http::routes::demo::DEMO_CURRENCY;
    let body = CreateMerchantOrder {
        shopper_id: shopper.shopper_id,
        amount_cents: TEAPOT_CENTS,
        currency,
        description: "Partner Shop: a cast-iron teapot".into(),
        merchant_reference: Some(format!("partner-{}", Uuid::new_v4().simple())),
        return_url: Some(format!("{}/partner/thanks", partner.public_origin)),
        cancel_url: Some(format!("{}/partner", partner.public_origin)),
    };
    let answer = partner
        .http
        .post(format!("{}/api/merchant/orders", partner.api))
        .bearer_auth(partner.key.expose_secret())
        .header("idempotency-key", Uuid::new_v4().to_string())
        .json(&body)
        .send()
        .await
        .map_err(|err| ApiError::internal(anyhow::anyhow!("the partner's order: {err}")))?;
    if answer.status() != StatusCode::CREATED {
        let status = answer.status();
        let text = answer.text().await.unwrap_or_default();
        return Err(ApiError::internal(anyhow::anyhow!(
            "the merchant API refused the partner's order: {status} {text}"
        )));
    }
    let order: Order = answer
        .json()
        .await
        .map_err(|err| ApiError::internal(anyhow::anyhow!("the partner's order: {err}")))?;
    Ok(Redirect::to(&format!("/pay/{}", order.order_no)).into_response())
}

/// The query the payment page returns with.
#[derive(Debug, Deserialize)]
struct Returned {
    order_no: Option<String>,
}

/// `GET /partner/thanks`: reads the order from the merchant API; what the URL
/// says about it is not believed.
async fn thanks(
    State(state): State<AppState>,
    Query(returned): Query<Returned>,
) -> Result<Response, ApiError> {
    let partner = partner(&state)?;
    let Some(order_no) = returned.order_no.and_then(|no| OrderNo::parse(&no)) else {
        return Ok(page(
            "<p id=\"partner-result\">No order named: nothing to show.</p>",
        ));
    };
    let answer = partner
        .http
        .get(format!(
            "{}/api/merchant/orders/{}",
            partner.api,
            order_no.as_str()
        ))
        .bearer_auth(partner.key.expose_secret())
        .send()
        .await
        .map_err(|err| ApiError::internal(anyhow::anyhow!("reading the partner's order: {err}")))?;
    if answer.status() != StatusCode::OK {
        return Ok(page(
            "<p id=\"partner-result\">That is not one of our orders.</p>",
        ));
    }
    let order: Order = answer
        .json()
        .await
        .map_err(|err| ApiError::internal(anyhow::anyhow!("reading the partner's order: {err}")))?;
    let verdict = match order.status {
        api_types::OrderStatus::Paid => "paid: the teapot ships today",
        api_types::OrderStatus::Pending => "not paid yet",
        _ => "not paid: nothing ships",
    };
    Ok(page(&format!(
        "<p id=\"partner-result\" data-status=\"{status}\">Order {no} is {status} (read from the checkout's \
         merchant API, not from the address you came back with): {verdict}.</p>\
         <p><a href=\"/partner\">Back to the shop window</a></p>",
        status = order.status.as_str(),
        no = order_no.as_str(),
    )))
}
