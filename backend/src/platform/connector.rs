//! What every connector speaks: how the checkout names a payment and a refund
//! to a platform, what a hand-over, a close or a bill can come back as, and
//! the HTTP client the connectors share.

use crate::config::PlatformKind;
use api_types::PlatformPaymentId;
use api_types::platform::PaymentState;
use uuid::Uuid;

/// What a hand-over left with us: the platform's payment id when it gives one
/// at once, and the code the shopper scans when the platform pays by QR code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandedOver {
    /// The platform's id for the payment (WeChat Pay and Alipay give none before it is paid).
    pub platform_payment_id: Option<PlatformPaymentId>,
    /// The payment link the page shows as a QR code (`code_url`, `qr_code`).
    pub qr_code: Option<String>,
}

/// A payment as the checkout names it to a platform: the order (the
/// platform's merchant order number) and our attempt's payment id (our
/// merchant reference for it).
#[derive(Debug, Clone, Copy)]
pub struct PaymentRef<'a> {
    /// The order.
    pub order_no: &'a str,
    /// Our payment id of the order's attempt.
    pub payment_id: Uuid,
}

impl<'a> PaymentRef<'a> {
    /// How the platform knows the payment of a claimed attempt.
    pub fn of(claimed: &'a crate::db::attempts::Claimed) -> Self {
        Self {
            order_no: &claimed.order_no,
            payment_id: claimed.payment_id,
        }
    }
}

/// A refund as the checkout names it to a platform.
#[derive(Debug, Clone, Copy)]
pub struct RefundRef<'a> {
    /// The order refunded.
    pub order_no: &'a str,
    /// Our refund number, the platform's idempotency key for it.
    pub refund_no: &'a str,
    /// The platform payment refunded (what an answer that leaves it out is about).
    pub payment_id: &'a PlatformPaymentId,
}

/// Why no daily bill could be had.
#[derive(Debug, thiserror::Error)]
pub enum BillError {
    /// The connector cannot download bills (yet).
    #[error(
        "PLATFORM={} cannot download daily bills yet: reconciliation needs PLATFORM=remote or sandbox",
        .0.as_str()
    )]
    NotSupported(PlatformKind),
    /// The platform answered that it will not give this bill (a 4xx).
    #[error("the platform refused the bill: {0}")]
    Refused(String),
    /// No usable answer (no connection, a timeout, a 5xx): try again later.
    #[error("the platform gave no bill: {0:#}")]
    NoAnswer(anyhow::Error),
}

/// The HTTP client every connector speaks to its platform with: a call that
/// gets no answer within 10 s is no answer (the hand-over stays UNKNOWN, a
/// query is asked again later).
///
/// Every request says who is calling ([`user_agent`]) and that it reads JSON
/// (`Accept: application/json`). WeChat Pay API v3 requires both on every
/// call and refuses a request without them (400 `INVALID_REQUEST`, "Http头缺少
/// Accept或User-Agent"), so they are the client's defaults, not something each
/// call has to remember.
pub(crate) fn http_client() -> reqwest::Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    reqwest::Client::builder()
        .user_agent(user_agent())
        .default_headers(headers)
        .timeout(std::time::Duration::from_secs(10))
        .build()
}

/// The product part of [`user_agent`]: `exactly-once-checkout/<version>`.
const PRODUCT: &str = concat!("exactly-once-checkout/", env!("CARGO_PKG_VERSION"));

/// What every platform request sends as `User-Agent`: the product and its
/// version, then the operating system and architecture, as WeChat Pay's API
/// v3 rules ask a client to identify itself (its own SDKs send e.g.
/// `WechatPay-Go/0.2.18 (linux/amd64) GO/go1.20`):
/// `exactly-once-checkout/0.1.0 (linux/x86_64)`.
pub fn user_agent() -> String {
    format!(
        "{PRODUCT} ({}/{})",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// Where the checkout's own protocol posts its callbacks.
pub const STANDARD_NOTIFY_PATH: &str = "/api/payments/callback";

/// What the platform answered to a close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseAnswer {
    /// The payment will not be taken: its state now (`CLOSED`, or `FAILED` when
    /// the platform had already refused it).
    Closed(PaymentState),
    /// The payment succeeded before the close arrived: it must be booked.
    AlreadyPaid,
    /// The platform has no payment by that reference: it was never handed over.
    NotFound,
}

/// A query or close that got no usable answer (no connection, a timeout, a
/// 5xx, a body that does not parse). Nothing is concluded from it; the worker
/// asks again later.
#[derive(Debug, thiserror::Error)]
#[error("the platform gave no usable answer: {0:#}")]
pub struct NoAnswer(pub(crate) anyhow::Error);

impl NoAnswer {
    pub(crate) fn from_error(err: impl Into<anyhow::Error>) -> Self {
        Self(err.into())
    }
}

/// Why a refund's hand-over did not end with the platform's acceptance.
#[derive(Debug, thiserror::Error)]
pub enum RefundHandOverError {
    /// The platform answered that it will not make this refund (a 4xx: the
    /// payment is unknown to it, not refundable, or the amount exceeds it).
    #[error("refused by the platform: {0}")]
    Refused(String),
    /// No answer, or one that may change: the dispatcher hands it over again.
    #[error("outcome unknown: {0:#}")]
    Unknown(anyhow::Error),
}

/// Why a hand-over did not end with the platform's acceptance.
#[derive(Debug, thiserror::Error)]
pub enum HandOverError {
    /// No answer, or a 5xx: the platform may or may not have the payment.
    /// The attempt becomes `UNKNOWN` and is sent again with the same key.
    #[error("outcome unknown: {0:#}")]
    Unknown(anyhow::Error),
    /// A 4xx: the platform did not take it (our request was wrong). The attempt
    /// stays `CREATED` and is sent again; a person should look at the log.
    #[error("refused: {0}")]
    Refused(String),
}
