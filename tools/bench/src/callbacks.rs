//! Signed `payment.succeeded` callbacks, as the payment platform sends them
//! (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`).

use crate::load::Prepared;
use crate::postgres::{CALLBACK_PREFIX, PAYMENT_PREFIX, order_amount, order_no};
use api_types::api::CallbackType;
use callback_signing::{CallbackSecret, HEADER_ID, PaymentResult};
use time::OffsetDateTime;

/// The callback route.
pub const CALLBACK_PATH: &str = "/api/payments/callback";

/// Signs callbacks with one shared secret.
pub struct Signer {
    secret: CallbackSecret,
}

impl Signer {
    /// A fresh random secret.
    pub fn generate() -> Self {
        Self {
            secret: CallbackSecret::generate(),
        }
    }

    /// The secret, for the backend's `WEBHOOK_SECRET`.
    pub fn secret(&self) -> &CallbackSecret {
        &self.secret
    }

    /// The signed callback for order `k`: callback id `cb_<k>`, the order's exact amount.
    pub fn callback(&self, k: i64) -> anyhow::Result<Prepared> {
        let body = callback_signing::event_body(
            &PaymentResult {
                kind: CallbackType::PaymentSucceeded,
                order_no: &order_no(k),
                amount_cents: order_amount(k),
                currency: "EUR".parse()?,
                payment_id: &format!("{PAYMENT_PREFIX}{k}"),
                merchant_reference: None,
            },
            OffsetDateTime::now_utc(),
        );
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
            .get(HEADER_ID)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| anyhow::anyhow!("not a callback: no webhook-id"))?
            .to_owned();
        self.sign(&id, prepared.clone())
    }

    fn sign(&self, id: &str, mut prepared: Prepared) -> anyhow::Result<Prepared> {
        self.secret
            .sign_now(id, &prepared.body)?
            .apply(&mut prepared.headers)?;
        Ok(prepared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_callback_passes_the_backends_own_check() -> anyhow::Result<()> {
        let signer = Signer::generate();
        let prepared = signer.callback(42)?;
        let id = signer.secret().verify(&prepared.body, &prepared.headers)?;
        assert_eq!(id, "cb_42");
        let event: api_types::api::CallbackEvent = serde_json::from_slice(&prepared.body)?;
        assert_eq!(event.data.amount_cents, order_amount(42));
        Ok(())
    }
}
