//! Callback authentication: Standard Webhooks signatures over the raw body.
//!
//! The `standardwebhooks` crate checks the HMAC over `id.timestamp.body` and a
//! five-minute tolerance in both directions. We verify before parsing anything,
//! so an unsigned request cannot make us read the database, let alone write.

use axum::http::HeaderMap;
use base64::Engine;
use standardwebhooks::{Webhook, WebhookError};
use std::sync::Arc;

/// The header that carries the callback id (our idempotency key for callbacks).
pub const HEADER_ID: &str = standardwebhooks::HEADER_WEBHOOK_ID;
/// The header with the Unix timestamp the platform signed.
pub const HEADER_TIMESTAMP: &str = standardwebhooks::HEADER_WEBHOOK_TIMESTAMP;
/// The header with the `v1,<base64>` signatures.
pub const HEADER_SIGNATURE: &str = standardwebhooks::HEADER_WEBHOOK_SIGNATURE;

/// A verifier and signer for one shared secret.
#[derive(Clone)]
pub struct WebhookKey {
    inner: Arc<Webhook>,
    secret: Arc<str>,
}

impl std::fmt::Debug for WebhookKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookKey(..)")
    }
}

impl WebhookKey {
    /// Parses a `whsec_<base64>` secret.
    pub fn new(secret: &str) -> anyhow::Result<Self> {
        let inner = Webhook::new(secret)
            .map_err(|err| anyhow::anyhow!("WEBHOOK_SECRET is not whsec_<base64>: {err}"))?;
        Ok(Self {
            inner: Arc::new(inner),
            secret: secret.into(),
        })
    }

    /// A fresh random secret, for development sessions without `WEBHOOK_SECRET`.
    pub fn generate() -> Self {
        let bytes: [u8; 32] = rand::random();
        let secret = format!(
            "whsec_{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        );
        // A freshly encoded secret always parses.
        Self::new(&secret).unwrap_or_else(|_| unreachable!("generated secret parses"))
    }

    /// The secret text, so the in-process sandbox can sign with it.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Checks the signature and timestamp of a callback; returns the callback id.
    pub fn verify<'h>(&self, body: &[u8], headers: &'h HeaderMap) -> Result<&'h str, String> {
        self.inner.verify(body, headers).map_err(describe)?;
        headers
            .get(HEADER_ID)
            .and_then(|value| value.to_str().ok())
            .filter(|id| !id.is_empty() && id.len() <= 255)
            .ok_or_else(|| "webhook-id must be 1 to 255 visible characters".to_owned())
    }

    /// Signs a payload: returns the `webhook-signature` header value.
    pub fn sign(&self, callback_id: &str, timestamp: i64, body: &[u8]) -> anyhow::Result<String> {
        self.inner
            .sign(callback_id, timestamp, body)
            .map_err(|err| anyhow::anyhow!("cannot sign callback: {err}"))
    }
}

fn describe(err: WebhookError) -> String {
    match err {
        WebhookError::MissingHeader(name) => format!("missing webhook-{name} header"),
        WebhookError::InvalidHeader(name) => format!("webhook-{name} header is not valid text"),
        WebhookError::InvalidTimestamp => "webhook-timestamp is not a Unix timestamp".into(),
        WebhookError::TimestampTooOldError => "webhook-timestamp is more than 5 minutes old".into(),
        WebhookError::FutureTimestampError => {
            "webhook-timestamp is more than 5 minutes in the future".into()
        }
        WebhookError::InvalidPayload => "body is not UTF-8".into(),
        WebhookError::InvalidSignature | WebhookError::InvalidSecret(_) => {
            "signature does not match".into()
        }
    }
}
