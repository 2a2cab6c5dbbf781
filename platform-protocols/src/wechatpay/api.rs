//! The serde types of the WeChat Pay API v3 calls the checkout makes, from the pages
//! "Native下单", "商户订单号查询订单", "关闭订单", "退款申请" and "查询单笔退款".
//!
//! Field names are WeChat Pay's. Fields the platform may leave out are `Option`
//! and are not written when `None`; fields we do not use are ignored when reading
//! (WeChat Pay adds fields without notice). Amounts are integers in fen.
//!
//! | call | request | answer |
//! |---|---|---|
//! | `POST` [`paths::NATIVE_PREPAY`] | [`NativePrepayRequest`] | 200 [`NativePrepayResponse`] |
//! | `GET` [`paths::query_by_out_trade_no`] | no body | 200 [`Transaction`] |
//! | `POST` [`paths::close`] | [`CloseRequest`] | 204, no body |
//! | `POST` [`paths::REFUNDS`] | [`RefundRequest`] | 200 [`Refund`] |
//! | `GET` [`paths::query_refund`] | no body | 200 [`Refund`] |
//! | any, failing | | 4xx/5xx [`ErrorBody`] |

use super::OutTradeNo;
use api_types::Currency;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The paths of the calls, as signed: absolute path and query, no host.
pub mod paths {
    use super::OutTradeNo;

    /// Native prepay: `POST`, answers a `code_url` to show as a QR code.
    pub const NATIVE_PREPAY: &str = "/v3/pay/transactions/native";

    /// Refund: `POST`.
    pub const REFUNDS: &str = "/v3/refund/domestic/refunds";

    /// Query a payment by merchant order number: `GET`, with the merchant id in the
    /// query (`mchid` is digits, so nothing needs escaping; an [`OutTradeNo`] has
    /// only characters a path may carry).
    pub fn query_by_out_trade_no(out_trade_no: &OutTradeNo, mchid: &str) -> String {
        format!("/v3/pay/transactions/out-trade-no/{out_trade_no}?mchid={mchid}")
    }

    /// Close an unpaid order: `POST` with a [`super::CloseRequest`], answers 204.
    pub fn close(out_trade_no: &OutTradeNo) -> String {
        format!("/v3/pay/transactions/out-trade-no/{out_trade_no}/close")
    }

    /// Query a refund by merchant refund number: `GET`.
    pub fn query_refund(out_refund_no: &str) -> String {
        format!("/v3/refund/domestic/refunds/{out_refund_no}")
    }
}

/// `amount` of a prepay: the total in fen and the currency (`CNY`, the default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrepayAmount {
    /// The order total in fen.
    pub total: i64,
    /// The currency; WeChat Pay takes `CNY` when absent.
    #[serde(default = "cny")]
    pub currency: Currency,
}

fn cny() -> Currency {
    Currency::CNY
}

/// `POST /v3/pay/transactions/native`: create a Native (QR code) payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativePrepayRequest {
    /// The app id bound to the merchant (公众号/小程序/应用 ID).
    pub appid: String,
    /// The merchant id.
    pub mchid: String,
    /// What is bought, shown to the payer (at most 127 characters).
    pub description: String,
    /// The merchant order number.
    pub out_trade_no: OutTradeNo,
    /// When the order stops being payable (RFC 3339, e.g. `2018-06-08T10:34:56+08:00`).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub time_expire: Option<OffsetDateTime>,
    /// Merchant data returned as is in the query and the notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<String>,
    /// Where the payment notification goes (HTTPS, no query string).
    pub notify_url: String,
    /// The amount.
    pub amount: PrepayAmount,
}

/// The answer to a Native prepay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativePrepayResponse {
    /// The `weixin://wxpay/bizpayurl?pr=...` link to render as a QR code.
    pub code_url: String,
}

/// `POST /v3/pay/transactions/out-trade-no/{out_trade_no}/close`: close an unpaid
/// order. Answers 204 with an empty body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseRequest {
    /// The merchant id.
    pub mchid: String,
}

/// `trade_state` of a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TradeState {
    /// Paid (支付成功).
    Success,
    /// Refunded (in part or in full) after payment (转入退款).
    Refund,
    /// Not paid yet (未支付).
    #[serde(rename = "NOTPAY")]
    NotPay,
    /// Closed unpaid (已关闭).
    Closed,
    /// Revoked (已撤销, card-present payments only).
    Revoked,
    /// The payer is paying (用户支付中, card-present payments only).
    #[serde(rename = "USERPAYING")]
    UserPaying,
    /// The payment failed (支付失败).
    #[serde(rename = "PAYERROR")]
    PayError,
}

/// `trade_type` of a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TradeType {
    /// In-app browser / Mini Program payment.
    Jsapi,
    /// QR code payment (ours).
    Native,
    /// Mobile app payment.
    App,
    /// Payer's code scanned by the merchant.
    Micropay,
    /// Mobile web payment outside WeChat.
    Mweb,
    /// Face payment.
    Facepay,
}

/// `amount` of a payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionAmount {
    /// The order total in fen.
    pub total: i64,
    /// What the payer paid in fen (absent before payment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer_total: Option<i64>,
    /// The order currency.
    #[serde(default = "cny")]
    pub currency: Currency,
    /// The payer's currency (absent before payment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer_currency: Option<Currency>,
}

/// `payer` of a payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payer {
    /// The payer's id under the app id (absent before payment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openid: Option<String>,
}

/// A payment: the answer to a query by `out_trade_no`, and the decrypted resource of
/// a `TRANSACTION.SUCCESS` notification. Before payment WeChat Pay leaves out
/// `transaction_id`, `trade_type`, `bank_type`, `success_time` and the payer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transaction {
    /// The app id.
    pub appid: String,
    /// The merchant id.
    pub mchid: String,
    /// The merchant order number.
    pub out_trade_no: OutTradeNo,
    /// WeChat Pay's payment id (微信支付订单号).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    /// How it was paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_type: Option<TradeType>,
    /// Where the payment stands.
    pub trade_state: TradeState,
    /// The state in words (`支付成功`...).
    pub trade_state_desc: String,
    /// The paying bank or `OTHERS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_type: Option<String>,
    /// The merchant data sent at prepay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<String>,
    /// When it was paid (RFC 3339).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub success_time: Option<OffsetDateTime>,
    /// Who paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<Payer>,
    /// The amounts.
    pub amount: TransactionAmount,
}

/// `amount` of a refund request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundRequestAmount {
    /// How much to refund, in fen (at most the order total).
    pub refund: i64,
    /// The original order total, in fen.
    pub total: i64,
    /// `CNY`.
    pub currency: Currency,
}

/// `POST /v3/refund/domestic/refunds`: refund a payment, in part or in full. Name the
/// payment by `transaction_id` or by `out_trade_no` (one of them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundRequest {
    /// WeChat Pay's payment id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    /// The merchant order number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_trade_no: Option<OutTradeNo>,
    /// The merchant refund number: the refund's idempotency key (1 to 64 characters
    /// of `[A-Za-z0-9_-|*@]`).
    pub out_refund_no: String,
    /// Why, shown to the payer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the refund notification goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify_url: Option<String>,
    /// The amounts.
    pub amount: RefundRequestAmount,
}

/// `status` of a refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundStatus {
    /// Refunded (退款成功).
    Success,
    /// Closed without refunding (退款关闭).
    Closed,
    /// Under way (退款处理中); a refund notification follows. Never in a notification.
    Processing,
    /// Failed, e.g. the payer's card was cancelled (退款异常); the merchant must act.
    Abnormal,
}

/// `amount` of a refund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundAmount {
    /// The original order total, in fen.
    pub total: i64,
    /// The refund, in fen.
    pub refund: i64,
    /// What the payer paid, in fen.
    pub payer_total: i64,
    /// What goes back to the payer, in fen.
    pub payer_refund: i64,
    /// The refund less non-recharge coupons, in fen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settlement_refund: Option<i64>,
    /// The settled order total, in fen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settlement_total: Option<i64>,
    /// The coupon part of the refund, in fen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discount_refund: Option<i64>,
    /// `CNY`.
    #[serde(default = "cny")]
    pub currency: Currency,
}

/// A refund: the answer to a refund request and to a refund query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refund {
    /// WeChat Pay's refund id.
    pub refund_id: String,
    /// The merchant refund number.
    pub out_refund_no: String,
    /// WeChat Pay's payment id.
    pub transaction_id: String,
    /// The merchant order number.
    pub out_trade_no: OutTradeNo,
    /// Where the money goes back (`ORIGINAL`, `BALANCE`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The receiving account in words (`支付用户零钱`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_received_account: Option<String>,
    /// When the refund succeeded (only when `status` is `SUCCESS`).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub success_time: Option<OffsetDateTime>,
    /// When the refund was accepted.
    #[serde(with = "time::serde::rfc3339")]
    pub create_time: OffsetDateTime,
    /// Where the refund stands.
    pub status: RefundStatus,
    /// Which merchant account funded it (`UNSETTLED`, `AVAILABLE`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub funds_account: Option<String>,
    /// The amounts.
    pub amount: RefundAmount,
}

/// The body of every failed call (4xx, 5xx): a machine code such as `PARAM_ERROR`,
/// `ORDER_NOT_EXIST`, `SIGN_ERROR`, `ORDERPAID`, `NOT_ENOUGH`, `SYSTEM_ERROR`, and a
/// message in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error code.
    pub code: String,
    /// What went wrong, in words.
    pub message: String,
    /// Details some errors carry (the offending field...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_unpaid_query_answer_without_payment_fields() {
        let body = r#"{"amount":{"payer_currency":"CNY","total":1},"appid":"wxd678efh567hg6787","mchid":"1230000109","out_trade_no":"1217752501201407033233368018","payer":{},"promotion_detail":[],"trade_state":"NOTPAY","trade_state_desc":"订单未支付"}"#;
        let transaction: Transaction = serde_json::from_str(body).expect("an unpaid answer");
        assert_eq!(transaction.trade_state, TradeState::NotPay);
        assert_eq!(transaction.amount.total, 1);
        assert_eq!(transaction.amount.currency, Currency::CNY);
        assert_eq!(transaction.transaction_id, None);
        assert_eq!(transaction.payer, Some(Payer { openid: None }));
    }

    #[test]
    fn reads_the_documented_refund_answer() {
        let body = r#"{"amount":{"currency":"CNY","discount_refund":0,"from":[],"payer_refund":1,"payer_total":1,"refund":1,"settlement_refund":1,"settlement_total":1,"total":1},"channel":"ORIGINAL","create_time":"2021-03-26T14:52:08+08:00","funds_account":"UNSETTLED","out_refund_no":"sdk12345678920210326145039","out_trade_no":"sdk12345678920210326145039","promotion_detail":[],"refund_id":"50001307732021032607480019805","status":"SUCCESS","success_time":"2021-03-26T14:52:11+08:00","transaction_id":"4200000991202103266853086457","user_received_account":"支付用户零钱"}"#;
        let refund: Refund = serde_json::from_str(body).expect("the documented refund");
        assert_eq!(refund.status, RefundStatus::Success);
        assert_eq!(refund.amount.payer_refund, 1);
        assert_eq!(refund.create_time.unix_timestamp(), 1_616_741_528);
    }

    #[test]
    fn writes_a_prepay_request_in_wechat_pay_field_names() {
        let request = NativePrepayRequest {
            appid: "wxd678efh567hg6787".into(),
            mchid: "1230000109".into(),
            description: "Image形象店-深圳腾大-QQ公仔".into(),
            out_trade_no: OutTradeNo::parse("1217752501201407033233368018").expect("valid"),
            time_expire: None,
            attach: None,
            notify_url: "https://shop.example/notify".into(),
            amount: PrepayAmount {
                total: 100,
                currency: Currency::CNY,
            },
        };
        let json = serde_json::to_value(&request).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({
                "appid": "wxd678efh567hg6787",
                "mchid": "1230000109",
                "description": "Image形象店-深圳腾大-QQ公仔",
                "out_trade_no": "1217752501201407033233368018",
                "notify_url": "https://shop.example/notify",
                "amount": {"total": 100, "currency": "CNY"}
            })
        );
    }

    #[test]
    fn paths_are_the_documented_ones() {
        let no = OutTradeNo::parse("ORD-000001").expect("valid");
        assert_eq!(
            paths::query_by_out_trade_no(&no, "1230000109"),
            "/v3/pay/transactions/out-trade-no/ORD-000001?mchid=1230000109"
        );
        assert_eq!(
            paths::close(&no),
            "/v3/pay/transactions/out-trade-no/ORD-000001/close"
        );
        assert_eq!(
            paths::query_refund("R-1"),
            "/v3/refund/domestic/refunds/R-1"
        );
    }
}
