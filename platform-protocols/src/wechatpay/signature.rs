//! WeChat Pay API v3 signatures: the merchant's `Authorization` header on requests,
//! and the platform's `Wechatpay-*` headers on answers and notifications.
//!
//! See the [module above](super) for the message formats. Both sides are here:
//! [`MerchantSigner`] and [`PlatformKey`] for the merchant (the backend's
//! connector), [`MerchantKey`] and [`PlatformSigner`] for the platform (the
//! simulator).

use super::{
    HEADER_NONCE, HEADER_SERIAL, HEADER_SIGNATURE, HEADER_SIGNATURE_TYPE, HEADER_TIMESTAMP,
    MAX_CLOCK_SKEW_SECS, SCHEME,
};
use crate::keys::{PrivateKey, PublicKey, check_serial};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::fmt;

/// The request message: `METHOD\nPATH_WITH_QUERY\nTIMESTAMP\nNONCE\nBODY\n`.
///
/// `path_with_query` is the absolute path and query exactly as in the request line
/// (`/v3/pay/transactions/out-trade-no/ORD-1?mchid=1900009191`); `body` is the raw
/// body, empty for a GET.
pub fn request_message(
    method: &http::Method,
    path_with_query: &str,
    timestamp: i64,
    nonce: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut message = format!(
        "{}\n{path_with_query}\n{timestamp}\n{nonce}\n",
        method.as_str()
    )
    .into_bytes();
    message.extend_from_slice(body);
    message.push(b'\n');
    message
}

/// The answer and notification message: `TIMESTAMP\nNONCE\nBODY\n`.
pub fn platform_message(timestamp: i64, nonce: &str, body: &[u8]) -> Vec<u8> {
    let mut message = format!("{timestamp}\n{nonce}\n").into_bytes();
    message.extend_from_slice(body);
    message.push(b'\n');
    message
}

/// Why a signed request, answer or notification is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A header the scheme needs is absent (or empty).
    #[error("the {0} header is missing")]
    MissingHeader(&'static str),
    /// A header is there but not in its form (not ASCII, a non-numeric timestamp...).
    #[error("the {header} header is malformed: {reason}")]
    MalformedHeader {
        /// The header's name.
        header: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The `Authorization` header does not parse.
    #[error("the Authorization header is malformed: {0}")]
    MalformedAuthorization(#[from] AuthorizationError),
    /// `Wechatpay-Signature-Type` names another algorithm than [`SCHEME`].
    #[error("unsupported signature type {0:?}; only {SCHEME} is accepted")]
    UnsupportedSignatureType(String),
    /// The request names another merchant than the key belongs to.
    #[error("the request is signed for merchant {got:?}, not {expected:?}")]
    WrongMerchant {
        /// The merchant id configured.
        expected: String,
        /// The `mchid` in the header.
        got: String,
    },
    /// The serial number names another key than the one configured: the message was
    /// signed with a key we do not hold (or it was rotated).
    #[error("signed with the key of serial {got:?}, but the configured key is {expected:?}")]
    WrongSerial {
        /// The serial configured.
        expected: String,
        /// The serial in the message.
        got: String,
    },
    /// The timestamp is [`MAX_CLOCK_SKEW_SECS`] or more in the past: a replay, or a
    /// message delivered very late.
    #[error(
        "the signed timestamp {timestamp} is too old (now {now}, the limit is {MAX_CLOCK_SKEW_SECS} s)"
    )]
    StaleTimestamp {
        /// The signed timestamp.
        timestamp: i64,
        /// The verifier's clock.
        now: i64,
    },
    /// The timestamp is [`MAX_CLOCK_SKEW_SECS`] or more in the future.
    #[error(
        "the signed timestamp {timestamp} is in the future (now {now}, the limit is {MAX_CLOCK_SKEW_SECS} s)"
    )]
    FutureTimestamp {
        /// The signed timestamp.
        timestamp: i64,
        /// The verifier's clock.
        now: i64,
    },
    /// The signature does not verify over the message with the configured key.
    #[error("the signature does not match")]
    BadSignature,
}

/// Refuses a timestamp at least [`MAX_CLOCK_SKEW_SECS`] from `now`, either way.
fn check_timestamp(timestamp: i64, now: i64) -> Result<(), VerifyError> {
    let skew = i128::from(now) - i128::from(timestamp);
    if skew >= i128::from(MAX_CLOCK_SKEW_SECS) {
        Err(VerifyError::StaleTimestamp { timestamp, now })
    } else if -skew >= i128::from(MAX_CLOCK_SKEW_SECS) {
        Err(VerifyError::FutureTimestamp { timestamp, now })
    } else {
        Ok(())
    }
}

/// A Unix timestamp as the scheme writes it: decimal digits only, no sign.
fn parse_timestamp(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A nonce: 1 to 64 visible ASCII characters other than `"` and `,` (which would
/// break the `Authorization` header). WeChat Pay's nonces are 32 letters and digits.
fn valid_nonce(nonce: &str) -> bool {
    (1..=64).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|byte| byte.is_ascii_graphic() && byte != b'"' && byte != b',')
}

/// A base64 signature's characters.
fn valid_signature_text(signature: &str) -> bool {
    !signature.is_empty()
        && signature
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'='))
}

/// The parsed `Authorization: WECHATPAY2-SHA256-RSA2048 ...` header of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The merchant id (`mchid`, 商户号).
    pub mchid: String,
    /// The nonce in the signed message.
    pub nonce_str: String,
    /// The base64 signature.
    pub signature: String,
    /// The Unix timestamp (seconds) in the signed message.
    pub timestamp: i64,
    /// The serial number of the merchant certificate whose key signed.
    pub serial_no: String,
}

/// Why an `Authorization` header value is not a WeChat Pay API v3 one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorizationError {
    /// It does not start with `WECHATPAY2-SHA256-RSA2048 `.
    #[error("the scheme must be {SCHEME} followed by a space")]
    WrongScheme,
    /// A part between commas is not `name="value"`.
    #[error("{0:?} is not of the form name=\"value\"")]
    MalformedParameter(String),
    /// A parameter the scheme does not have.
    #[error("unknown parameter {0:?}")]
    UnknownParameter(String),
    /// A parameter given twice.
    #[error("parameter {0} appears twice")]
    DuplicateParameter(&'static str),
    /// One of the five parameters is absent.
    #[error("parameter {0} is missing")]
    MissingParameter(&'static str),
    /// A parameter's value is not in its form (a non-numeric timestamp, a signature
    /// that is not base64 text, a serial with other characters...).
    #[error("parameter {0} has an invalid value")]
    InvalidValue(&'static str),
}

impl Authorization {
    /// Parses a header value. Accepts the five parameters in any order, each exactly
    /// once, separated by `,` (spaces around it are tolerated); refuses anything else.
    pub fn parse(value: &str) -> Result<Self, AuthorizationError> {
        let params = value
            .strip_prefix(SCHEME)
            .and_then(|rest| rest.strip_prefix(' '))
            .ok_or(AuthorizationError::WrongScheme)?;
        let mut mchid = None;
        let mut nonce_str = None;
        let mut signature = None;
        let mut timestamp = None;
        let mut serial_no = None;
        for part in params.split(',') {
            let part = part.trim_matches(' ');
            let malformed = || AuthorizationError::MalformedParameter(part.to_owned());
            let (name, quoted) = part.split_once('=').ok_or_else(malformed)?;
            let value = quoted
                .strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
                .filter(|inner| !inner.contains('"'))
                .ok_or_else(malformed)?;
            let (slot, name) = match name {
                "mchid" => (&mut mchid, "mchid"),
                "nonce_str" => (&mut nonce_str, "nonce_str"),
                "signature" => (&mut signature, "signature"),
                "timestamp" => (&mut timestamp, "timestamp"),
                "serial_no" => (&mut serial_no, "serial_no"),
                other => return Err(AuthorizationError::UnknownParameter(other.to_owned())),
            };
            if slot.replace(value).is_some() {
                return Err(AuthorizationError::DuplicateParameter(name));
            }
        }
        let mchid = mchid.ok_or(AuthorizationError::MissingParameter("mchid"))?;
        let nonce_str = nonce_str.ok_or(AuthorizationError::MissingParameter("nonce_str"))?;
        let signature = signature.ok_or(AuthorizationError::MissingParameter("signature"))?;
        let timestamp = timestamp.ok_or(AuthorizationError::MissingParameter("timestamp"))?;
        let serial_no = serial_no.ok_or(AuthorizationError::MissingParameter("serial_no"))?;
        if mchid.is_empty() || !mchid.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            return Err(AuthorizationError::InvalidValue("mchid"));
        }
        if !valid_nonce(nonce_str) {
            return Err(AuthorizationError::InvalidValue("nonce_str"));
        }
        if !valid_signature_text(signature) {
            return Err(AuthorizationError::InvalidValue("signature"));
        }
        let timestamp =
            parse_timestamp(timestamp).ok_or(AuthorizationError::InvalidValue("timestamp"))?;
        if check_serial(serial_no).is_err() {
            return Err(AuthorizationError::InvalidValue("serial_no"));
        }
        Ok(Self {
            mchid: mchid.to_owned(),
            nonce_str: nonce_str.to_owned(),
            signature: signature.to_owned(),
            timestamp,
            serial_no: serial_no.to_owned(),
        })
    }

    /// The header value (the same text as `Display`).
    pub fn header_value(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{SCHEME} mchid=\"{}\",nonce_str=\"{}\",signature=\"{}\",timestamp=\"{}\",serial_no=\"{}\"",
            self.mchid, self.nonce_str, self.signature, self.timestamp, self.serial_no
        )
    }
}

/// The merchant's side of a request: its id, its certificate serial and its private
/// key. The backend's connector signs every request with it.
#[derive(Debug, Clone)]
pub struct MerchantSigner {
    /// The merchant id (`mchid`).
    pub mchid: String,
    /// The merchant API certificate's serial number.
    pub serial_no: String,
    /// The merchant API certificate's private key (`apiclient_key.pem`).
    pub key: PrivateKey,
}

impl MerchantSigner {
    /// Signs a request and returns its `Authorization` header. `timestamp` is the
    /// current Unix time in seconds and `nonce` a fresh [`super::generate_nonce`];
    /// both are parameters so tests are deterministic.
    pub fn sign_request(
        &self,
        method: &http::Method,
        path_with_query: &str,
        body: &[u8],
        timestamp: i64,
        nonce: &str,
    ) -> Authorization {
        let message = request_message(method, path_with_query, timestamp, nonce, body);
        Authorization {
            mchid: self.mchid.clone(),
            nonce_str: nonce.to_owned(),
            signature: self.key.sign_rsa_sha256_base64(&message),
            timestamp,
            serial_no: self.serial_no.clone(),
        }
    }
}

/// The platform's knowledge of a merchant: the simulator verifies requests with it.
#[derive(Debug, Clone)]
pub struct MerchantKey {
    /// The merchant id requests must name.
    pub mchid: String,
    /// The serial number requests must name.
    pub serial_no: String,
    /// The merchant's public key.
    pub public_key: PublicKey,
}

impl MerchantKey {
    /// Verifies a request: the `Authorization` header parses, names this merchant and
    /// serial, its timestamp is within [`MAX_CLOCK_SKEW_SECS`] of `now`, and its
    /// signature verifies over the request message. Returns the parsed header.
    pub fn verify_request(
        &self,
        authorization: Option<&str>,
        method: &http::Method,
        path_with_query: &str,
        body: &[u8],
        now: i64,
    ) -> Result<Authorization, VerifyError> {
        let header = authorization
            .filter(|value| !value.is_empty())
            .ok_or(VerifyError::MissingHeader("Authorization"))?;
        let authorization = Authorization::parse(header)?;
        if authorization.mchid != self.mchid {
            return Err(VerifyError::WrongMerchant {
                expected: self.mchid.clone(),
                got: authorization.mchid,
            });
        }
        if authorization.serial_no != self.serial_no {
            return Err(VerifyError::WrongSerial {
                expected: self.serial_no.clone(),
                got: authorization.serial_no,
            });
        }
        check_timestamp(authorization.timestamp, now)?;
        let message = request_message(
            method,
            path_with_query,
            authorization.timestamp,
            &authorization.nonce_str,
            body,
        );
        self.public_key
            .verify_rsa_sha256_base64(&message, &authorization.signature)
            .map_err(|_| VerifyError::BadSignature)?;
        Ok(authorization)
    }

    /// Like [`MerchantKey::verify_request`], reading `Authorization` from `headers`.
    pub fn verify_request_headers(
        &self,
        headers: &HeaderMap,
        method: &http::Method,
        path_with_query: &str,
        body: &[u8],
        now: i64,
    ) -> Result<Authorization, VerifyError> {
        let value = match headers.get(http::header::AUTHORIZATION) {
            None => None,
            Some(value) => Some(value.to_str().map_err(|_| VerifyError::MalformedHeader {
                header: "Authorization",
                reason: "not visible ASCII".to_owned(),
            })?),
        };
        self.verify_request(value, method, path_with_query, body, now)
    }
}

/// The platform's signature on an answer or a notification: the four
/// `Wechatpay-*` headers (plus `Wechatpay-Signature-Type` on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformSignature {
    /// `Wechatpay-Timestamp`.
    pub timestamp: i64,
    /// `Wechatpay-Nonce`.
    pub nonce: String,
    /// `Wechatpay-Signature` (base64).
    pub signature: String,
    /// `Wechatpay-Serial`.
    pub serial: String,
}

impl PlatformSignature {
    /// Reads the headers through `get` (a case-insensitive lookup by name), so any
    /// HTTP library can supply them. Missing, empty or malformed headers are refused;
    /// a `Wechatpay-Signature-Type` other than [`SCHEME`] is refused, its absence is
    /// not (older notifications do not send it).
    pub fn from_lookup<'a>(
        get: impl Fn(&'static str) -> Option<&'a str>,
    ) -> Result<Self, VerifyError> {
        let required = |name: &'static str| {
            get(name)
                .filter(|value| !value.is_empty())
                .ok_or(VerifyError::MissingHeader(name))
        };
        let malformed = |header: &'static str, reason: &str| VerifyError::MalformedHeader {
            header,
            reason: reason.to_owned(),
        };
        let timestamp_text = required(HEADER_TIMESTAMP)?;
        let nonce = required(HEADER_NONCE)?;
        let signature = required(HEADER_SIGNATURE)?;
        let serial = required(HEADER_SERIAL)?;
        if let Some(kind) = get(HEADER_SIGNATURE_TYPE)
            && kind != SCHEME
        {
            return Err(VerifyError::UnsupportedSignatureType(kind.to_owned()));
        }
        let timestamp = parse_timestamp(timestamp_text)
            .ok_or_else(|| malformed(HEADER_TIMESTAMP, "not a Unix timestamp in seconds"))?;
        if !valid_nonce(nonce) {
            return Err(malformed(
                HEADER_NONCE,
                "not 1 to 64 visible ASCII characters",
            ));
        }
        if check_serial(serial).is_err() {
            return Err(malformed(
                HEADER_SERIAL,
                "not ASCII letters, digits and '_'",
            ));
        }
        Ok(Self {
            timestamp,
            nonce: nonce.to_owned(),
            signature: signature.to_owned(),
            serial: serial.to_owned(),
        })
    }

    /// Reads the headers from an `http::HeaderMap` (what axum and reqwest hand over).
    pub fn from_headers(headers: &HeaderMap) -> Result<Self, VerifyError> {
        for name in [
            HEADER_TIMESTAMP,
            HEADER_NONCE,
            HEADER_SIGNATURE,
            HEADER_SERIAL,
            HEADER_SIGNATURE_TYPE,
        ] {
            if let Some(value) = headers.get(name)
                && value.to_str().is_err()
            {
                return Err(VerifyError::MalformedHeader {
                    header: name,
                    reason: "not visible ASCII".to_owned(),
                });
            }
        }
        Self::from_lookup(|name| headers.get(name).and_then(|value| value.to_str().ok()))
    }

    /// The five headers as name/value pairs, `Wechatpay-Signature-Type` included.
    pub fn header_pairs(&self) -> [(&'static str, String); 5] {
        [
            (HEADER_TIMESTAMP, self.timestamp.to_string()),
            (HEADER_NONCE, self.nonce.clone()),
            (HEADER_SIGNATURE, self.signature.clone()),
            (HEADER_SERIAL, self.serial.clone()),
            (HEADER_SIGNATURE_TYPE, SCHEME.to_owned()),
        ]
    }

    /// Adds the five headers to `headers`. Fails only if the nonce or serial given to
    /// [`PlatformSigner::sign`] was not a valid header value.
    pub fn insert_into(
        &self,
        headers: &mut HeaderMap,
    ) -> Result<(), http::header::InvalidHeaderValue> {
        for (name, value) in self.header_pairs() {
            headers.insert(
                HeaderName::from_static(lowercase(name)),
                HeaderValue::from_str(&value)?,
            );
        }
        Ok(())
    }
}

/// `HeaderName::from_static` wants lower case; the constants are written as the
/// documentation writes them.
fn lowercase(name: &'static str) -> &'static str {
    match name {
        HEADER_TIMESTAMP => "wechatpay-timestamp",
        HEADER_NONCE => "wechatpay-nonce",
        HEADER_SIGNATURE => "wechatpay-signature",
        HEADER_SERIAL => "wechatpay-serial",
        _ => "wechatpay-signature-type",
    }
}

/// The platform's signing side: the simulator signs answers and notifications.
#[derive(Debug, Clone)]
pub struct PlatformSigner {
    /// The serial number sent in `Wechatpay-Serial`.
    pub serial: String,
    /// The platform's private key.
    pub key: PrivateKey,
}

impl PlatformSigner {
    /// Signs an answer or notification body. `timestamp` is the current Unix time and
    /// `nonce` a fresh [`super::generate_nonce`].
    pub fn sign(&self, body: &[u8], timestamp: i64, nonce: &str) -> PlatformSignature {
        PlatformSignature {
            timestamp,
            nonce: nonce.to_owned(),
            signature: self
                .key
                .sign_rsa_sha256_base64(&platform_message(timestamp, nonce, body)),
            serial: self.serial.clone(),
        }
    }
}

/// The merchant's knowledge of the platform key: the connector verifies answers and
/// notifications with it.
#[derive(Debug, Clone)]
pub struct PlatformKey {
    /// The serial the platform names in `Wechatpay-Serial`.
    pub serial: String,
    /// The platform's public key.
    pub public_key: PublicKey,
}

impl PlatformKey {
    /// Verifies a platform signature over `body` (the raw bytes received): the serial
    /// is this key's, the timestamp is within [`MAX_CLOCK_SKEW_SECS`] of `now`, and
    /// the signature verifies over `TIMESTAMP\nNONCE\nBODY\n`.
    pub fn verify(
        &self,
        signature: &PlatformSignature,
        body: &[u8],
        now: i64,
    ) -> Result<(), VerifyError> {
        if signature.serial != self.serial {
            return Err(VerifyError::WrongSerial {
                expected: self.serial.clone(),
                got: signature.serial.clone(),
            });
        }
        check_timestamp(signature.timestamp, now)?;
        let message = platform_message(signature.timestamp, &signature.nonce, body);
        self.public_key
            .verify_rsa_sha256_base64(&message, &signature.signature)
            .map_err(|_| VerifyError::BadSignature)
    }
}

/// Verifies an answer or a notification in one call: reads the `Wechatpay-*`
/// headers, then [`PlatformKey::verify`]. Call it on the raw body before parsing it.
pub fn verify_platform_message(
    headers: &HeaderMap,
    body: &[u8],
    platform: &PlatformKey,
    now: i64,
) -> Result<PlatformSignature, VerifyError> {
    let signature = PlatformSignature::from_headers(headers)?;
    platform.verify(&signature, body, now)?;
    Ok(signature)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "WECHATPAY2-SHA256-RSA2048 mchid=\"1900009191\",nonce_str=\"593BEC0C930BF1AFEB40B4A08C8FB242\",signature=\"uOVRnA4qG/MNnYzdQxJanN+zU+lTgIcnU9BxGw5dKjK+VdEUz2FeIoC+D5sB/LN+nGzX3hfZg6r5wT1pl2ZobmIc6p0ldN7J6yDgUzbX8Uk3sD4a4eZVPTBvqNDoUqcYMlZ9uuDdCvNv4TM3c1WzsXUrExwVkI1XO5jCNbgDJ25nkT/c1gIFvqoogl7MdSFGc4W4xZsqCItnqbypR3RuGIlR9h9vlRsy7zJR9PBI83X8alLDIfR1ukt1P7tMnmogZ0cuDY8cZsd8ZlCgLadmvej58SLsIkVxFJ8XmUgx9ayqHS5dGVAwh8nE0uCnvSSdwDIx82f8JFvCKKLLS5MYUqSk2H5MYdSQw==\",timestamp=\"1554208460\",serial_no=\"1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C\"";

    #[test]
    fn parses_the_documentation_example_and_writes_it_back_identically() {
        let parsed = Authorization::parse(EXAMPLE).expect("the documented header parses");
        assert_eq!(parsed.mchid, "1900009191");
        assert_eq!(parsed.nonce_str, "593BEC0C930BF1AFEB40B4A08C8FB242");
        assert_eq!(parsed.timestamp, 1_554_208_460);
        assert_eq!(parsed.serial_no, "1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C");
        assert_eq!(parsed.header_value(), EXAMPLE);
    }

    #[test]
    fn accepts_the_go_sdk_parameter_order() {
        let reordered = "WECHATPAY2-SHA256-RSA2048 mchid=\"1900009191\",nonce_str=\"abc\",timestamp=\"1554208460\",serial_no=\"1DDE55AD\",signature=\"c2ln\"";
        let parsed = Authorization::parse(reordered).expect("any order is fine");
        assert_eq!(parsed.signature, "c2ln");
        assert_eq!(parsed.serial_no, "1DDE55AD");
    }

    #[test]
    fn refuses_malformed_headers() {
        let base = |params: &str| format!("{SCHEME} {params}");
        let full = "mchid=\"1900009191\",nonce_str=\"abc\",signature=\"c2ln\",timestamp=\"1554208460\",serial_no=\"1DDE55AD\"";
        let cases: Vec<(String, AuthorizationError)> = vec![
            (String::new(), AuthorizationError::WrongScheme),
            (full.to_owned(), AuthorizationError::WrongScheme),
            (format!("Bearer {full}"), AuthorizationError::WrongScheme),
            (
                format!("WECHATPAY2-SHA256-RSA2048{full}"),
                AuthorizationError::WrongScheme,
            ),
            (
                format!("wechatpay2-sha256-rsa2048 {full}"),
                AuthorizationError::WrongScheme,
            ),
            (
                base(
                    "mchid=\"1900009191\",nonce_str=\"abc\",signature=\"c2ln\",timestamp=\"1554208460\"",
                ),
                AuthorizationError::MissingParameter("serial_no"),
            ),
            (
                base(&format!("{full},mchid=\"1900009191\"")),
                AuthorizationError::DuplicateParameter("mchid"),
            ),
            (
                base(&format!("{full},realm=\"x\"")),
                AuthorizationError::UnknownParameter("realm".into()),
            ),
            (
                base(
                    "mchid=1900009191,nonce_str=\"abc\",signature=\"c2ln\",timestamp=\"1554208460\",serial_no=\"1DDE55AD\"",
                ),
                AuthorizationError::MalformedParameter("mchid=1900009191".into()),
            ),
            (
                base(
                    "mchid=\"1900009191\",nonce_str=\"a\"b\",signature=\"c2ln\",timestamp=\"1554208460\",serial_no=\"1DDE55AD\"",
                ),
                AuthorizationError::MalformedParameter("nonce_str=\"a\"b\"".into()),
            ),
            (
                base(
                    "mchid=\"1900009191\",nonce_str=\"abc\",signature=\"c2ln\",timestamp=\"-5\",serial_no=\"1DDE55AD\"",
                ),
                AuthorizationError::InvalidValue("timestamp"),
            ),
            (
                base(
                    "mchid=\"1900009191\",nonce_str=\"abc\",signature=\"c2ln\",timestamp=\"1554208460\",serial_no=\"\"",
                ),
                AuthorizationError::InvalidValue("serial_no"),
            ),
            (
                base(
                    "mchid=\"1900009191\",nonce_str=\"abc\",signature=\"not base64!\",timestamp=\"1554208460\",serial_no=\"1DDE55AD\"",
                ),
                AuthorizationError::InvalidValue("signature"),
            ),
            (
                base(
                    "mchid=\"\",nonce_str=\"abc\",signature=\"c2ln\",timestamp=\"1554208460\",serial_no=\"1DDE55AD\"",
                ),
                AuthorizationError::InvalidValue("mchid"),
            ),
            (
                base(""),
                AuthorizationError::MalformedParameter(String::new()),
            ),
            (
                base(&format!("{full},")),
                AuthorizationError::MalformedParameter(String::new()),
            ),
        ];
        for (header, expected) in cases {
            assert_eq!(Authorization::parse(&header), Err(expected), "{header:?}");
        }
    }

    #[test]
    fn the_clock_window_is_five_minutes_exclusive_in_both_directions() {
        let now = 1_700_000_000;
        assert_eq!(check_timestamp(now, now), Ok(()));
        assert_eq!(check_timestamp(now - 299, now), Ok(()));
        assert_eq!(check_timestamp(now + 299, now), Ok(()));
        assert_eq!(
            check_timestamp(now - 300, now),
            Err(VerifyError::StaleTimestamp {
                timestamp: now - 300,
                now
            })
        );
        assert_eq!(
            check_timestamp(now + 300, now),
            Err(VerifyError::FutureTimestamp {
                timestamp: now + 300,
                now
            })
        );
        assert!(check_timestamp(i64::MAX, i64::MIN).is_err());
        assert!(check_timestamp(0, i64::MAX).is_err());
    }

    #[test]
    fn messages_end_every_line_with_a_newline() {
        assert_eq!(
            request_message(&http::Method::GET, "/v3/x?mchid=1", 1, "n", b""),
            b"GET\n/v3/x?mchid=1\n1\nn\n\n"
        );
        assert_eq!(platform_message(1, "n", b""), b"1\nn\n\n");
        assert_eq!(platform_message(1, "n", b"{}"), b"1\nn\n{}\n");
    }
}
