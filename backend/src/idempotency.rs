//! Idempotency keys for placing orders (draft-ietf-httpapi-idempotency-key-header,
//! with Stripe's rules). The client makes a key (a UUID) per "Buy" press and
//! sends it as `Idempotency-Key`; keys are per caller (a shopper, or the merchant API).
//!
//! - first use: the order is created and its answer stored with the key in the
//!   same transaction, so a key never exists without its order or the other way round;
//! - the same key and the same body again: the stored answer, with `Idempotent-Replayed: true`;
//! - the same key with another body: `422 IDEMPOTENCY_KEY_REUSED`;
//! - while the first request still runs: `409 IDEMPOTENCY_KEY_IN_USE` (a
//!   transaction-scoped advisory lock on the key, taken without waiting; it
//!   goes away with the transaction, so a crash never leaves a key stuck);
//! - no key: `400`. Failed requests store nothing: a retry with the same key is a new try.
//!
//! Keys are kept at least 24 hours (today: forever).

use crate::db::idempotency as store;
use crate::error::ApiError;
use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::{PgPool, Postgres, Transaction};

/// Header marking an answer as the replay of an earlier one (of an order
/// placed, or of a pay whose token was used before).
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// Longest key accepted.
pub const MAX_KEY_CHARS: usize = 255;

/// The request's `Idempotency-Key`: 1 to 255 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Checks a header value.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        if text.is_empty()
            || text.len() > MAX_KEY_CHARS
            || !text.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(ApiError::BadRequest(format!(
                "Idempotency-Key must be 1 to {MAX_KEY_CHARS} visible ASCII characters (a UUID is best)"
            )));
        }
        Ok(Self(text.to_owned()))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let value = parts.headers.get(HEADER).ok_or_else(|| {
            ApiError::BadRequest(
                "the Idempotency-Key header is required: send a new UUID for each order you place \
                 and the same one when you retry it"
                    .into(),
            )
        })?;
        Self::parse(value.to_str().unwrap_or("\u{0}"))
    }
}

/// What placing an order with a key found.
pub enum Begun {
    /// The key's earlier answer, to send as it is.
    Replay(Response),
    /// A new request: do the work in this transaction, then [`finish`].
    Fresh(Transaction<'static, Postgres>),
}

/// SHA-256 of the request as the server understood it (the parsed body, re-serialised).
pub fn fingerprint(body: &impl Serialize) -> Result<String, ApiError> {
    let bytes = serde_json::to_vec(body).map_err(ApiError::internal)?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Starts a request with `key` on behalf of `scope` (module doc).
pub async fn begin(
    db: &PgPool,
    scope: &str,
    key: &IdempotencyKey,
    fingerprint: &str,
) -> Result<Begun, ApiError> {
    let mut tx = db.begin().await?;
    if !store::try_lock(&mut tx, scope, key.as_str()).await? {
        return Err(ApiError::IdempotencyKeyInUse);
    }
    match store::find(&mut tx, scope, key.as_str()).await? {
        None => Ok(Begun::Fresh(tx)),
        Some(stored) if stored.request_fingerprint == fingerprint => {
            tracing::info!(
                scope,
                "replaying the answer of an earlier request with this Idempotency-Key"
            );
            Ok(Begun::Replay(replay(
                stored.response_status,
                stored.response_body,
            )))
        }
        Some(_) => Err(ApiError::IdempotencyKeyReused),
    }
}

/// Stores `body` as the key's answer and commits the work done in `tx`.
pub async fn finish(
    mut tx: Transaction<'static, Postgres>,
    scope: &str,
    key: &IdempotencyKey,
    fingerprint: &str,
    status: StatusCode,
    body: &impl Serialize,
) -> Result<Response, ApiError> {
    let json = serde_json::to_value(body).map_err(ApiError::internal)?;
    let code = i16::try_from(status.as_u16()).map_err(ApiError::internal)?;
    store::insert(&mut tx, scope, key.as_str(), fingerprint, code, &json).await?;
    tx.commit().await?;
    Ok((status, Json(json)).into_response())
}

fn replay(status: i16, body: serde_json::Value) -> Response {
    let status = u16::try_from(status)
        .ok()
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or(StatusCode::OK);
    let mut response = (status, Json(body)).into_response();
    response
        .headers_mut()
        .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_of_sensible_length() {
        assert!(IdempotencyKey::parse("0b9f2c52-6f0e-4b8e-9a4c-8d2b1f0e6a11").is_ok());
        for bad in [
            "",
            "has space",
            "tab\t",
            "é",
            &"k".repeat(MAX_KEY_CHARS + 1),
        ] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_follows_the_body() {
        let a = fingerprint(&serde_json::json!({"sku": "a", "quantity": 1})).expect("fp");
        let b = fingerprint(&serde_json::json!({"sku": "a", "quantity": 2})).expect("fp");
        assert_ne!(a, b);
        assert_eq!(
            a,
            fingerprint(&serde_json::json!({"sku": "a", "quantity": 1})).expect("fp")
        );
    }
}
