//! `/api/admin/merchants`: the operator makes merchant accounts, rotates and
//! revokes their keys, and lists them (prefixes, never keys). Behind the
//! admin token ([`crate::http::auth::bearer::require`]). A key is shown once,
//! in the answer that made it; the database keeps its keyed hash
//! ([`crate::merchants`]).

use crate::db::merchants as store;
use crate::error::ApiError;
use crate::http::extract::{AppJson, AppPath, plain_text};
use crate::http::openapi::BearerErrors;
use crate::state::AppState;
use api_types::merchant::{CreateMerchant, KeyCreated, Merchant, MerchantCreated, RotateKey};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use checkout_rules::return_url::{self, MAX_ORIGINS};
use secrecy::ExposeSecret;
use time::OffsetDateTime;
use uuid::Uuid;

/// Longest merchant name.
pub const MAX_NAME_CHARS: usize = 100;
/// Longest overlap of a rotation: 7 days.
pub const MAX_OVERLAP_SECS: u32 = 604_800;

/// `POST /api/admin/merchants` -> 201 the merchant and its first key, shown once.
#[utoipa::path(post, path = "/admin/merchants", tag = "admin", security(("admin_token" = [])), request_body = CreateMerchant,
    responses((status = 201, description = "The merchant and its API key (shown this once)", body = MerchantCreated),
        BearerErrors))]
pub async fn create(
    State(state): State<AppState>,
    AppJson(body): AppJson<CreateMerchant>,
) -> Result<(StatusCode, Json<MerchantCreated>), ApiError> {
    let name = plain_text(&body.name, "name", MAX_NAME_CHARS)?;
    if body.return_origins.len() > MAX_ORIGINS {
        return Err(ApiError::BadRequest(format!(
            "at most {MAX_ORIGINS} return_origins"
        )));
    }
    let mut origins: Vec<String> = Vec::with_capacity(body.return_origins.len());
    for text in &body.return_origins {
        let origin = return_url::origin(text)
            .map_err(|why| ApiError::BadRequest(format!("return_origins: {why}")))?;
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    let merchant_id = Uuid::new_v4();
    let key = state.merchant_keys.generate();
    store::create(
        &state.db,
        merchant_id,
        name,
        &origins,
        &key.prefix,
        &key.hash,
    )
    .await?;
    tracing::info!(%merchant_id, merchant = name, key_prefix = %key.prefix, return_origins = ?origins, "merchant created");
    Ok((
        StatusCode::CREATED,
        Json(MerchantCreated {
            merchant_id,
            name: name.to_owned(),
            api_key: key.key.expose_secret().to_owned(),
            key_prefix: key.prefix,
        }),
    ))
}

/// `GET /api/admin/merchants` -> every merchant with its keys' prefixes, dates
/// and last use, oldest first. Never a key.
#[utoipa::path(get, path = "/admin/merchants", tag = "admin", security(("admin_token" = [])),
    responses((status = 200, description = "Every merchant, oldest first", body = Vec<Merchant>), BearerErrors))]
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<Merchant>>, ApiError> {
    Ok(Json(store::list(&state.db).await?))
}

/// The merchant id of a path, or `404 NOT_FOUND` (no merchant has another form of id).
fn merchant_id(text: &str) -> Result<Uuid, ApiError> {
    text.parse().map_err(|_| ApiError::NotFound)
}

/// `POST /api/admin/merchants/{merchant_id}/keys` -> 201 a new key, shown
/// once; the merchant's keys in use keep working `expire_old_after_secs` more.
#[utoipa::path(post, path = "/admin/merchants/{merchant_id}/keys", tag = "admin", security(("admin_token" = [])),
    request_body = RotateKey,
    params(("merchant_id" = String, Path, description = "The merchant")),
    responses((status = 201, description = "The new key (shown this once) and when the old ones stop", body = KeyCreated),
        (status = 404, description = "NOT_FOUND: no such merchant", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn rotate_key(
    State(state): State<AppState>,
    AppPath(merchant): AppPath<String>,
    AppJson(body): AppJson<RotateKey>,
) -> Result<(StatusCode, Json<KeyCreated>), ApiError> {
    let merchant_id = merchant_id(&merchant)?;
    if body.expire_old_after_secs > MAX_OVERLAP_SECS {
        return Err(ApiError::BadRequest(format!(
            "expire_old_after_secs must be 0 to {MAX_OVERLAP_SECS} (7 days)"
        )));
    }
    let old_keys_expire_at =
        OffsetDateTime::now_utc() + time::Duration::seconds(i64::from(body.expire_old_after_secs));
    let key = state.merchant_keys.generate();
    if !store::rotate(
        &state.db,
        merchant_id,
        &key.prefix,
        &key.hash,
        old_keys_expire_at,
    )
    .await?
    {
        return Err(ApiError::NotFound);
    }
    tracing::info!(%merchant_id, key_prefix = %key.prefix, %old_keys_expire_at, "merchant key rotated");
    Ok((
        StatusCode::CREATED,
        Json(KeyCreated {
            merchant_id,
            api_key: key.key.expose_secret().to_owned(),
            key_prefix: key.prefix,
            old_keys_expire_at,
        }),
    ))
}

/// `DELETE /api/admin/merchants/{merchant_id}/keys/{prefix}` -> 204: the key
/// is refused from now on, on every instance.
#[utoipa::path(delete, path = "/admin/merchants/{merchant_id}/keys/{prefix}", tag = "admin", security(("admin_token" = [])),
    params(("merchant_id" = String, Path, description = "The merchant"),
        ("prefix" = String, Path, description = "The key's visible prefix, e.g. mk_1a2b3c4d")),
    responses((status = 204, description = "Revoked (revoking a revoked key again changes nothing)"),
        (status = 404, description = "NOT_FOUND: no such key of that merchant", body = api_types::ErrorBody),
        BearerErrors))]
pub async fn revoke_key(
    State(state): State<AppState>,
    AppPath((merchant, prefix)): AppPath<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let merchant_id = merchant_id(&merchant)?;
    if !store::revoke(&state.db, merchant_id, &prefix).await? {
        return Err(ApiError::NotFound);
    }
    tracing::info!(%merchant_id, key_prefix = %prefix, "merchant key revoked");
    Ok(StatusCode::NO_CONTENT)
}
