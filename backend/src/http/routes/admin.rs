//! `/api/admin/*`: create shoppers, price products, read accounts with their ledger, callback
//! histories, anomalies and daily reconciliations. Bearer-token protected by [`crate::http::auth::bearer::require`],
//! which runs before any handler, so nobody learns anything about a body's
//! validation (or a path's) without the token.

use crate::db::{self, accounts, anomalies, callbacks, deliveries, ledger, products, shoppers};
use crate::error::ApiError;
use crate::http::auth::passwords;
use crate::http::extract::{AppJson, AppPath};
use crate::http::openapi::BearerErrors;
use crate::state::AppState;
use api_types::api::{
    AccountDetails, Anomaly, CallbackDelivery, CallbackHistory, CreateShopper, Product,
    ProductPrice, Reconciliation, ShopperCreated,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use secrecy::SecretString;
use uuid::Uuid;

/// `POST /api/admin/shoppers` -> 201 a shopper with one account.
#[utoipa::path(post, path = "/admin/shoppers", tag = "admin", security(("admin_token" = [])), request_body = CreateShopper,
    responses((status = 201, description = "The shopper and their account", body = ShopperCreated),
        (status = 409, description = "EMAIL_TAKEN", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn create_shopper(
    State(state): State<AppState>,
    AppJson(body): AppJson<CreateShopper>,
) -> Result<(StatusCode, Json<ShopperCreated>), ApiError> {
    let email = body.email.trim().to_owned();
    let at = email.find('@');
    if email.len() > shoppers::MAX_EMAIL_LEN
        || email.chars().any(|c| c.is_whitespace() || c.is_control())
        || !at
            .is_some_and(|at| at > 0 && at + 1 < email.len() && email[at + 1..].find('@').is_none())
    {
        return Err(ApiError::BadRequest(
            "email must look like name@example.com".into(),
        ));
    }
    passwords::check_new(&body.password, &email)?;
    if body.balance_cents < 0 {
        return Err(ApiError::BadRequest(
            "balance_cents must not be negative".into(),
        ));
    }
    let hash = passwords::hash(SecretString::from(body.password)).await?;
    let mut tx = state.db.begin().await?;
    let new = shoppers::NewShopper {
        email: &email,
        password_hash: &hash,
        demo: false,
        balance_cents: body.balance_cents,
        currency: body.currency,
    };
    let (shopper_id, account_id) =
        shoppers::insert_with_account(&mut tx, new)
            .await
            .map_err(|err| {
                if db::is_unique_violation(&err, shoppers::EMAIL_UNIQUE) {
                    ApiError::EmailTaken
                } else {
                    err.into()
                }
            })?;
    tx.commit().await?;
    tracing::info!(%shopper_id, %account_id, balance_cents = body.balance_cents, currency = %body.currency, "shopper created");
    Ok((
        StatusCode::CREATED,
        Json(ShopperCreated {
            shopper_id,
            account_id,
        }),
    ))
}

/// `PUT /api/admin/products/{sku}` -> 200 the product, added or repriced.
#[utoipa::path(put, path = "/admin/products/{sku}", tag = "admin", security(("admin_token" = [])), request_body = ProductPrice,
    params(("sku" = String, Path, description = "The product's SKU")),
    responses((status = 200, description = "The product, added or repriced", body = Product), BearerErrors))]
pub async fn put_product(
    State(state): State<AppState>,
    AppPath(sku): AppPath<String>,
    AppJson(body): AppJson<ProductPrice>,
) -> Result<Json<Product>, ApiError> {
    if !crate::http::routes::products::is_valid_sku(&sku) {
        return Err(ApiError::BadRequest(
            "sku must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
                .into(),
        ));
    }
    let name = body.name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(
            "name must be 1 to 200 characters, none of them control characters".into(),
        ));
    }
    if body.price_cents <= 0 {
        return Err(ApiError::BadRequest("price_cents must be positive".into()));
    }
    let product = Product {
        sku,
        name: name.to_owned(),
        price_cents: body.price_cents,
        currency: body.currency,
    };
    products::upsert(&state.db, &product, false).await?;
    tracing::info!(sku = %product.sku, price_cents = product.price_cents, currency = %product.currency, "product priced");
    Ok(Json(product))
}

/// `GET /api/admin/accounts/{account_id}` -> the account with its ledger rows.
#[utoipa::path(get, path = "/admin/accounts/{account_id}", tag = "admin", security(("admin_token" = [])),
    params(("account_id" = String, Path, description = "The account's id")),
    responses((status = 200, description = "The account with its ledger", body = AccountDetails), BearerErrors))]
pub async fn get_account(
    State(state): State<AppState>,
    AppPath(account_id): AppPath<String>,
) -> Result<Json<AccountDetails>, ApiError> {
    let account_id: Uuid = account_id.parse().map_err(|_| ApiError::AccountNotFound)?;
    let account = accounts::find(&state.db, account_id)
        .await?
        .ok_or(ApiError::AccountNotFound)?;
    let ledger = ledger::list_for_account(&state.db, account_id).await?;
    Ok(Json(AccountDetails {
        account_id,
        balance_cents: account.balance_cents,
        opening_balance_cents: account.opening_balance_cents,
        held_cents: account.held_cents,
        currency: account.currency,
        ledger,
    }))
}

/// `GET /api/admin/callbacks/{callback_id}` -> what happened to that callback:
/// how it was applied, every delivery and what we answered, and its anomalies.
#[utoipa::path(get, path = "/admin/callbacks/{callback_id}", tag = "admin", security(("admin_token" = [])),
    params(("callback_id" = String, Path, description = "The platform's notification id")),
    responses((status = 200, description = "What happened to the callback", body = CallbackHistory), BearerErrors))]
pub async fn callback_history(
    State(state): State<AppState>,
    AppPath(callback_id): AppPath<String>,
) -> Result<Json<CallbackHistory>, ApiError> {
    // The callback paths refuse an id holding a control character (U+0000
    // above all, which PostgreSQL text cannot hold), so such an id names no
    // callback; it reaches no query ([`crate::http::routes::notify::fits_postgres_text`]).
    if !crate::http::routes::notify::fits_postgres_text(&callback_id) {
        return Err(ApiError::NotFound);
    }
    let processed = callbacks::find_processed(&state.db, &callback_id).await?;
    let deliveries = deliveries::list(&state.db, &callback_id)
        .await?
        .into_iter()
        .map(|row| CallbackDelivery {
            outcome: row.outcome,
            http_status: u16::try_from(row.http_status).unwrap_or_default(),
            received_at: row.received_at,
        })
        .collect::<Vec<_>>();
    let anomalies = anomalies::list(&state.db, Some(&callback_id), 100).await?;
    if processed.is_none() && deliveries.is_empty() {
        return Err(ApiError::NotFound);
    }
    Ok(Json(CallbackHistory {
        callback_id,
        processed,
        deliveries,
        anomalies,
    }))
}

/// `GET /api/admin/anomalies` -> the newest 100 anomalies, for review.
#[utoipa::path(get, path = "/admin/anomalies", tag = "admin", security(("admin_token" = [])),
    responses((status = 200, description = "The newest things a person must review", body = Vec<Anomaly>), BearerErrors))]
pub async fn list_anomalies(State(state): State<AppState>) -> Result<Json<Vec<Anomaly>>, ApiError> {
    Ok(Json(anomalies::list(&state.db, None, 100).await?))
}

/// `GET /api/admin/reconciliations/{date}` -> how that day's bill compared with
/// the ledger: the count per class and every row, mismatches first
/// ([`crate::reconcile`]). A day not reconciled yet answers with
/// `reconciled_at` null and no rows.
#[utoipa::path(get, path = "/admin/reconciliations/{date}", tag = "admin", security(("admin_token" = [])),
    params(("date" = String, Path, description = "The bill's day, YYYY-MM-DD (UTC)")),
    responses((status = 200, description = "The day's reconciliation", body = Reconciliation),
        (status = 400, description = "BAD_REQUEST: not a date written YYYY-MM-DD", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn reconciliation(
    State(state): State<AppState>,
    AppPath(date): AppPath<String>,
) -> Result<Json<Reconciliation>, ApiError> {
    let date = checkout_rules::reconcile::parse_date(&date).map_err(ApiError::BadRequest)?;
    Ok(Json(db::reconciliation::view(&state.db, date).await?))
}
