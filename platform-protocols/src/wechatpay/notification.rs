//! Notifications ("支付成功回调通知", "退款结果通知"): the envelope WeChat Pay POSTs to
//! `notify_url`, its encrypted resource's two payloads, and the merchant's reply.
//!
//! Verify the `Wechatpay-*` signature over the raw body first
//! ([`super::verify_platform_message`]), then parse the [`Notification`], then
//! [`Notification::decrypt`]. The envelope's `id` is unique per notification and
//! stays the same on retries.

use super::api::Transaction;
use super::resource::{EncryptedResource, ResourceError, decrypt_resource_json, encrypt_resource};
use super::{OutTradeNo, RefundStatus};
use crate::keys::ApiV3Key;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The `resource_type` of every notification.
pub const RESOURCE_TYPE: &str = "encrypt-resource";

/// `event_type`: what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// A payment succeeded; the resource is a [`Transaction`].
    #[serde(rename = "TRANSACTION.SUCCESS")]
    TransactionSuccess,
    /// A refund succeeded; the resource is a [`RefundNotification`].
    #[serde(rename = "REFUND.SUCCESS")]
    RefundSuccess,
    /// A refund failed and needs the merchant (退款异常).
    #[serde(rename = "REFUND.ABNORMAL")]
    RefundAbnormal,
    /// A refund was closed without refunding.
    #[serde(rename = "REFUND.CLOSED")]
    RefundClosed,
}

impl EventType {
    /// The wire name, e.g. `TRANSACTION.SUCCESS`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::TransactionSuccess => "TRANSACTION.SUCCESS",
            EventType::RefundSuccess => "REFUND.SUCCESS",
            EventType::RefundAbnormal => "REFUND.ABNORMAL",
            EventType::RefundClosed => "REFUND.CLOSED",
        }
    }

    /// The resource's `original_type` (and the `associated_data` WeChat Pay uses):
    /// `transaction` or `refund`.
    pub fn original_type(self) -> &'static str {
        match self {
            EventType::TransactionSuccess => "transaction",
            EventType::RefundSuccess | EventType::RefundAbnormal | EventType::RefundClosed => {
                "refund"
            }
        }
    }

    /// The envelope's `summary` as WeChat Pay writes it.
    pub fn summary(self) -> &'static str {
        match self {
            EventType::TransactionSuccess => "支付成功",
            EventType::RefundSuccess => "退款成功",
            EventType::RefundAbnormal => "退款异常",
            EventType::RefundClosed => "退款关闭",
        }
    }
}

/// The notification body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// The notification id (`EV-2018022511223320873`), the same on every retry.
    pub id: String,
    /// When the notification was created (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    pub create_time: OffsetDateTime,
    /// What happened.
    pub event_type: EventType,
    /// Always [`RESOURCE_TYPE`].
    pub resource_type: String,
    /// What happened, in words.
    pub summary: String,
    /// The encrypted details.
    pub resource: EncryptedResource,
}

/// The decrypted resource of a notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotificationPayload {
    /// For `TRANSACTION.SUCCESS`.
    Transaction(Transaction),
    /// For the three `REFUND.*` events.
    Refund(RefundNotification),
}

impl NotificationPayload {
    fn original_type(&self) -> &'static str {
        match self {
            NotificationPayload::Transaction(_) => "transaction",
            NotificationPayload::Refund(_) => "refund",
        }
    }
}

impl Notification {
    /// Decrypts the resource with the APIv3 key and parses the payload its event type
    /// promises; refuses a resource whose `original_type` says otherwise.
    pub fn decrypt(&self, key: &ApiV3Key) -> Result<NotificationPayload, ResourceError> {
        let expected = self.event_type.original_type();
        if self.resource.original_type != expected {
            return Err(ResourceError::OriginalType {
                expected,
                got: self.resource.original_type.clone(),
            });
        }
        Ok(match self.event_type {
            EventType::TransactionSuccess => {
                NotificationPayload::Transaction(decrypt_resource_json(key, &self.resource)?)
            }
            EventType::RefundSuccess | EventType::RefundAbnormal | EventType::RefundClosed => {
                NotificationPayload::Refund(decrypt_resource_json(key, &self.resource)?)
            }
        })
    }

    /// Builds an encrypted notification (the simulator's side): serializes `payload`,
    /// encrypts it with `key` under `nonce` (12 bytes, fresh for every notification:
    /// [`super::resource::generate_resource_nonce`]) with the original type as
    /// associated data, and fills `summary` and `resource_type` as WeChat Pay does.
    /// `event_type` must fit the payload (a transaction for `TRANSACTION.SUCCESS`, a
    /// refund for `REFUND.*`).
    pub fn encrypt(
        id: &str,
        create_time: OffsetDateTime,
        event_type: EventType,
        payload: &NotificationPayload,
        key: &ApiV3Key,
        nonce: &str,
    ) -> Result<Self, ResourceError> {
        let original_type = payload.original_type();
        if event_type.original_type() != original_type {
            return Err(ResourceError::OriginalType {
                expected: event_type.original_type(),
                got: original_type.to_owned(),
            });
        }
        let plaintext = match payload {
            NotificationPayload::Transaction(transaction) => serde_json::to_vec(transaction)?,
            NotificationPayload::Refund(refund) => serde_json::to_vec(refund)?,
        };
        Ok(Self {
            id: id.to_owned(),
            create_time,
            event_type,
            resource_type: RESOURCE_TYPE.to_owned(),
            summary: event_type.summary().to_owned(),
            resource: encrypt_resource(key, original_type, original_type, nonce, &plaintext)?,
        })
    }
}

/// `amount` of a refund notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundNotificationAmount {
    /// The original order total, in fen.
    pub total: i64,
    /// The refund, in fen.
    pub refund: i64,
    /// What the payer paid, in fen.
    pub payer_total: i64,
    /// What goes back to the payer, in fen.
    pub payer_refund: i64,
}

/// The decrypted resource of a `REFUND.*` notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundNotification {
    /// The merchant id.
    pub mchid: String,
    /// The merchant order number.
    pub out_trade_no: OutTradeNo,
    /// WeChat Pay's payment id.
    pub transaction_id: String,
    /// The merchant refund number.
    pub out_refund_no: String,
    /// WeChat Pay's refund id.
    pub refund_id: String,
    /// `SUCCESS`, `CLOSED` or `ABNORMAL` (never `PROCESSING` here).
    pub refund_status: RefundStatus,
    /// When the refund succeeded (only on `SUCCESS`).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub success_time: Option<OffsetDateTime>,
    /// The receiving account in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_received_account: Option<String>,
    /// The amounts.
    pub amount: RefundNotificationAmount,
}

/// The merchant's reply refusing a notification, sent with a 4xx or 5xx status:
/// `{"code":"FAIL","message":"..."}`. WeChat Pay then retries (15 s, 15 s, 30 s,
/// 3 min, ... over about 24 hours). To accept, answer 200 or 204 with no body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationReply {
    /// `FAIL`.
    pub code: String,
    /// Why, in words.
    pub message: String,
}

impl NotificationReply {
    /// A refusal with this message.
    pub fn fail(message: impl Into<String>) -> Self {
        Self {
            code: "FAIL".to_owned(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_refund_payload() {
        let body = r#"{"mchid":"1900000100","transaction_id":"1008450740201411110005820873","out_trade_no":"20150806125346","refund_id":"50200207182018070300011301001","out_refund_no":"7752501201407033233368018","refund_status":"SUCCESS","success_time":"2018-06-08T10:34:56+08:00","user_received_account":"招商银行信用卡0403","amount":{"total":999,"refund":999,"payer_total":999,"payer_refund":999}}"#;
        let refund: RefundNotification = serde_json::from_str(body).expect("documented payload");
        assert_eq!(refund.refund_status, RefundStatus::Success);
        assert_eq!(refund.amount.payer_refund, 999);
    }

    #[test]
    fn event_types_have_their_dotted_names() {
        for event in [
            EventType::TransactionSuccess,
            EventType::RefundSuccess,
            EventType::RefundAbnormal,
            EventType::RefundClosed,
        ] {
            let json = serde_json::to_string(&event).expect("serializes");
            assert_eq!(json, format!("\"{}\"", event.as_str()));
            assert_eq!(
                serde_json::from_str::<EventType>(&json).expect("parses"),
                event
            );
        }
        assert!(serde_json::from_str::<EventType>("\"TRANSACTION.FAIL\"").is_err());
    }

    #[test]
    fn the_failure_reply_is_the_documented_shape() {
        assert_eq!(
            serde_json::to_string(&NotificationReply::fail("失败")).expect("serializes"),
            r#"{"code":"FAIL","message":"失败"}"#
        );
    }
}
