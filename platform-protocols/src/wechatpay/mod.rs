//! WeChat Pay API v3 (微信支付 APIv3), direct-merchant Native payments and domestic
//! refunds, as both the merchant and the platform speak it.
//!
//! The rules, from WeChat Pay's pages "签名生成" (signature generation), "签名验证"
//! (signature verification), "回调通知" / "支付成功回调通知" (notifications),
//! "证书和回调报文解密" (decrypting resources), "Native下单", "商户订单号查询订单",
//! "关闭订单", "退款申请", "查询单笔退款" and "退款结果通知":
//!
//! **Requests are signed by the merchant** ([`signature`]). The signed message is
//! five lines, each ending in `\n` (the last one too):
//!
//! ```text
//! POST\n/v3/pay/transactions/native\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{"appid":...}\n
//! ```
//!
//! the upper-case method, the absolute path with its query string exactly as sent,
//! the Unix timestamp in seconds, a random nonce, and the body (empty for a GET, so
//! that line is just `\n`). It is signed with SHA256withRSA (RSASSA-PKCS1-v1_5 over
//! SHA-256) under the merchant's API certificate key, base64-encoded, and sent as
//!
//! ```text
//! Authorization: WECHATPAY2-SHA256-RSA2048 mchid="1900009191",nonce_str="593BEC0C930BF1AFEB40B4A08C8FB242",signature="uOVRnA4qG/...==",timestamp="1554208460",serial_no="1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C"
//! ```
//!
//! The documentation's example uses this order; WeChat Pay's own Go SDK sends
//! `mchid, nonce_str, timestamp, serial_no, signature`. The order carries no meaning,
//! so [`Authorization::parse`] accepts any order (each field exactly once) and
//! [`Authorization`]'s `Display` writes the documentation's.
//!
//! **Answers and notifications are signed by the platform.** The message is three
//! lines: timestamp, nonce, body, each ending in `\n` (a 204 answer's empty body is
//! a lone `\n`). The platform sends `Wechatpay-Timestamp`, `Wechatpay-Nonce`,
//! `Wechatpay-Signature` (base64), `Wechatpay-Serial` (which platform key signed:
//! a certificate serial number or a `PUB_KEY_ID_...` public key id) and
//! `Wechatpay-Signature-Type: WECHATPAY2-SHA256-RSA2048`. The merchant checks the
//! serial is the platform key it holds, that the timestamp is less than five
//! minutes (300 s) from its own clock in either direction (as WeChat Pay's SDKs do),
//! and the signature over the raw body bytes. WeChat Pay sometimes sends probes whose
//! signature starts with `WECHATPAY/SIGNTEST/`; those must fail, and do.
//!
//! **Notification resources are encrypted** ([`resource`]) with AEAD_AES_256_GCM:
//! the key is the merchant's 32-character APIv3 key, the 12-character `nonce` string
//! is the GCM nonce, `associated_data` is the AAD, and `ciphertext` is base64 of the
//! ciphertext with the 16-byte tag appended. The decrypted JSON is a
//! [`Transaction`] (`original_type` `transaction`) or a [`RefundNotification`]
//! (`original_type` `refund`). A merchant acknowledges a notification with HTTP 200
//! or 204 and no body, and refuses it with a 4xx/5xx and [`NotificationReply`]
//! (`{"code":"FAIL","message":"..."}`), after which WeChat Pay retries.
//!
//! **Amounts are integers in fen** (分), with a `currency` of `CNY`; merchant order
//! numbers are [`OutTradeNo`]: 6 to 32 characters of `[A-Za-z0-9_-|*]`.

pub mod api;
pub mod notification;
mod out_trade_no;
pub mod resource;
pub mod signature;

pub use api::{
    CloseRequest, ErrorBody, NativePrepayRequest, NativePrepayResponse, Payer, PrepayAmount,
    Refund, RefundAmount, RefundRequest, RefundRequestAmount, RefundStatus, TradeState, TradeType,
    Transaction, TransactionAmount, paths,
};
pub use notification::{
    EventType, Notification, NotificationPayload, NotificationReply, RefundNotification,
    RefundNotificationAmount,
};
pub use out_trade_no::{OutTradeNo, OutTradeNoError};
pub use resource::{EncryptedResource, ResourceError, decrypt_resource, encrypt_resource};
pub use signature::{
    Authorization, AuthorizationError, MerchantKey, MerchantSigner, PlatformKey, PlatformSignature,
    PlatformSigner, VerifyError, verify_platform_message,
};

/// The authentication scheme of the `Authorization` header and the value of
/// `Wechatpay-Signature-Type`.
pub const SCHEME: &str = "WECHATPAY2-SHA256-RSA2048";

/// `Wechatpay-Timestamp`: the Unix time (seconds) the platform signed.
pub const HEADER_TIMESTAMP: &str = "Wechatpay-Timestamp";
/// `Wechatpay-Nonce`: the random string in the signed message.
pub const HEADER_NONCE: &str = "Wechatpay-Nonce";
/// `Wechatpay-Signature`: the base64 SHA256withRSA signature.
pub const HEADER_SIGNATURE: &str = "Wechatpay-Signature";
/// `Wechatpay-Serial`: which platform key signed.
pub const HEADER_SERIAL: &str = "Wechatpay-Serial";
/// `Wechatpay-Signature-Type`: always [`SCHEME`] for RSA.
pub const HEADER_SIGNATURE_TYPE: &str = "Wechatpay-Signature-Type";

/// How far a signed timestamp may be from the verifier's clock, in seconds, in
/// either direction: a timestamp is accepted while `|now - timestamp| < 300`.
pub const MAX_CLOCK_SKEW_SECS: i64 = 300;

/// A fresh nonce for a request or an answer: 32 random ASCII letters and digits
/// (the length WeChat Pay's SDKs use).
pub fn generate_nonce() -> String {
    crate::crypto::random_alphanumeric(32)
}
