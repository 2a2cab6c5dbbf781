//! `/api/admin/*`: open accounts and read them with their ledger, callback
//! histories and anomalies. Bearer-token protected by [`require_admin_token`],
//! which runs before any handler, so nobody learns anything about a body's
//! validation (or a path's) without the token.

use crate::db::{accounts, anomalies, callbacks, deliveries, ledger};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::state::AppState;
use api_types::api::{
    Account, AccountDetails, Anomaly, CallbackDelivery, CallbackHistory, CreateAccount,
};
use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use secrecy::ExposeSecret;
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// Middleware on every admin route: refuses the request before its handler (and
/// so before its path or body is read) unless it carries `Authorization: Bearer
/// <ADMIN_TOKEN>`. With no admin token configured, the admin API does not exist (404).
pub async fn require_admin_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    authorize(&state, request.headers())?;
    Ok(next.run(request).await)
}

fn authorize(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = state
        .admin_token
        .as_deref()
        .map(ExposeSecret::expose_secret)
    else {
        return Err(ApiError::NotFound);
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default();
    // Constant time, so the answer's timing does not reveal how much of a guess matched.
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(ApiError::Unauthorized)
    }
}

/// `POST /api/admin/accounts` -> 201 the new account.
pub async fn create_account(
    State(state): State<AppState>,
    AppJson(body): AppJson<CreateAccount>,
) -> Result<(StatusCode, Json<Account>), ApiError> {
    if body.balance_cents < 0 {
        return Err(ApiError::BadRequest(
            "balance_cents must not be negative".into(),
        ));
    }
    let account_id = Uuid::new_v4();
    accounts::insert(&state.db, account_id, body.balance_cents, body.currency).await?;
    tracing::info!(%account_id, balance_cents = body.balance_cents, currency = %body.currency, "account opened");
    Ok((
        StatusCode::CREATED,
        Json(Account {
            account_id,
            balance_cents: body.balance_cents,
            currency: body.currency,
        }),
    ))
}

/// `GET /api/admin/accounts/{account_id}` -> the account with its ledger rows.
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
        currency: account.currency,
        ledger,
    }))
}

/// `GET /api/admin/callbacks/{callback_id}` -> what happened to that callback:
/// how it was applied, every delivery and what we answered, and its anomalies.
pub async fn callback_history(
    State(state): State<AppState>,
    AppPath(callback_id): AppPath<String>,
) -> Result<Json<CallbackHistory>, ApiError> {
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
pub async fn list_anomalies(State(state): State<AppState>) -> Result<Json<Vec<Anomaly>>, ApiError> {
    Ok(Json(anomalies::list(&state.db, None, 100).await?))
}
