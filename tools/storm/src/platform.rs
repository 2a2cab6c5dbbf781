//! Signs and delivers callbacks as a payment platform does, in the format of
//! the platform the backend speaks ([`PlatformKind`]): the checkout's own
//! Standard Webhooks (re-signed with a fresh timestamp at each delivery, same
//! id and body), WeChat Pay API v3 notifications (the same notification `id`
//! and content, encrypted afresh and signed with the platform key at each
//! delivery) or Alipay's form notifications (the same `notify_id`, a fresh
//! `notify_time` and RSA2 signature at each delivery). One [`Notifier`] per
//! platform encodes a [`Callback`] and judges the answer by that platform's
//! rule; the [`Sender`] and the delivery loop are the same for all.
//!
//! And [`OutsidePlatform`]: a platform-sim that decides payments and refunds
//! but posts no callbacks, outside the backend, so it outlives the backend's
//! restarts; for WeChat Pay and Alipay it holds the [`KeySet`] both sides use,
//! and its book gives the transaction id that only arrives with the result.

use crate::shop::{HandedOverRefund, PaidOrder};
use api_types::Currency;
use api_types::api::CallbackType;
use api_types::platform::PaymentStatus;
use callback_signing::{CallbackSecret, PaymentResult, RefundResult};
use platform_protocols::alipay::{self as ali, TradeNotification, TradeStatus};
use platform_protocols::keys::{self, ApiV3Key, LocalKeys, PrivateKey};
use platform_protocols::money::Yuan;
use platform_protocols::wechatpay::{
    EventType, Notification, NotificationPayload, OutTradeNo, PlatformSigner, RefundNotification,
    RefundNotificationAmount, RefundStatus as WechatRefundStatus, TradeState, TradeType,
    Transaction, TransactionAmount, generate_nonce, resource::generate_resource_nonce,
};
use std::path::{Path, PathBuf};
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

/// Which platform's notifications a run sends (`storm --platform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PlatformKind {
    /// The checkout's own Standard Webhooks callbacks at `/api/payments/callback`.
    #[default]
    Standard,
    /// WeChat Pay API v3 notifications at `/api/payments/callback/wechatpay`.
    Wechatpay,
    /// Alipay form notifications at `/api/payments/callback/alipay`.
    Alipay,
}

impl PlatformKind {
    /// Its name, as `--platform` and the backend's `PLATFORM` say it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Wechatpay => "wechatpay",
            Self::Alipay => "alipay",
        }
    }

    /// What its callbacks are called, for the report.
    pub const fn callbacks(self) -> &'static str {
        match self {
            Self::Standard => "callbacks",
            Self::Wechatpay => "WeChat Pay notifications",
            Self::Alipay => "Alipay notifications",
        }
    }

    /// What its refund results are called, for the report.
    pub const fn refund_callbacks(self) -> &'static str {
        match self {
            Self::Standard => "refund.succeeded callbacks",
            Self::Wechatpay => "WeChat Pay REFUND.SUCCESS notifications",
            Self::Alipay => "Alipay refund notifications",
        }
    }

    /// The currency of the run's shopper and orders: WeChat Pay and Alipay take CNY only.
    pub const fn currency(self) -> Currency {
        match self {
            Self::Standard => Currency::EUR,
            Self::Wechatpay | Self::Alipay => Currency::CNY,
        }
    }

    /// What counts as an acknowledgment, for the report.
    pub const fn acknowledgment(self) -> &'static str {
        match self {
            Self::Standard => "answered 200",
            Self::Wechatpay => "acknowledged (WeChat Pay: 200 or 204)",
            Self::Alipay => "acknowledged (Alipay: 200 with the body `success`)",
        }
    }

    /// The path on the backend its notifications are posted to.
    pub const fn callback_path(self) -> &'static str {
        match self {
            Self::Standard => "/api/payments/callback",
            Self::Wechatpay => "/api/payments/callback/wechatpay",
            Self::Alipay => "/api/payments/callback/alipay",
        }
    }

    /// Where platform-sim's book keeps the merchant's order numbers (the
    /// `merchant_reference` prefix), for the platforms that give the
    /// transaction id only with the result.
    pub const fn book_prefix(self) -> Option<&'static str> {
        match self {
            Self::Standard => None,
            Self::Wechatpay => Some("wechatpay:"),
            Self::Alipay => Some("alipay:"),
        }
    }
}

/// The merchant ids a started backend and storm's platform-sim share.
pub const WECHATPAY_MCHID: &str = "1900009191";
/// The WeChat Pay app id bound to [`WECHATPAY_MCHID`].
pub const WECHATPAY_APPID: &str = "wxd678efh567hg6787";
/// The Alipay application id.
pub const ALIPAY_APP_ID: &str = "2021000000000001";

/// What a notification says, in its platform's terms; encoded afresh at each delivery.
#[derive(Debug, Clone)]
pub enum Message {
    /// A Standard Webhooks callback: its exact JSON body, identical at every delivery.
    Standard {
        /// The JSON body.
        body: String,
    },
    /// A WeChat Pay notification (`TRANSACTION.SUCCESS`, `REFUND.SUCCESS`):
    /// the content to encrypt.
    Wechat {
        /// When the notification was made (the envelope's `create_time`).
        created: OffsetDateTime,
        /// Its event type.
        event: EventType,
        /// The decrypted resource.
        payload: Box<NotificationPayload>,
    },
    /// Alipay's `trade_status_sync`, `notify_time` renewed at each delivery.
    Alipay(Box<TradeNotification>),
}

/// One callback: its id (`webhook-id`, WeChat Pay's notification `id`,
/// Alipay's `notify_id`) and content, the same at every delivery.
#[derive(Debug, Clone)]
pub struct Callback {
    /// The platform's id for the notification: the backend's idempotency key.
    pub id: String,
    /// What it says.
    pub message: Message,
    /// The order it is about (paid, or refunded).
    pub order_no: String,
}

impl Callback {
    /// The platform's `payment.succeeded` callback for a payment the shopper
    /// made: it names the order, our payment id (as the merchant reference the
    /// platform echoes) and the platform's payment id, as a real platform's does.
    pub fn success(paid: &PaidOrder, amount_cents: i64, currency: Currency) -> Self {
        let merchant_reference = paid.payment_id.to_string();
        let body = callback_signing::event_body(
            &PaymentResult {
                kind: CallbackType::PaymentSucceeded,
                order_no: &paid.order_no,
                amount_cents,
                currency,
                payment_id: &paid.platform_payment_id,
                merchant_reference: Some(&merchant_reference),
            },
            OffsetDateTime::now_utc(),
        );
        Self::standard(&paid.order_no, &body)
    }

    /// The platform's `refund.succeeded` callback for a refund it accepted:
    /// it names the order, the refunded payment (the platform's id, and ours
    /// as the merchant reference it echoes), our refund number and the
    /// platform's id for the refund, as a real platform's does.
    pub fn refund_success(refund: &HandedOverRefund, paid: &PaidOrder) -> Self {
        let merchant_reference = paid.payment_id.to_string();
        let body = callback_signing::refund_event_body(
            &RefundResult {
                kind: CallbackType::RefundSucceeded,
                order_no: &refund.order_no,
                amount_cents: refund.amount_cents,
                currency: refund.currency,
                payment_id: &refund.platform_payment_id,
                refund_no: &refund.refund_no,
                refund_id: &refund.platform_refund_id,
                merchant_reference: Some(&merchant_reference),
            },
            OffsetDateTime::now_utc(),
        );
        Self::standard(&refund.order_no, &body)
    }

    fn standard(order_no: &str, body: &[u8]) -> Self {
        Self {
            id: format!("evt_{}", Uuid::new_v4().simple()),
            message: Message::Standard {
                body: String::from_utf8_lossy(body).into_owned(),
            },
            order_no: order_no.to_owned(),
        }
    }
}

/// A platform's notification side: what it signs with, how it words a
/// payment's success, and what counts as an acknowledgment.
#[derive(Clone)]
pub enum Notifier {
    /// Standard Webhooks, signed with the backend's `WEBHOOK_SECRET`.
    Standard(CallbackSecret),
    /// WeChat Pay API v3 for one merchant.
    Wechatpay(Box<WechatPayNotifier>),
    /// Alipay for one application.
    Alipay(Box<AlipayNotifier>),
}

/// WeChat Pay's notification keys and the merchant they are for.
#[derive(Clone)]
pub struct WechatPayNotifier {
    /// The merchant.
    pub mchid: String,
    /// Its app.
    pub appid: String,
    /// Signs the envelope (`Wechatpay-*` headers) with the platform key.
    pub signer: PlatformSigner,
    /// Encrypts the resource.
    pub apiv3_key: ApiV3Key,
}

/// Alipay's notification key and the application it is for.
#[derive(Clone)]
pub struct AlipayNotifier {
    /// The application.
    pub app_id: String,
    /// The Alipay private key (the backend verifies with its public half).
    pub key: PrivateKey,
}

impl AlipayNotifier {
    /// A `trade_status_sync` notification `id` made at `now` about the trade
    /// `trade_no` of `paid`'s order, standing at `status`, of `total_cents`
    /// (in yuan), with our payment id passed back (`passback_params`).
    fn trade(
        &self,
        id: &str,
        now: OffsetDateTime,
        paid: &PaidOrder,
        trade_no: &str,
        status: TradeStatus,
        total_cents: i64,
    ) -> anyhow::Result<TradeNotification> {
        let mut notification = TradeNotification::new(
            id,
            &ali::format_timestamp(now),
            &self.app_id,
            trade_no,
            &paid.order_no,
        );
        notification.trade_status = Some(status);
        notification.total_amount = Some(Yuan::from_fen(total_cents)?);
        notification.passback_params = Some(paid.payment_id.to_string());
        Ok(notification)
    }
}

/// One delivery, encoded: what to post.
struct Encoded {
    content_type: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Notifier {
    /// Standard Webhooks with `secret` (`whsec_...`).
    pub fn standard(secret: &str) -> anyhow::Result<Self> {
        Ok(Self::Standard(CallbackSecret::parse(secret).map_err(
            |err| anyhow::anyhow!("bad webhook secret: {err}"),
        )?))
    }

    /// The platform it speaks for.
    pub fn kind(&self) -> PlatformKind {
        match self {
            Self::Standard(_) => PlatformKind::Standard,
            Self::Wechatpay(_) => PlatformKind::Wechatpay,
            Self::Alipay(_) => PlatformKind::Alipay,
        }
    }

    /// The success of a paid order, in this platform's words: Standard
    /// Webhooks `payment.succeeded`, WeChat Pay `TRANSACTION.SUCCESS`
    /// (`transaction_id` the platform's id, `attach` our payment id), Alipay
    /// `TRADE_SUCCESS` (`trade_no` the platform's id, the amount in yuan,
    /// `passback_params` our payment id).
    pub fn success(
        &self,
        paid: &PaidOrder,
        amount_cents: i64,
        currency: Currency,
    ) -> anyhow::Result<Callback> {
        let now = OffsetDateTime::now_utc();
        let id = Uuid::new_v4().simple().to_string();
        let message = match self {
            Self::Standard(_) => return Ok(Callback::success(paid, amount_cents, currency)),
            Self::Wechatpay(wechat) => Message::Wechat {
                created: now,
                event: EventType::TransactionSuccess,
                payload: Box::new(NotificationPayload::Transaction(Transaction {
                    appid: wechat.appid.clone(),
                    mchid: wechat.mchid.clone(),
                    out_trade_no: out_trade_no(&paid.order_no)?,
                    transaction_id: Some(paid.platform_payment_id.clone()),
                    trade_type: Some(TradeType::Native),
                    trade_state: TradeState::Success,
                    trade_state_desc: "支付成功".into(),
                    bank_type: Some("OTHERS".into()),
                    attach: Some(paid.payment_id.to_string()),
                    success_time: Some(now),
                    payer: None,
                    amount: TransactionAmount {
                        total: amount_cents,
                        payer_total: Some(amount_cents),
                        currency,
                        payer_currency: Some(currency),
                    },
                })),
            },
            Self::Alipay(alipay) => {
                let mut notification = alipay.trade(
                    &id,
                    now,
                    paid,
                    &paid.platform_payment_id,
                    TradeStatus::TradeSuccess,
                    amount_cents,
                )?;
                notification.receipt_amount = notification.total_amount;
                notification.buyer_pay_amount = notification.total_amount;
                notification.subject = Some(format!("Order {}", paid.order_no));
                notification.gmt_payment = Some(ali::format_timestamp(now));
                Message::Alipay(Box::new(notification))
            }
        };
        Ok(Callback {
            id,
            message,
            order_no: paid.order_no.clone(),
        })
    }

    /// The success of a refund the platform accepted, in this platform's
    /// words: Standard Webhooks `refund.succeeded`, WeChat Pay `REFUND.SUCCESS`
    /// (`out_refund_no` our refund number, `refund_id` the platform's), Alipay
    /// `trade_status_sync` with `out_biz_no` our refund number and
    /// `refund_fee` the trade's refunded total (the run refunds each order
    /// once, in full: the refund's amount), the trade `TRADE_CLOSED`.
    pub fn refund_success(
        &self,
        refund: &HandedOverRefund,
        paid: &PaidOrder,
    ) -> anyhow::Result<Callback> {
        let now = OffsetDateTime::now_utc();
        let id = Uuid::new_v4().simple().to_string();
        let message = match self {
            Self::Standard(_) => return Ok(Callback::refund_success(refund, paid)),
            Self::Wechatpay(wechat) => Message::Wechat {
                created: now,
                event: EventType::RefundSuccess,
                payload: Box::new(NotificationPayload::Refund(RefundNotification {
                    mchid: wechat.mchid.clone(),
                    out_trade_no: out_trade_no(&refund.order_no)?,
                    transaction_id: refund.platform_payment_id.clone(),
                    out_refund_no: refund.refund_no.clone(),
                    refund_id: refund.platform_refund_id.clone(),
                    refund_status: WechatRefundStatus::Success,
                    success_time: Some(now),
                    user_received_account: Some("支付用户零钱".into()),
                    amount: RefundNotificationAmount {
                        total: refund.amount_cents,
                        refund: refund.amount_cents,
                        payer_total: refund.amount_cents,
                        payer_refund: refund.amount_cents,
                    },
                })),
            },
            Self::Alipay(alipay) => {
                let mut notification = alipay.trade(
                    &id,
                    now,
                    paid,
                    &refund.platform_payment_id,
                    TradeStatus::TradeClosed,
                    refund.amount_cents,
                )?;
                notification.out_biz_no = Some(refund.refund_no.clone());
                notification.refund_fee = notification.total_amount;
                notification.gmt_refund = Some(ali::format_timestamp(now));
                Message::Alipay(Box::new(notification))
            }
        };
        Ok(Callback {
            id,
            message,
            order_no: refund.order_no.clone(),
        })
    }

    /// One delivery of `callback`, signed (and for WeChat Pay encrypted) now.
    fn encode(&self, callback: &Callback) -> anyhow::Result<Encoded> {
        let now = OffsetDateTime::now_utc();
        match (self, &callback.message) {
            (Self::Standard(secret), Message::Standard { body }) => {
                let signed = secret
                    .sign_now(&callback.id, body.as_bytes())
                    .map_err(|err| anyhow::anyhow!("cannot sign: {err}"))?;
                Ok(Encoded {
                    content_type: "application/json",
                    headers: signed.pairs().to_vec(),
                    body: body.clone().into_bytes(),
                })
            }
            (
                Self::Wechatpay(wechat),
                Message::Wechat {
                    created,
                    event,
                    payload,
                },
            ) => {
                let envelope = Notification::encrypt(
                    &callback.id,
                    *created,
                    *event,
                    payload,
                    &wechat.apiv3_key,
                    &generate_resource_nonce(),
                )?;
                let body = serde_json::to_vec(&envelope)?;
                let signature = wechat
                    .signer
                    .sign(&body, now.unix_timestamp(), &generate_nonce());
                Ok(Encoded {
                    content_type: "application/json",
                    headers: signature.header_pairs().to_vec(),
                    body,
                })
            }
            (Self::Alipay(alipay), Message::Alipay(notification)) => {
                let mut notification = notification.as_ref().clone();
                notification.notify_time = ali::format_timestamp(now);
                let form = ali::sign_notification(&notification, &alipay.key)?;
                Ok(Encoded {
                    content_type: "application/x-www-form-urlencoded; charset=utf-8",
                    headers: Vec::new(),
                    body: form.into_bytes(),
                })
            }
            (notifier, _) => anyhow::bail!(
                "a {} notifier cannot send callback {} in another format",
                notifier.kind().as_str(),
                callback.id
            ),
        }
    }

    /// The answer as this platform reads it: acknowledged only by the
    /// platform's own rule (the checkout's 200; WeChat Pay's 200 or 204;
    /// Alipay's 200 with the body exactly `success`).
    async fn judge(&self, response: reqwest::Response) -> Answer {
        let status = response.status().as_u16();
        let acknowledged = match self {
            Self::Standard(_) => status == 200,
            Self::Wechatpay(_) => matches!(status, 200 | 204),
            Self::Alipay(_) => {
                status == 200
                    && response
                        .text()
                        .await
                        .is_ok_and(|body| body == ali::NOTIFY_SUCCESS)
            }
        };
        match (acknowledged, status) {
            (true, _) => Answer::Status(status),
            (false, 200..=299) => Answer::Unacknowledged(status),
            (false, _) => Answer::Status(status),
        }
    }
}

/// An order number as WeChat Pay's `out_trade_no`.
fn out_trade_no(order_no: &str) -> anyhow::Result<OutTradeNo> {
    OutTradeNo::parse(order_no)
        .map_err(|err| anyhow::anyhow!("order {order_no} is no out_trade_no: {err}"))
}

/// A key set for a real platform written to a directory of its own (as
/// `platform-sim keys DIR` writes one), shared by a started backend (its
/// files) and storm (its platform-sim and its notifications). The directory
/// is removed when dropped.
pub struct KeySet {
    dir: PathBuf,
    keys: LocalKeys,
}

impl KeySet {
    /// Generates a fresh set into a new directory under the system's temp dir.
    pub fn generate() -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("storm-keys-{}", Uuid::new_v4().simple()));
        let keys = keys::generate(&dir)?;
        Ok(Self { dir, keys })
    }

    /// Where the files are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The backend's settings for `kind` against platform-sim at `sim_url`:
    /// WECHATPAY_* or ALIPAY_* (nothing for the standard platform).
    pub fn backend_env(&self, kind: PlatformKind, sim_url: &str) -> Vec<(String, String)> {
        let file = |name: &str| self.dir.join(name).display().to_string();
        let pairs: Vec<(&str, String)> = match kind {
            PlatformKind::Standard => Vec::new(),
            PlatformKind::Wechatpay => vec![
                (backend::env::WECHATPAY_API_URL, sim_url.to_owned()),
                (backend::env::WECHATPAY_MCHID, WECHATPAY_MCHID.to_owned()),
                (backend::env::WECHATPAY_APPID, WECHATPAY_APPID.to_owned()),
                (
                    backend::env::WECHATPAY_MERCHANT_KEY_FILE,
                    file(keys::MERCHANT_PRIVATE_KEY_FILE),
                ),
                (
                    backend::env::WECHATPAY_MERCHANT_SERIAL,
                    self.keys.merchant_serial_no.clone(),
                ),
                (
                    backend::env::WECHATPAY_PLATFORM_PUBLIC_KEY_FILE,
                    file(keys::PLATFORM_PUBLIC_KEY_FILE),
                ),
                (
                    backend::env::WECHATPAY_PLATFORM_SERIAL,
                    self.keys.platform_serial_no.clone(),
                ),
                (
                    backend::env::WECHATPAY_APIV3_KEY_FILE,
                    file(keys::WECHATPAY_APIV3_KEY_FILE),
                ),
            ],
            PlatformKind::Alipay => vec![
                (
                    backend::env::ALIPAY_GATEWAY_URL,
                    format!("{sim_url}{}", platform_sim::alipay::GATEWAY_PATH),
                ),
                (backend::env::ALIPAY_APP_ID, ALIPAY_APP_ID.to_owned()),
                (
                    backend::env::ALIPAY_APP_PRIVATE_KEY_FILE,
                    file(keys::MERCHANT_PRIVATE_KEY_FILE),
                ),
                (
                    backend::env::ALIPAY_PUBLIC_KEY_FILE,
                    file(keys::PLATFORM_PUBLIC_KEY_FILE),
                ),
            ],
        };
        pairs
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect()
    }

    /// The notifier of `kind` with the platform's keys of this set; the
    /// standard platform signs with `secret` instead.
    pub fn notifier(&self, kind: PlatformKind, secret: &str) -> anyhow::Result<Notifier> {
        Ok(match kind {
            PlatformKind::Standard => Notifier::standard(secret)?,
            PlatformKind::Wechatpay => Notifier::Wechatpay(Box::new(WechatPayNotifier {
                mchid: WECHATPAY_MCHID.into(),
                appid: WECHATPAY_APPID.into(),
                signer: PlatformSigner {
                    serial: self.keys.platform_serial_no.clone(),
                    key: self.keys.platform_private.clone(),
                },
                apiv3_key: self.keys.apiv3_key.clone(),
            })),
            PlatformKind::Alipay => Notifier::Alipay(Box::new(AlipayNotifier {
                app_id: ALIPAY_APP_ID.into(),
                key: self.keys.platform_private.clone(),
            })),
        })
    }
}

impl Drop for KeySet {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `platform-sim` served by this process: it takes payments and refunds,
/// decides each 100 ms after it is handed over, and posts no callbacks
/// (chaos `drop_callbacks`), so the run's callbacks are the ones that book.
/// Unlike the backend's in-process sandbox it outlives the backend's
/// restarts, as a real platform does: a refund of a payment made before a
/// restart finds that payment. With a [`KeySet`] it also speaks WeChat Pay
/// (`/v3`) or Alipay (`/gateway.do`) for the set's merchant. Stops serving
/// when dropped.
pub struct OutsidePlatform {
    url: String,
    simulator: platform_sim::Simulator,
    server: tokio::task::JoinHandle<()>,
}

impl OutsidePlatform {
    /// Serves it on a free local port, signing with `secret` (`whsec_...`);
    /// speaking `kind` too with the keys of `keys` (needed unless `kind` is standard).
    pub async fn start(
        secret: &str,
        kind: PlatformKind,
        keys: Option<&KeySet>,
    ) -> anyhow::Result<Self> {
        let mut config = platform_sim::SimConfig {
            secret: CallbackSecret::parse(secret)
                .map_err(|err| anyhow::anyhow!("bad webhook secret: {err}"))?,
            processing_delay: Duration::from_millis(100),
            chaos: platform_sim::Chaos {
                drop_callbacks: true,
                ..platform_sim::Chaos::default()
            },
            ..platform_sim::SimConfig::default()
        };
        match (kind, keys) {
            (PlatformKind::Standard, _) => {}
            (PlatformKind::Wechatpay, Some(set)) => {
                config.wechatpay = Some(platform_sim::WechatPayConfig::from_keys(
                    WECHATPAY_MCHID,
                    WECHATPAY_APPID,
                    &set.keys,
                ));
            }
            (PlatformKind::Alipay, Some(set)) => {
                config.alipay = Some(platform_sim::AlipayConfig {
                    // The refund period outlasts the run: a finished trade
                    // (TRADE_FINISHED) takes no refunds any more.
                    trade_finished_after: Duration::from_secs(86_400),
                    ..platform_sim::AlipayConfig::from_keys(ALIPAY_APP_ID, &set.keys)
                });
            }
            (kind, None) => {
                anyhow::bail!("platform-sim needs a key set to speak {}", kind.as_str())
            }
        }
        let simulator = platform_sim::Simulator::try_new(config)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let router = simulator.router();
        let server = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, router).await {
                eprintln!("platform-sim stopped serving: {err}");
            }
        });
        Ok(Self {
            url,
            simulator,
            server,
        })
    }

    /// Its book, for a run to read the ids a real platform gives only with the result.
    pub fn simulator(&self) -> &platform_sim::Simulator {
        &self.simulator
    }

    /// Its base URL, the backend's `PLATFORM_URL`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Waits until it has decided every payment of `paid` SUCCEEDED (a refund
    /// of a payment still PROCESSING is refused), for at most `deadline`.
    pub async fn wait_succeeded(
        &self,
        paid: &[PaidOrder],
        deadline: Duration,
    ) -> anyhow::Result<()> {
        let started = tokio::time::Instant::now();
        loop {
            let undecided: Vec<&str> = paid
                .iter()
                .filter(|order| {
                    self.simulator
                        .payment(&order.platform_payment_id)
                        .is_none_or(|payment| payment.status != PaymentStatus::Succeeded)
                })
                .map(|order| order.platform_payment_id.as_str())
                .collect();
            if undecided.is_empty() {
                return Ok(());
            }
            anyhow::ensure!(
                started.elapsed() < deadline,
                "the platform did not decide {} of {} payments SUCCEEDED within {deadline:?}: {undecided:?}",
                undecided.len(),
                paid.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for OutsidePlatform {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// What one delivery got back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Answer {
    /// An HTTP status: an acknowledgment when 2xx (the platform stops
    /// delivering), a refusal otherwise.
    Status(u16),
    /// A 2xx the platform does not take for an acknowledgment (Alipay: a 200
    /// whose body is not exactly `success`; WeChat Pay: other than 200 or 204;
    /// the checkout's own: other than 200): it delivers again.
    Unacknowledged(u16),
    /// No HTTP answer (refused, reset, timed out).
    NoAnswer,
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Status(code) => write!(f, "{code}"),
            Self::Unacknowledged(code) => write!(f, "{code} (not an acknowledgment)"),
            Self::NoAnswer => f.write_str("no answer"),
        }
    }
}

impl Answer {
    /// An acknowledgment: the platform would stop retrying.
    pub fn is_success(self) -> bool {
        matches!(self, Self::Status(200..=299))
    }
}

/// A sender of signed callbacks, in one platform's format ([`Notifier`]).
#[derive(Clone)]
pub struct Sender {
    http: reqwest::Client,
    notifier: Notifier,
    callback_url: String,
}

impl Sender {
    /// Signs with `secret` (`whsec_...`) and posts to `{backend_url}/api/payments/callback`,
    /// giving up on a delivery after 30 s.
    pub fn new(backend_url: &str, secret: &str) -> anyhow::Result<Self> {
        Self::with_timeout(backend_url, secret, Duration::from_secs(30))
    }

    /// The same, giving up on a delivery after `timeout` (real platforms wait about 5 s).
    pub fn with_timeout(
        backend_url: &str,
        secret: &str,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Self::for_platform(backend_url, Notifier::standard(secret)?, timeout)
    }

    /// Sends `notifier`'s platform's notifications to their path on
    /// `backend_url`, giving up on a delivery after `timeout`.
    pub fn for_platform(
        backend_url: &str,
        notifier: Notifier,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(256)
            // The backend closes a kept-alive connection that sends nothing for
            // HEADER_READ_TIMEOUT (10 s): a retry 10 s after the last answer
            // could go out on a connection closing at that very moment and get
            // no answer. Idle connections are dropped well before.
            .pool_idle_timeout(backend::startup::HEADER_READ_TIMEOUT / 2)
            .build()?;
        Ok(Self {
            http,
            callback_url: format!(
                "{}{}",
                backend_url.trim_end_matches('/'),
                notifier.kind().callback_path()
            ),
            notifier,
        })
    }

    /// The same sender (platform, timeout, connection pool) posting to another
    /// backend URL: a restarted backend's.
    pub fn to(&self, backend_url: &str) -> Self {
        Self {
            http: self.http.clone(),
            callback_url: format!(
                "{}{}",
                backend_url.trim_end_matches('/'),
                self.notifier.kind().callback_path()
            ),
            notifier: self.notifier.clone(),
        }
    }

    /// Delivers once, signed (and encrypted) afresh.
    pub async fn deliver(&self, callback: &Callback) -> Answer {
        let Ok(encoded) = self.notifier.encode(callback) else {
            return Answer::NoAnswer;
        };
        let mut request = self
            .http
            .post(&self.callback_url)
            .header("content-type", encoded.content_type);
        for (name, value) in encoded.headers {
            request = request.header(name, value);
        }
        match request.body(encoded.body).send().await {
            Ok(response) => self.notifier.judge(response).await,
            Err(_) => Answer::NoAnswer,
        }
    }

    /// Delivers until acknowledged, as a platform's retry loop would, waiting `pause`
    /// between tries, for at most `deadline`. Returns every answer.
    pub async fn deliver_until_acknowledged(
        &self,
        callback: &Callback,
        pause: Duration,
        deadline: Duration,
    ) -> Vec<Answer> {
        let started = tokio::time::Instant::now();
        let mut answers = Vec::new();
        loop {
            let answer = self.deliver(callback).await;
            answers.push(answer);
            if answer.is_success() || started.elapsed() > deadline {
                return answers;
            }
            tokio::time::sleep(pause).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform_protocols::wechatpay::{PlatformKey, verify_platform_message};

    fn paid() -> PaidOrder {
        PaidOrder {
            order_no: "ord_0123456789abcdef0123456789ab".into(),
            payment_id: Uuid::new_v4(),
            platform_payment_id: "pay_4200000991202612036853086457".into(),
        }
    }

    fn headers(encoded: &Encoded) -> axum::http::HeaderMap {
        let mut map = axum::http::HeaderMap::new();
        for (name, value) in &encoded.headers {
            map.insert(*name, value.parse().expect("a header value"));
        }
        map
    }

    #[test]
    fn every_wechat_pay_copy_is_encrypted_afresh_and_reads_as_the_same_success() {
        let keys = KeySet::generate().expect("a key set");
        let notifier = keys
            .notifier(PlatformKind::Wechatpay, "")
            .expect("a notifier");
        let order = paid();
        let callback = notifier
            .success(&order, 4_999, Currency::CNY)
            .expect("a callback");
        let platform = PlatformKey {
            serial: keys.keys.platform_serial_no.clone(),
            public_key: keys.keys.platform_public.clone(),
        };
        let (first, second) = (
            notifier.encode(&callback).expect("encoded"),
            notifier.encode(&callback).expect("encoded"),
        );
        assert_ne!(first.body, second.body, "a fresh nonce and ciphertext");
        for encoded in [&first, &second] {
            let now = OffsetDateTime::now_utc().unix_timestamp();
            verify_platform_message(&headers(encoded), &encoded.body, &platform, now)
                .expect("signed with the platform key");
            let envelope: Notification =
                serde_json::from_slice(&encoded.body).expect("an envelope");
            assert_eq!(envelope.id, callback.id, "the same notification id");
            let NotificationPayload::Transaction(transaction) = envelope
                .decrypt(&keys.keys.apiv3_key)
                .expect("decrypts with the APIv3 key")
            else {
                panic!("a transaction");
            };
            assert_eq!(transaction.mchid, WECHATPAY_MCHID);
            assert_eq!(transaction.appid, WECHATPAY_APPID);
            assert_eq!(
                transaction.transaction_id.as_deref(),
                Some(order.platform_payment_id.as_str())
            );
            assert_eq!(
                transaction.attach.as_deref(),
                Some(order.payment_id.to_string().as_str())
            );
            assert_eq!(transaction.amount.total, 4_999);
            assert_eq!(transaction.amount.currency, Currency::CNY);
            assert!(matches!(transaction.trade_state, TradeState::Success));
        }
        assert_eq!(
            keys.backend_env(PlatformKind::Wechatpay, "http://127.0.0.1:1")
                .len(),
            8,
            "every WECHATPAY_* setting"
        );
    }

    #[test]
    fn an_alipay_notification_is_a_signed_form_with_the_same_notify_id_every_time() {
        let keys = KeySet::generate().expect("a key set");
        let dir = keys.dir().to_owned();
        let notifier = keys.notifier(PlatformKind::Alipay, "").expect("a notifier");
        let order = paid();
        let callback = notifier
            .success(&order, 4_999, Currency::CNY)
            .expect("a callback");
        for _ in 0..2 {
            let encoded = notifier.encode(&callback).expect("encoded");
            assert!(
                encoded
                    .content_type
                    .starts_with("application/x-www-form-urlencoded")
            );
            let form = String::from_utf8(encoded.body).expect("text");
            let notification =
                ali::verify_notification(&form, ALIPAY_APP_ID, &keys.keys.platform_public)
                    .expect("signed RSA2 with the platform key");
            assert_eq!(notification.notify_id, callback.id);
            assert_eq!(notification.notify_type, "trade_status_sync");
            assert_eq!(notification.trade_no, order.platform_payment_id);
            assert_eq!(notification.out_trade_no, order.order_no);
            assert_eq!(notification.trade_status, Some(TradeStatus::TradeSuccess));
            assert_eq!(
                notification.total_amount.map(Yuan::fen),
                Some(4_999),
                "{form}"
            );
            assert!(form.contains("total_amount=49.99"), "{form}");
            assert_eq!(
                notification.passback_params,
                Some(order.payment_id.to_string())
            );
        }
        let env = keys.backend_env(PlatformKind::Alipay, "http://127.0.0.1:1");
        assert!(env.contains(&(
            "ALIPAY_GATEWAY_URL".into(),
            "http://127.0.0.1:1/gateway.do".into()
        )));
        drop(keys);
        assert!(!dir.exists(), "the key files go with the set");
    }

    #[test]
    fn a_refund_result_names_our_refund_number_and_the_platforms_ids() {
        let keys = KeySet::generate().expect("a key set");
        let order = paid();
        let refund = HandedOverRefund {
            refund_no: "rfd_0123456789abcdef".into(),
            order_no: order.order_no.clone(),
            amount_cents: 4_999,
            currency: Currency::CNY,
            platform_payment_id: order.platform_payment_id.clone(),
            platform_refund_id: "50300000012026120300000001".into(),
        };

        let wechat = keys
            .notifier(PlatformKind::Wechatpay, "")
            .expect("notifier");
        let callback = wechat.refund_success(&refund, &order).expect("callback");
        let encoded = wechat.encode(&callback).expect("encoded");
        let envelope: Notification = serde_json::from_slice(&encoded.body).expect("envelope");
        assert_eq!(envelope.event_type, EventType::RefundSuccess);
        let NotificationPayload::Refund(content) =
            envelope.decrypt(&keys.keys.apiv3_key).expect("decrypts")
        else {
            panic!("a refund");
        };
        assert_eq!(content.out_refund_no, refund.refund_no);
        assert_eq!(content.refund_id, refund.platform_refund_id);
        assert_eq!(content.transaction_id, refund.platform_payment_id);
        assert_eq!(content.amount.refund, 4_999);
        assert_eq!(content.refund_status, WechatRefundStatus::Success);

        let alipay = keys.notifier(PlatformKind::Alipay, "").expect("notifier");
        let callback = alipay.refund_success(&refund, &order).expect("callback");
        let encoded = alipay.encode(&callback).expect("encoded");
        let form = String::from_utf8(encoded.body).expect("text");
        let notification =
            ali::verify_notification(&form, ALIPAY_APP_ID, &keys.keys.platform_public)
                .expect("signed");
        assert_eq!(notification.notify_id, callback.id);
        assert_eq!(
            notification.out_biz_no.as_deref(),
            Some("rfd_0123456789abcdef")
        );
        assert_eq!(notification.trade_no, order.platform_payment_id);
        assert_eq!(notification.refund_fee.map(Yuan::fen), Some(4_999));
        assert_eq!(notification.trade_status, Some(TradeStatus::TradeClosed));
    }

    async fn judged(notifier: &Notifier, status: u16, body: &'static str) -> Answer {
        let response = axum::http::Response::builder()
            .status(status)
            .body(body)
            .expect("a response");
        notifier.judge(reqwest::Response::from(response)).await
    }

    #[tokio::test]
    async fn each_platform_acknowledges_by_its_own_rule() {
        let secret = CallbackSecret::generate();
        let standard = Notifier::standard(secret.expose()).expect("a secret");
        assert_eq!(judged(&standard, 200, "").await, Answer::Status(200));
        assert_eq!(
            judged(&standard, 204, "").await,
            Answer::Unacknowledged(204)
        );
        let keys = KeySet::generate().expect("a key set");
        let wechat = keys
            .notifier(PlatformKind::Wechatpay, "")
            .expect("a notifier");
        assert!(judged(&wechat, 204, "").await.is_success());
        assert!(judged(&wechat, 200, "").await.is_success());
        assert_eq!(
            judged(&wechat, 500, r#"{"code":"FAIL"}"#).await,
            Answer::Status(500)
        );
        let alipay = keys.notifier(PlatformKind::Alipay, "").expect("a notifier");
        assert!(judged(&alipay, 200, "success").await.is_success());
        for body in ["fail", "success\n", "SUCCESS", ""] {
            assert_eq!(
                judged(&alipay, 200, body).await,
                Answer::Unacknowledged(200),
                "{body:?}"
            );
        }
        assert_eq!(judged(&alipay, 204, "").await, Answer::Unacknowledged(204));
        assert_eq!(judged(&alipay, 500, "success").await, Answer::Status(500));
    }
}
