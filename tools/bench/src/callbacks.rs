//! Signed `payment.succeeded` callbacks, as the payment platform sends them
//! (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`).

use crate::load::Prepared;
use crate::postgres::{CALLBACK_PREFIX, ORDER_PREFIX, PAYMENT_PREFIX, order_amount};
use api_types::api::{CallbackData, CallbackEvent, CallbackType, EventTimestamp};
use base64::Engine;
use hyper::header::HeaderValue;
use standardwebhooks::Webhook;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The callback route.
pub const CALLBACK_PATH: &str = "/api/payments/callback";

/// Signs callbacks with one shared secret.
pub struct Signer {
    secret: String,
    webhook: Webhook,
}

impl Signer {
    /// A fresh random `whsec_` secret.
    pub fn generate() -> anyhow::Result<Self> {
        let bytes: [u8; 32] = rand::random();
        let secret = format!(
            "whsec_{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        );
        let webhook = Webhook::new(&secret)
            .map_err(|err| anyhow::anyhow!("generated secret refused: {err}"))?;
        Ok(Self { secret, webhook })
    }

    /// The secret, for the backend's `WEBHOOK_SECRET`.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The signed callback for order `k`: callback id `cb_<k>`, the order's exact amount.
    pub fn callback(&self, k: i64) -> anyhow::Result<Prepared> {
        let now = OffsetDateTime::now_utc();
        let event = CallbackEvent {
            kind: CallbackType::PaymentSucceeded,
            timestamp: EventTimestamp::Text(now.format(&Rfc3339)?),
            data: CallbackData {
                order_no: format!("{ORDER_PREFIX}{k}"),
                amount_cents: order_amount(k),
                currency: "EUR".parse()?,
                payment_id: format!("{PAYMENT_PREFIX}{k}"),
            },
        };
        let body = serde_json::to_vec(&event)?;
        let id = format!("{CALLBACK_PREFIX}{k}");
        self.sign(
            &id,
            Prepared::post_json(CALLBACK_PATH.to_owned(), body.into()),
        )
    }

    /// The same callback (same id, same body) signed again with the current time:
    /// what a platform's retry looks like, and within the receiver's 5-minute tolerance.
    pub fn resign(&self, prepared: &Prepared) -> anyhow::Result<Prepared> {
        let id = prepared
            .headers
            .get(backend::webhook::HEADER_ID)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| anyhow::anyhow!("not a callback: no webhook-id"))?
            .to_owned();
        self.sign(&id, prepared.clone())
    }

    fn sign(&self, id: &str, mut prepared: Prepared) -> anyhow::Result<Prepared> {
        let timestamp = OffsetDateTime::now_utc().unix_timestamp();
        let signature = self
            .webhook
            .sign(id, timestamp, &prepared.body)
            .map_err(|err| anyhow::anyhow!("cannot sign: {err}"))?;
        let headers = &mut prepared.headers;
        headers.insert(backend::webhook::HEADER_ID, HeaderValue::from_str(id)?);
        headers.insert(
            backend::webhook::HEADER_TIMESTAMP,
            HeaderValue::from_str(&timestamp.to_string())?,
        );
        headers.insert(
            backend::webhook::HEADER_SIGNATURE,
            HeaderValue::from_str(&signature)?,
        );
        Ok(prepared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_callback_passes_the_backends_own_check() -> anyhow::Result<()> {
        let signer = Signer::generate()?;
        let prepared = signer.callback(42)?;
        let key = backend::webhook::WebhookKey::new(signer.secret())?;
        let id = key
            .verify(&prepared.body, &prepared.headers)
            .map_err(|reason| anyhow::anyhow!(reason))?;
        assert_eq!(id, "cb_42");
        let event: CallbackEvent = serde_json::from_slice(&prepared.body)?;
        assert_eq!(event.data.amount_cents, order_amount(42));
        Ok(())
    }
}
