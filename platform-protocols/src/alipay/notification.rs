//! Asynchronous notifications ("异步通知"): a form-encoded POST to `notify_url` when
//! a trade's status changes (paid, closed) or a refund is made.
//!
//! Verification, as Alipay describes it: decode the form (values URL-decoded),
//! remove `sign` and `sign_type`, sort the rest by name, join `name=value` with `&`,
//! and check `sign` (base64) with the Alipay public key, SHA256withRSA. Then check
//! `app_id` is ours. Reply [`super::NOTIFY_SUCCESS`] to stop the retries.

use super::api::TradeStatus;
use super::sign::{param, parse_form, sign_content, to_form};
use super::{AlipayError, CHARSET, SIGN_TYPE_RSA2};
use crate::keys::{PrivateKey, PublicKey};
use crate::money::Yuan;
use serde::{Deserialize, Serialize};

/// The typed fields of a trade notification (`notify_type` `trade_status_sync`).
/// A refund's notification has `out_biz_no`, `refund_fee` and `gmt_refund`;
/// `trade_status` is then `TRADE_SUCCESS` (partly refunded) or `TRADE_CLOSED`
/// (fully refunded). Times are `yyyy-MM-dd HH:mm:ss` (Beijing time) as sent;
/// `gmt_refund` may carry milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradeNotification {
    /// When the notification was sent.
    pub notify_time: String,
    /// `trade_status_sync`.
    pub notify_type: String,
    /// The notification id.
    pub notify_id: String,
    /// The application.
    pub app_id: String,
    /// `utf-8`.
    pub charset: String,
    /// `1.0`.
    pub version: String,
    /// Alipay's trade number.
    pub trade_no: String,
    /// The merchant order number.
    pub out_trade_no: String,
    /// The refund request number (`out_request_no`) of a refund notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_biz_no: Option<String>,
    /// The buyer's Alipay user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buyer_id: Option<String>,
    /// The merchant's Alipay user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seller_id: Option<String>,
    /// Where the trade stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_status: Option<TradeStatus>,
    /// The order amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_amount: Option<Yuan>,
    /// What the merchant received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_amount: Option<Yuan>,
    /// What the buyer paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buyer_pay_amount: Option<Yuan>,
    /// The total refunded so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_fee: Option<Yuan>,
    /// What was bought.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// When the trade was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gmt_create: Option<String>,
    /// When it was paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gmt_payment: Option<String>,
    /// When it was refunded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gmt_refund: Option<String>,
    /// When it was closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gmt_close: Option<String>,
    /// Merchant data passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passback_params: Option<String>,
}

/// The `notify_type` of trade notifications.
pub const NOTIFY_TYPE_TRADE_STATUS_SYNC: &str = "trade_status_sync";

/// Verifies a notification body (the merchant's side) and reads its fields: `sign`
/// present, `sign_type` `RSA2`, the signature over the sorted parameters without
/// `sign` and `sign_type`, then `app_id` equal to `app_id`.
pub fn verify_notification(
    body: &str,
    app_id: &str,
    alipay_public_key: &PublicKey,
) -> Result<TradeNotification, AlipayError> {
    let params = parse_form(body)?;
    let sign = param(&params, "sign").ok_or(AlipayError::MissingParameter("sign"))?;
    let sign_type =
        param(&params, "sign_type").ok_or(AlipayError::MissingParameter("sign_type"))?;
    if sign_type != SIGN_TYPE_RSA2 {
        return Err(AlipayError::UnsupportedSignType(sign_type.to_owned()));
    }
    let content = sign_content(&params, &["sign", "sign_type"])?;
    alipay_public_key
        .verify_rsa_sha256_base64(content.as_bytes(), sign)
        .map_err(|_| AlipayError::BadSignature)?;
    let notification: TradeNotification =
        serde_urlencoded::from_str(body).map_err(|error| AlipayError::Form(error.to_string()))?;
    if notification.app_id != app_id {
        return Err(AlipayError::WrongAppId {
            expected: app_id.to_owned(),
            got: notification.app_id,
        });
    }
    Ok(notification)
}

/// Builds a signed notification body (the simulator's side): the fields, then
/// `sign_type=RSA2` and `sign` over the sorted fields, form-encoded.
pub fn sign_notification(
    notification: &TradeNotification,
    alipay_private_key: &PrivateKey,
) -> Result<String, AlipayError> {
    let fields = serde_urlencoded::to_string(notification)
        .map_err(|error| AlipayError::Form(error.to_string()))?;
    sign_notification_params(parse_form(&fields)?, alipay_private_key)
}

/// Signs arbitrary notification parameters (for notifications with fields
/// [`TradeNotification`] does not name): drops any `sign` and `sign_type` given,
/// adds `sign_type=RSA2` and `sign`, and form-encodes the result.
pub fn sign_notification_params(
    mut params: Vec<(String, String)>,
    alipay_private_key: &PrivateKey,
) -> Result<String, AlipayError> {
    params.retain(|(name, _)| name != "sign" && name != "sign_type");
    let content = sign_content(&params, &[])?;
    let sign = alipay_private_key.sign_rsa_sha256_base64(content.as_bytes());
    params.push(("sign_type".into(), SIGN_TYPE_RSA2.into()));
    params.push(("sign".into(), sign));
    to_form(&params)
}

impl TradeNotification {
    /// A notification with the required fields and `charset`/`version`/`notify_type`
    /// filled in; the rest empty.
    pub fn new(
        notify_id: &str,
        notify_time: &str,
        app_id: &str,
        trade_no: &str,
        out_trade_no: &str,
    ) -> Self {
        Self {
            notify_time: notify_time.to_owned(),
            notify_type: NOTIFY_TYPE_TRADE_STATUS_SYNC.to_owned(),
            notify_id: notify_id.to_owned(),
            app_id: app_id.to_owned(),
            charset: CHARSET.to_owned(),
            version: super::VERSION.to_owned(),
            trade_no: trade_no.to_owned(),
            out_trade_no: out_trade_no.to_owned(),
            out_biz_no: None,
            buyer_id: None,
            seller_id: None,
            trade_status: None,
            total_amount: None,
            receipt_amount: None,
            buyer_pay_amount: None,
            refund_fee: None,
            subject: None,
            gmt_create: None,
            gmt_payment: None,
            gmt_refund: None,
            gmt_close: None,
            passback_params: None,
        }
    }
}
