//! Bearer keys: the operator's `ADMIN_TOKEN` and the merchant's
//! `MERCHANT_API_KEY`. Compared in constant time; failures are counted per
//! client IP, and an IP over the limit gets `429` before its key is looked at.

use crate::error::ApiError;
use crate::limits::FailureLimiter;
use axum::http::{HeaderMap, header};
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
