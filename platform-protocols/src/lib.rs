//! The wire protocols of the two real payment platforms, WeChat Pay (API v3) and
//! Alipay (open platform, RSA2), written once for both sides of the wire.
//!
//! The backend's connectors are clients: they sign requests, verify the platform's
//! answers and notifications, and decrypt WeChat Pay's notification resources. The
//! simulator (`tools/platform-sim`) is the server: it verifies merchant signatures,
//! signs answers and notifications, and encrypts resources. Both call the same
//! functions here, so a change to a format changes both sides at once, and the tests
//! here hold each format to a second implementation (the `openssl` command line).
//!
//! - [`keys`]: RSA keys from PEM (PKCS#8, PKCS#1, SPKI), the WeChat Pay APIv3 key,
//!   and [`keys::generate`], which writes a matching key set for local runs.
//! - [`wechatpay`]: the `WECHATPAY2-SHA256-RSA2048` request signature and its
//!   `Authorization` header, the `Wechatpay-*` response and notification headers,
//!   `AEAD_AES_256_GCM` resources, and the serde types of the calls we make.
//! - [`alipay`]: the RSA2 signature over sorted parameters, the exact-bytes response
//!   signature, form-encoded notifications, and the serde types of the calls we make.
//! - [`money`]: yuan strings (`"12.50"`) to integer fen and back, never through floats.
//!
//! There is no HTTP server, no database and no async runtime here: only pure
//! functions and types. All cryptography comes from RustCrypto (`rsa`, `sha2`,
//! `aes-gcm`) and all encodings from kept libraries (`base64`, `serde_json`,
//! `serde_urlencoded`); nothing is hand-rolled. Private keys and the APIv3 key never
//! appear in `Debug` output or error messages.

#![warn(missing_docs)]

pub mod alipay;
mod crypto;
pub mod keys;
pub mod money;
pub mod wechatpay;

pub use keys::{ApiV3Key, KeyError, PrivateKey, PublicKey};
pub use money::{MoneyError, Yuan};
