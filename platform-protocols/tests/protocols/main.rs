//! The crate's one integration-test binary: every format held against a second
//! implementation (the `openssl` command line for RSA, published vectors and a
//! Python `cryptography` vector for AES-GCM), every refusal, every round trip.
//!
//! The `openssl` tests skip with a message if the command is missing; it is part
//! of the Debian image this project builds on.

mod alipay;
mod helpers;
mod keys;
mod wechatpay;
