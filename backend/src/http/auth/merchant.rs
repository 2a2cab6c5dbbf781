//! Merchants, by their own API keys: `Authorization: Bearer <key>` is hashed
//! (`crate::merchants::KeyHasher`) and looked up; a key revoked or past its
//! rotation's end is refused at once, on every instance (nothing is cached).
//! Failures count per client IP with the admin token's, and an IP over the
//! limit gets `429` before its key is looked at.

use crate::db::merchants::{self, Caller};
use crate::error::ApiError;
use crate::http::extract::ClientIp;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;

/// The merchant a request acts for, put there by [`require`].
#[derive(Debug, Clone)]
pub struct Merchant(pub Caller);

/// Middleware on the merchant routes (a route layer, so it runs before their
/// extractors): refuses the request with `401 UNAUTHORIZED` unless it carries
/// a valid key, and hands the merchant to the handler ([`Merchant`]).
pub async fn require(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    state.limits.auth_ip.check(&client)?;
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .filter(|key| !key.is_empty());
    let caller = match presented {
        Some(key) => merchants::authenticate(&state.db, &state.merchant_keys.hash(key)).await?,
        None => None,
    };
    let Some(caller) = caller else {
        tracing::warn!(%client, "merchant authentication failed");
        state.limits.auth_ip.record_failure(&client)?;
        return Err(ApiError::Unauthorized);
    };
    request.extensions_mut().insert(Merchant(caller));
    Ok(next.run(request).await)
}

impl FromRequestParts<AppState> for Merchant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &AppState) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Merchant>()
            .cloned()
            .ok_or(ApiError::Unauthorized)
    }
}
