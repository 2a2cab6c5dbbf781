//! The one owner of payment-callback secrets and signatures.
//!
//! Payment platforms sign each result callback with a secret shared with us,
//! following Standard Webhooks: an HMAC-SHA256 over `id.timestamp.body`, sent in
//! three headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`). The
//! backend verifies; the sandbox platform, the incident replayer, the benchmark
//! and the tests sign. They all go through this crate, so they cannot drift
//! apart: one rule for what a secret is ([`CallbackSecret::parse`]), one way to
//! sign ([`CallbackSecret::sign`]) and to verify ([`CallbackSecret::verify`]),
//! one way to build a callback body ([`event_body`], [`refund_event_body`]).
//!
//! The HMAC comes from RustCrypto's `hmac` and `sha2` (which use the CPU's SHA
//! instructions where it has them), keyed once per secret; the comparison is
//! `subtle`'s constant-time one. The scheme is Standard Webhooks' own, checked
//! against the `standardwebhooks` crate in the tests (same signatures, same
//! verdicts). This crate adds what that crate leaves out: it refuses an empty or
//! short key (`Webhook::new("whsec_")` succeeds and would sign with nothing),
//! and it keeps the secret out of `Debug` and logs ([`secrecy`]).

#![warn(missing_docs)]

use api_types::Currency;
use api_types::api::{CallbackType, EventTimestamp};
use base64::Engine;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use sha2::Sha256;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The header that carries the callback id: our idempotency key for callbacks.
pub const HEADER_ID: &str = standardwebhooks::HEADER_WEBHOOK_ID;
/// The header with the Unix timestamp the platform signed.
pub const HEADER_TIMESTAMP: &str = standardwebhooks::HEADER_WEBHOOK_TIMESTAMP;
/// The header with the `v1,<base64>` signatures.
pub const HEADER_SIGNATURE: &str = standardwebhooks::HEADER_WEBHOOK_SIGNATURE;

/// Every secret starts with this.
pub const SECRET_PREFIX: &str = "whsec_";

/// The fewest key bytes a secret may have. Standard Webhooks recommends keys of
/// 24 to 64 bytes; fewer make the HMAC guessable.
pub const MIN_SECRET_BYTES: usize = 24;

/// Secrets published in documentation and examples (Standard Webhooks' own
/// example among them). Anyone can sign with them, so they are refused like an
/// empty key.
pub const PUBLISHED_EXAMPLE_SECRETS: &[&str] = &["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"];

/// How many key bytes [`CallbackSecret::generate`] makes.
pub const GENERATED_SECRET_BYTES: usize = 32;

/// The longest callback id we accept (it is a primary key and a log field).
pub const MAX_CALLBACK_ID_LEN: usize = 255;

/// How far a signature's timestamp may be from now, either way (Standard Webhooks' five minutes).
pub const TOLERANCE_SECS: i64 = 5 * 60;

/// The signature scheme's version, before the comma of each signature.
const SIGNATURE_VERSION: &str = "v1";

/// Why a text is not a usable secret. The message never contains the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// It does not start with `whsec_`.
    #[error("a webhook secret must start with whsec_ (whsec_ followed by base64)")]
    MissingPrefix,
    /// What follows `whsec_` is not standard base64.
    #[error("a webhook secret must be whsec_ followed by standard base64")]
    NotBase64,
    /// A secret printed in documentation: public, so useless as a secret.
    #[error(
        "this webhook secret is a published example; make your own \
         (echo whsec_$(head -c 32 /dev/urandom | base64))"
    )]
    PublishedExample,
    /// The key is too short to sign with.
    #[error(
        "a webhook secret must hold at least {MIN_SECRET_BYTES} key bytes; this one holds {0} \
         (make one with: echo whsec_$(head -c 32 /dev/urandom | base64))"
    )]
    TooShort(usize),
}

/// Why a callback's signature was not accepted. The texts are shown to the
/// platform in the `401` answer, so they say what to fix and nothing secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// One of the three headers is missing.
    #[error("missing {0} header")]
    MissingHeader(&'static str),
    /// A header is not visible ASCII.
    #[error("{0} header is not valid text")]
    InvalidHeader(&'static str),
    /// The timestamp is not a number.
    #[error("webhook-timestamp is not a Unix timestamp")]
    InvalidTimestamp,
    /// Signed more than five minutes ago (a replay, or a very late retry signed long ago).
    #[error("webhook-timestamp is more than 5 minutes old")]
    TooOld,
    /// Signed more than five minutes in the future.
    #[error("webhook-timestamp is more than 5 minutes in the future")]
    InFuture,
    /// The body is not UTF-8.
    #[error("body is not UTF-8")]
    InvalidBody,
    /// No signature matches: another secret, or the body or headers were changed.
    #[error("signature does not match")]
    Mismatch,
    /// The callback id is empty or longer than [`MAX_CALLBACK_ID_LEN`].
    #[error("webhook-id must be 1 to 255 visible characters")]
    InvalidId,
}

/// A body that cannot be signed: Standard Webhooks signs UTF-8 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a callback body must be UTF-8 to be signed")]
pub struct BodyNotUtf8;

/// A parsed `whsec_<base64>` secret, ready to sign and verify. Cheap to clone;
/// `Debug` shows no part of it.
#[derive(Clone)]
pub struct CallbackSecret {
    text: Arc<SecretString>,
    /// The HMAC keyed with the secret (its inner and outer key blocks already
    /// hashed); each signature starts from a copy.
    keyed: Arc<Hmac<Sha256>>,
}

impl std::fmt::Debug for CallbackSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallbackSecret(whsec_[redacted])")
    }
}

impl PartialEq for CallbackSecret {
    /// Two secrets are equal when they sign alike (configuration comparisons in tests).
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for CallbackSecret {}

impl std::str::FromStr for CallbackSecret {
    type Err = SecretError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl CallbackSecret {
    /// Parses `whsec_<base64>`, refusing a missing prefix, bad base64 and keys
    /// shorter than [`MIN_SECRET_BYTES`] (an empty key above all).
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        if PUBLISHED_EXAMPLE_SECRETS.contains(&text.trim()) {
            return Err(SecretError::PublishedExample);
        }
        let encoded = text
            .trim()
            .strip_prefix(SECRET_PREFIX)
            .ok_or(SecretError::MissingPrefix)?;
        let key = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| SecretError::NotBase64)?;
        if key.len() < MIN_SECRET_BYTES {
            return Err(SecretError::TooShort(key.len()));
        }
        // HMAC takes a key of any length; `key` is at least MIN_SECRET_BYTES.
        let keyed = Hmac::<Sha256>::new_from_slice(&key).map_err(|_| SecretError::NotBase64)?;
        Ok(Self {
            text: Arc::new(SecretString::from(text.trim().to_owned())),
            keyed: Arc::new(keyed),
        })
    }

    /// A fresh random secret of [`GENERATED_SECRET_BYTES`] bytes from the OS's
    /// generator, for a sandbox session or a test that does not share one.
    pub fn generate() -> Self {
        let key: [u8; GENERATED_SECRET_BYTES] = rand::random();
        let text = format!(
            "{SECRET_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(key)
        );
        Self::parse(&text).unwrap_or_else(|_| unreachable!("a generated secret is long enough"))
    }

    /// The secret's text, to hand to another process (`WEBHOOK_SECRET`). Never log it.
    pub fn expose(&self) -> &str {
        self.text.expose_secret()
    }

    /// Signs `body` as callback `id` at `timestamp` (Unix seconds). Standard
    /// Webhooks signs text, so a body that is not UTF-8 cannot be signed.
    pub fn sign(
        &self,
        id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Result<SignedHeaders, BodyNotUtf8> {
        let body = std::str::from_utf8(body).map_err(|_| BodyNotUtf8)?;
        Ok(SignedHeaders {
            id: id.to_owned(),
            timestamp,
            signature: format!(
                "{SIGNATURE_VERSION},{}",
                self.signature(id, timestamp, body)
            ),
        })
    }

    /// Signs `body` as callback `id` with the current time: what a platform does
    /// on every delivery, first or retry.
    pub fn sign_now(&self, id: &str, body: &[u8]) -> Result<SignedHeaders, BodyNotUtf8> {
        self.sign(id, OffsetDateTime::now_utc().unix_timestamp(), body)
    }

    /// The base64 HMAC-SHA256 of `id.timestamp.body`, fed in parts (nothing is
    /// concatenated first).
    fn signature(&self, id: &str, timestamp: i64, body: &str) -> String {
        let mut mac = Hmac::<Sha256>::clone(&self.keyed);
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body.as_bytes());
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    }

    /// Checks the signature and the five-minute timestamp tolerance of a
    /// callback; returns its id. Call it before parsing anything, so an
    /// unsigned request cannot make the receiver read its database.
    ///
    /// The checks, and the error each refusal names, come in Standard Webhooks'
    /// order: the id, signature and timestamp headers, the timestamp's form and
    /// age, the body's UTF-8, then the signatures, any `v1` one of which may match
    /// (a platform rotating its secret sends two).
    pub fn verify<'h>(&self, body: &[u8], headers: &'h HeaderMap) -> Result<&'h str, VerifyError> {
        let id = header(headers, HEADER_ID)?;
        let signatures = header(headers, HEADER_SIGNATURE)?;
        let timestamp = header(headers, HEADER_TIMESTAMP)?
            .parse::<i64>()
            .map_err(|_| VerifyError::InvalidTimestamp)?;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        if now.saturating_sub(timestamp) > TOLERANCE_SECS {
            return Err(VerifyError::TooOld);
        }
        if timestamp > now.saturating_add(TOLERANCE_SECS) {
            return Err(VerifyError::InFuture);
        }
        let body = std::str::from_utf8(body).map_err(|_| VerifyError::InvalidBody)?;
        let expected = self.signature(id, timestamp, body);
        let matches = signatures
            .split(' ')
            .filter_map(|signature| signature.split_once(','))
            .filter(|(version, _)| *version == SIGNATURE_VERSION)
            .any(|(_, signature)| bool::from(signature.as_bytes().ct_eq(expected.as_bytes())));
        if !matches {
            return Err(VerifyError::Mismatch);
        }
        if id.is_empty() || id.len() > MAX_CALLBACK_ID_LEN {
            return Err(VerifyError::InvalidId);
        }
        Ok(id)
    }
}

/// Header `name` as text: missing, or not visible ASCII, is refused by name.
fn header<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<&'h str, VerifyError> {
    headers
        .get(name)
        .ok_or(VerifyError::MissingHeader(name))?
        .to_str()
        .map_err(|_| VerifyError::InvalidHeader(name))
}

/// The three headers of one signed delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    /// `webhook-id`: the callback id.
    pub id: String,
    /// `webhook-timestamp`: Unix seconds.
    pub timestamp: i64,
    /// `webhook-signature`: `v1,<base64>`.
    pub signature: String,
}

impl SignedHeaders {
    /// `(name, value)` of each header, for any HTTP client.
    pub fn pairs(&self) -> [(&'static str, String); 3] {
        [
            (HEADER_ID, self.id.clone()),
            (HEADER_TIMESTAMP, self.timestamp.to_string()),
            (HEADER_SIGNATURE, self.signature.clone()),
        ]
    }

    /// Puts the three headers into `headers`, replacing earlier ones (a re-signed retry).
    pub fn apply(&self, headers: &mut HeaderMap) -> Result<(), http::header::InvalidHeaderValue> {
        for (name, value) in self.pairs() {
            headers.insert(name, HeaderValue::from_str(&value)?);
        }
        Ok(())
    }

    /// The three headers as a fresh map.
    pub fn to_header_map(&self) -> Result<HeaderMap, http::header::InvalidHeaderValue> {
        let mut headers = HeaderMap::with_capacity(3);
        self.apply(&mut headers)?;
        Ok(headers)
    }
}

/// The payment a callback reports on, as the platform knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentResult<'a> {
    /// Succeeded or failed.
    pub kind: CallbackType,
    /// Our order number.
    pub order_no: &'a str,
    /// The amount the platform took (or refused), in minor units.
    pub amount_cents: i64,
    /// The amount's currency.
    pub currency: Currency,
    /// The platform's payment id.
    pub payment_id: &'a str,
    /// The merchant's id for the payment, echoed when it gave one.
    pub merchant_reference: Option<&'a str>,
}

/// The callback body for `result`, stamped `at` (RFC 3339 in the body).
fn event<'a>(result: &PaymentResult<'a>, at: OffsetDateTime) -> WireEvent<'a> {
    WireEvent {
        kind: result.kind,
        timestamp: EventTimestamp::Text(at.format(&Rfc3339).unwrap_or_else(|_| at.to_string())),
        data: WireData {
            order_no: result.order_no,
            amount_cents: result.amount_cents,
            currency: result.currency,
            payment_id: result.payment_id,
            merchant_reference: result.merchant_reference,
            refund_no: None,
            refund_id: None,
        },
    }
}

/// The JSON body of the callback event for `result`, stamped `at`.
pub fn event_body(result: &PaymentResult<'_>, at: OffsetDateTime) -> Vec<u8> {
    to_body(&event(result, at))
}

/// The refund a callback reports on, as the platform knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundResult<'a> {
    /// `refund.succeeded` or `refund.failed`.
    pub kind: CallbackType,
    /// Our order number (the refunded payment's).
    pub order_no: &'a str,
    /// The amount given back (or not), in minor units.
    pub amount_cents: i64,
    /// The amount's currency.
    pub currency: Currency,
    /// The platform's id of the refunded payment.
    pub payment_id: &'a str,
    /// Our refund number (the refund's idempotency key at the platform).
    pub refund_no: &'a str,
    /// The platform's id for the refund.
    pub refund_id: &'a str,
    /// The merchant's id for the refunded payment, echoed when it gave one.
    pub merchant_reference: Option<&'a str>,
}

/// The callback body for a refund's `result`, stamped `at`: a payment's
/// event with the refund's amount and the two refund fields filled.
fn refund_event<'a>(result: &RefundResult<'a>, at: OffsetDateTime) -> WireEvent<'a> {
    let mut event = event(
        &PaymentResult {
            kind: result.kind,
            order_no: result.order_no,
            amount_cents: result.amount_cents,
            currency: result.currency,
            payment_id: result.payment_id,
            merchant_reference: result.merchant_reference,
        },
        at,
    );
    event.data.refund_no = Some(result.refund_no);
    event.data.refund_id = Some(result.refund_id);
    event
}

/// The JSON body of the callback event for a refund's `result`, stamped `at`.
pub fn refund_event_body(result: &RefundResult<'_>, at: OffsetDateTime) -> Vec<u8> {
    to_body(&refund_event(result, at))
}

/// A callback body as the platform writes it: the fields of the receiver's
/// [`CallbackEvent`](api_types::api::CallbackEvent), borrowed. The receiver's type checks what it reads (a
/// platform payment id is never empty there); the sender writes what it is
/// given, so a test can also send what a receiver must refuse.
#[derive(Debug, Serialize)]
struct WireEvent<'a> {
    #[serde(rename = "type")]
    kind: CallbackType,
    timestamp: EventTimestamp,
    data: WireData<'a>,
}

/// [`CallbackData`](api_types::api::CallbackData)'s fields, borrowed, in its order and with its optional fields left out when `None`.
#[derive(Debug, Serialize)]
struct WireData<'a> {
    order_no: &'a str,
    amount_cents: i64,
    currency: Currency,
    payment_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    merchant_reference: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refund_no: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refund_id: Option<&'a str>,
}

fn to_body(event: &WireEvent<'_>) -> Vec<u8> {
    // A struct of strings, integers and unit enums always serialises.
    serde_json::to_vec(event).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::api::{CallbackData, CallbackEvent};

    fn secret_of(bytes: usize) -> String {
        format!(
            "{SECRET_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(vec![7u8; bytes])
        )
    }

    /// The `standardwebhooks` crate keyed with `secret`: the reference.
    fn oracle(secret: &CallbackSecret) -> standardwebhooks::Webhook {
        let key = base64::engine::general_purpose::STANDARD
            .decode(&secret.expose()[SECRET_PREFIX.len()..])
            .expect("base64");
        standardwebhooks::Webhook::from_bytes(key).expect("key")
    }

    /// The `standardwebhooks` crate's verdict in this crate's terms.
    fn oracle_verdict(
        secret: &CallbackSecret,
        body: &[u8],
        headers: &HeaderMap,
    ) -> Result<(), VerifyError> {
        use standardwebhooks::WebhookError;
        oracle(secret)
            .verify(body, headers)
            .map_err(|err| match err {
                WebhookError::MissingHeader(name) => {
                    VerifyError::MissingHeader(oracle_header(name))
                }
                WebhookError::InvalidHeader(name) => {
                    VerifyError::InvalidHeader(oracle_header(name))
                }
                WebhookError::InvalidTimestamp => VerifyError::InvalidTimestamp,
                WebhookError::TimestampTooOldError => VerifyError::TooOld,
                WebhookError::FutureTimestampError => VerifyError::InFuture,
                WebhookError::InvalidPayload => VerifyError::InvalidBody,
                WebhookError::InvalidSignature | WebhookError::InvalidSecret(_) => {
                    VerifyError::Mismatch
                }
            })
    }

    /// The crate names headers without their `webhook-` prefix.
    fn oracle_header(name: &str) -> &'static str {
        match name {
            "id" => HEADER_ID,
            "timestamp" => HEADER_TIMESTAMP,
            _ => HEADER_SIGNATURE,
        }
    }

    /// Our verdict without the id check the crate does not make.
    fn verdict(
        secret: &CallbackSecret,
        body: &[u8],
        headers: &HeaderMap,
    ) -> Result<(), VerifyError> {
        match secret.verify(body, headers) {
            Ok(_) | Err(VerifyError::InvalidId) => Ok(()),
            Err(err) => Err(err),
        }
    }

    #[test]
    fn signatures_are_the_standard_webhooks_crates() {
        let bodies: [&[u8]; 4] = [
            b"",
            b"{}",
            br#"{"type":"payment.succeeded","n":"\u00e9"}"#,
            &[b'x'; 5000],
        ];
        for key_bytes in [24, 32, 64, 65, 200] {
            let secret = CallbackSecret::parse(&secret_of(key_bytes)).expect("secret");
            let webhook = oracle(&secret);
            for body in bodies {
                for (id, timestamp) in [
                    ("evt_1", 1_700_000_000),
                    ("msg_2fY", 0),
                    ("é", -5),
                    ("a.b", i64::MAX),
                ] {
                    assert_eq!(
                        secret.sign(id, timestamp, body).expect("utf-8").signature,
                        webhook.sign(id, timestamp, body).expect("utf-8"),
                        "key {key_bytes} bytes, id {id}, timestamp {timestamp}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_verdict_is_the_standard_webhooks_crates() {
        let secret = CallbackSecret::generate();
        let body = br#"{"type":"payment.succeeded"}"#;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let good = secret.sign("evt_1", now, body).expect("utf-8");
        let sig = good.signature.clone();
        let other = CallbackSecret::generate()
            .sign("evt_1", now, body)
            .expect("utf-8")
            .signature;
        let mut flipped = sig.clone().into_bytes();
        flipped[5] = if flipped[5] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).expect("ascii");
        let signatures = [
            sig.clone(),
            format!("{other} {sig}"),
            format!("{sig} {other}"),
            format!("{other}  {sig}"),
            format!("{sig} "),
            format!(" {sig}"),
            other.clone(),
            flipped,
            sig.replacen("v1,", "v2,", 1),
            sig.replacen("v1,", "V1,", 1),
            sig.replacen("v1,", "v1 ", 1),
            sig.trim_end_matches('=').to_owned(),
            format!("{sig}="),
            sig.to_lowercase(),
            String::new(),
            ",".to_owned(),
            "v1,".to_owned(),
        ];
        let timestamps = [
            now.to_string(),
            format!("+{now}"),
            format!("0{now}"),
            format!(" {now}"),
            format!("{now}.0"),
            "soon".to_owned(),
            (now - 301).to_string(),
            (now + 301).to_string(),
            (now - 200).to_string(),
            (now + 200).to_string(),
            i64::MAX.to_string(),
            "99999999999999999999".to_owned(),
        ];
        let mut compared = 0;
        for signature in &signatures {
            for timestamp in &timestamps {
                for body in [&body[..], b"{}", &[0xff, 0xfe]] {
                    let mut headers = HeaderMap::new();
                    headers.insert(HEADER_ID, HeaderValue::from_static("evt_1"));
                    headers.insert(
                        HEADER_TIMESTAMP,
                        HeaderValue::from_str(timestamp).expect("text"),
                    );
                    headers.insert(
                        HEADER_SIGNATURE,
                        HeaderValue::from_str(signature).expect("text"),
                    );
                    assert_eq!(
                        verdict(&secret, body, &headers),
                        oracle_verdict(&secret, body, &headers),
                        "signature {signature:?}, timestamp {timestamp:?}, body {body:?}"
                    );
                    compared += 1;
                }
            }
        }
        // Headers missing, or not text, one at a time.
        let full = good.to_header_map().expect("headers");
        for name in [HEADER_ID, HEADER_TIMESTAMP, HEADER_SIGNATURE] {
            let mut missing = full.clone();
            missing.remove(name);
            let mut opaque = full.clone();
            opaque.insert(
                name,
                HeaderValue::from_bytes(&[0xe9, b'x']).expect("opaque"),
            );
            for headers in [missing, opaque] {
                assert_eq!(
                    verdict(&secret, body, &headers),
                    oracle_verdict(&secret, body, &headers)
                );
                compared += 1;
            }
        }
        assert_eq!(verdict(&secret, body, &full), Ok(()));
        // The crate overflows on the oldest timestamp (`now - i64::MIN`: a
        // panic in debug builds, a wrap into "recent" in release ones); this
        // one calls it old, whoever signed it.
        let oldest = secret.sign("evt_1", i64::MIN, body).expect("utf-8");
        assert_eq!(
            secret.verify(body, &oldest.to_header_map().expect("headers")),
            Err(VerifyError::TooOld)
        );
        assert_eq!(compared, signatures.len() * timestamps.len() * 3 + 6);
    }

    proptest::proptest! {
        /// Any body, id and secret: the same signature as the crate's, which
        /// both accept; with a byte added to the body, both refuse.
        #[test]
        fn any_callback_signs_and_verifies_as_the_crate_does(
            key in proptest::collection::vec(proptest::prelude::any::<u8>(), 24..80),
            id in "[ -~]{1,40}",
            body in "\\PC{0,300}",
        ) {
            let text = format!("{SECRET_PREFIX}{}", base64::engine::general_purpose::STANDARD.encode(&key));
            let secret = CallbackSecret::parse(&text).expect("secret");
            let webhook = oracle(&secret);
            let now = OffsetDateTime::now_utc().unix_timestamp();
            let signed = secret.sign(&id, now, body.as_bytes()).expect("utf-8");
            proptest::prop_assert_eq!(&signed.signature, &webhook.sign(&id, now, body.as_bytes()).expect("utf-8"));
            let headers = signed.to_header_map().expect("headers");
            proptest::prop_assert_eq!(verdict(&secret, body.as_bytes(), &headers), Ok(()));
            proptest::prop_assert_eq!(oracle_verdict(&secret, body.as_bytes(), &headers), Ok(()));
            let changed = format!("{body} ").into_bytes();
            proptest::prop_assert_eq!(verdict(&secret, &changed, &headers), Err(VerifyError::Mismatch));
            proptest::prop_assert_eq!(oracle_verdict(&secret, &changed, &headers), Err(VerifyError::Mismatch));
        }
    }

    #[test]
    fn an_empty_key_is_refused() {
        assert_eq!(
            CallbackSecret::parse("whsec_").map(|_| ()),
            Err(SecretError::TooShort(0))
        );
    }

    #[test]
    fn a_key_shorter_than_24_bytes_is_refused_and_24_is_accepted() {
        assert_eq!(
            CallbackSecret::parse(&secret_of(23)).map(|_| ()),
            Err(SecretError::TooShort(23))
        );
        assert!(CallbackSecret::parse(&secret_of(24)).is_ok());
    }

    #[test]
    fn a_published_example_secret_is_refused_though_long_enough() {
        for example in PUBLISHED_EXAMPLE_SECRETS {
            assert_eq!(
                CallbackSecret::parse(example).map(|_| ()),
                Err(SecretError::PublishedExample)
            );
        }
    }

    #[test]
    fn a_secret_without_prefix_or_with_bad_base64_is_refused() {
        let bare = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        assert_eq!(
            CallbackSecret::parse(&bare).map(|_| ()),
            Err(SecretError::MissingPrefix)
        );
        assert_eq!(
            CallbackSecret::parse("whsec_not base64!").map(|_| ()),
            Err(SecretError::NotBase64)
        );
    }

    #[test]
    fn debug_and_errors_never_show_the_secret() {
        let secret = CallbackSecret::generate();
        let key_part = &secret.expose()[SECRET_PREFIX.len()..];
        assert!(!format!("{secret:?}").contains(key_part));
        let short = secret_of(3);
        let err = CallbackSecret::parse(&short).err().map(|e| e.to_string());
        assert!(
            !err.unwrap_or_default()
                .contains(&short[SECRET_PREFIX.len()..])
        );
    }

    #[test]
    fn what_one_secret_signs_it_verifies_and_another_does_not() {
        let secret = CallbackSecret::generate();
        let body = br#"{"hello":"world"}"#;
        let headers = secret
            .sign_now("evt_1", body)
            .expect("utf-8")
            .to_header_map()
            .expect("headers");
        assert_eq!(secret.verify(body, &headers), Ok("evt_1"));
        let other = CallbackSecret::generate();
        assert_eq!(other.verify(body, &headers), Err(VerifyError::Mismatch));
        assert_eq!(
            secret.verify(br#"{"hello":"World"}"#, &headers),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn a_signature_older_than_five_minutes_is_refused() {
        let secret = CallbackSecret::generate();
        let body = b"{}";
        let old = OffsetDateTime::now_utc().unix_timestamp() - 301;
        let headers = secret
            .sign("evt_1", old, body)
            .expect("utf-8")
            .to_header_map()
            .expect("headers");
        assert_eq!(secret.verify(body, &headers), Err(VerifyError::TooOld));
    }

    #[test]
    fn a_body_that_is_not_utf8_cannot_be_signed() {
        let secret = CallbackSecret::generate();
        assert_eq!(secret.sign_now("evt_1", &[0xff, 0xfe]), Err(BodyNotUtf8));
    }

    #[test]
    fn missing_headers_are_named() {
        let secret = CallbackSecret::generate();
        let mut headers = secret
            .sign_now("evt_1", b"{}")
            .expect("utf-8")
            .to_header_map()
            .expect("headers");
        headers.remove(HEADER_SIGNATURE);
        assert_eq!(
            secret.verify(b"{}", &headers),
            Err(VerifyError::MissingHeader(HEADER_SIGNATURE))
        );
    }

    #[test]
    fn an_overlong_callback_id_is_refused_even_when_signed() {
        let secret = CallbackSecret::generate();
        let id = "x".repeat(MAX_CALLBACK_ID_LEN + 1);
        let headers = secret
            .sign_now(&id, b"{}")
            .expect("utf-8")
            .to_header_map()
            .expect("headers");
        assert_eq!(secret.verify(b"{}", &headers), Err(VerifyError::InvalidId));
    }

    #[test]
    fn event_body_is_the_wire_callback_event() {
        let at = OffsetDateTime::from_unix_timestamp(1_796_212_800).expect("valid");
        let body = event_body(
            &PaymentResult {
                kind: CallbackType::PaymentSucceeded,
                order_no: "ord_1",
                amount_cents: 1999,
                currency: "EUR".parse().expect("a currency"),
                payment_id: "pay_1",
                merchant_reference: None,
            },
            at,
        );
        let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(value["type"], "payment.succeeded");
        assert_eq!(value["timestamp"], "2026-12-02T12:00:00Z");
        assert_eq!(value["data"]["order_no"], "ord_1");
        assert_eq!(value["data"]["amount_cents"], 1999);
        assert_eq!(value["data"]["currency"], "EUR");
        assert_eq!(value["data"]["payment_id"], "pay_1");
        assert!(value["data"].get("refund_no").is_none(), "{value}");
        assert!(value["data"].get("refund_id").is_none(), "{value}");
    }

    #[test]
    fn refund_event_body_is_the_wire_callback_event_with_the_refund_fields() {
        let at = OffsetDateTime::from_unix_timestamp(1_796_212_800).expect("valid");
        let body = refund_event_body(
            &RefundResult {
                kind: CallbackType::RefundSucceeded,
                order_no: "ord_1",
                amount_cents: 500,
                currency: "EUR".parse().expect("a currency"),
                payment_id: "pay_1",
                refund_no: "rfn_1",
                refund_id: "rf_1",
                merchant_reference: Some("ref_1"),
            },
            at,
        );

        let event: CallbackEvent = serde_json::from_slice(&body).expect("a CallbackEvent");

        assert_eq!(event.kind, CallbackType::RefundSucceeded);
        assert_eq!(
            event.timestamp,
            EventTimestamp::Text("2026-12-02T12:00:00Z".into())
        );
        assert_eq!(
            event.data,
            CallbackData {
                order_no: "ord_1".into(),
                amount_cents: 500,
                currency: "EUR".parse().expect("a currency"),
                payment_id: "pay_1".parse().expect("an id"),
                merchant_reference: Some("ref_1".into()),
                refund_no: Some("rfn_1".into()),
                refund_id: Some("rf_1".into()),
            }
        );
    }
}
