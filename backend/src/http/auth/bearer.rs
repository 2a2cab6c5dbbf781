//! The operator's bearer key, `ADMIN_TOKEN`. Compared in constant time;
//! failures are counted per client IP, and an IP over the limit gets `429`
//! before its key is looked at. (Merchants' keys: [`super::merchant`].)

use crate::error::ApiError;
use crate::http::extract::ClientIp;
use crate::http::limits::FailureLimiter;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;
use secrecy::{ExposeSecret, SecretString};
use std::net::IpAddr;
use subtle::ConstantTimeEq;

/// Checks `Authorization: Bearer <expected>`. No key configured: the API it
/// guards does not exist (`404`).
pub fn authorize(
    expected: Option<&SecretString>,
    headers: &HeaderMap,
    client: IpAddr,
    failures: &FailureLimiter<IpAddr>,
) -> Result<(), ApiError> {
    let Some(expected) = expected.map(ExposeSecret::expose_secret) else {
        return Err(ApiError::NotFound);
    };
    failures.check(&client)?;
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default();
    // Constant time, so the answer's timing does not reveal how much of a guess matched.
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        tracing::warn!(%client, "bearer authentication failed");
        failures.record_failure(&client)?;
        Err(ApiError::Unauthorized)
    }
}

/// Middleware on the admin routes (a route layer, so it runs before their
/// extractors): refuses the request, before its path or body is read, unless
/// it carries `ADMIN_TOKEN` ([`authorize`]).
pub async fn require(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    authorize(
        state.admin_token.as_deref(),
        request.headers(),
        client,
        &state.limits.auth_ip,
    )?;
    Ok(next.run(request).await)
}
