//! The serde types of the Alipay calls the checkout makes: each call's `biz_content`
//! and its answer node, from the API pages of `alipay.trade.precreate`,
//! `alipay.trade.query`, `alipay.trade.close`, `alipay.trade.refund` and
//! `alipay.trade.fastpay.refund.query`.
//!
//! Every answer node flattens [`CommonResponse`] (`code`, `msg`, `sub_code`,
//! `sub_msg`) and makes its own fields optional, because a failed call answers with
//! the common fields only. Amounts are [`Yuan`] strings. Fields we do not use are
//! ignored when reading.

use crate::money::Yuan;
use serde::{Deserialize, Serialize};

/// The fields every answer node has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommonResponse {
    /// `10000` on success; `40004` a business failure (see `sub_code`), `20000`
    /// service unavailable, `40002` invalid arguments (a bad signature among them).
    pub code: String,
    /// `Success`, or the gateway's words for the failure.
    pub msg: String,
    /// The business error, e.g. `ACQ.TRADE_NOT_EXIST`, `ACQ.TRADE_HAS_SUCCESS`,
    /// `isv.invalid-signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_code: Option<String>,
    /// The business error in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_msg: Option<String>,
}

impl CommonResponse {
    /// A success (`code` `10000`, `msg` `Success`).
    pub fn success() -> Self {
        Self {
            code: super::SUCCESS_CODE.to_owned(),
            msg: "Success".to_owned(),
            sub_code: None,
            sub_msg: None,
        }
    }

    /// A business failure (`code` `40004`, `msg` `Business Failed`) with its sub code.
    pub fn business_failure(sub_code: &str, sub_msg: &str) -> Self {
        Self {
            code: "40004".to_owned(),
            msg: "Business Failed".to_owned(),
            sub_code: Some(sub_code.to_owned()),
            sub_msg: Some(sub_msg.to_owned()),
        }
    }

    /// Whether `code` is `10000`.
    pub fn is_success(&self) -> bool {
        self.code == super::SUCCESS_CODE
    }
}

/// `trade_status` of a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TradeStatus {
    /// Created, waiting for the buyer to pay.
    WaitBuyerPay,
    /// Closed unpaid, or fully refunded.
    TradeClosed,
    /// Paid; refunds are still possible.
    TradeSuccess,
    /// Paid and finished; no refunds any more.
    TradeFinished,
}

/// `biz_content` of `alipay.trade.precreate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrecreateBiz {
    /// The merchant order number (up to 64 letters, digits, `_`).
    pub out_trade_no: String,
    /// The amount, 0.01 to 100000000 yuan.
    pub total_amount: Yuan,
    /// What is bought.
    pub subject: String,
    /// How long the order stays payable, e.g. `90m` (1m to 15d).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_express: Option<String>,
    /// Merchant data, URL-encoded, that Alipay passes back unchanged in the
    /// trade's asynchronous notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passback_params: Option<String>,
}

/// The node of `alipay.trade.precreate`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrecreateResponse {
    /// `code`, `msg`, `sub_code`, `sub_msg`.
    #[serde(flatten)]
    pub common: CommonResponse,
    /// The merchant order number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_trade_no: Option<String>,
    /// The link to render as a QR code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qr_code: Option<String>,
}

/// `biz_content` of `alipay.trade.query` and `alipay.trade.close`: the trade,
/// named by one of its two numbers (Alipay takes `trade_no` when both are given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradeRef {
    /// The merchant order number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_trade_no: Option<String>,
    /// Alipay's trade number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_no: Option<String>,
}

impl TradeRef {
    /// The trade with this merchant order number.
    pub fn by_out_trade_no(out_trade_no: &str) -> Self {
        Self {
            out_trade_no: Some(out_trade_no.to_owned()),
            trade_no: None,
        }
    }
}

/// The node of `alipay.trade.query`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryResponse {
    /// `code`, `msg`, `sub_code`, `sub_msg`.
    #[serde(flatten)]
    pub common: CommonResponse,
    /// Alipay's trade number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_no: Option<String>,
    /// The merchant order number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_trade_no: Option<String>,
    /// The buyer's masked login id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buyer_logon_id: Option<String>,
    /// Where the payment stands.
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
    /// When it was paid (`yyyy-MM-dd HH:mm:ss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_pay_date: Option<String>,
    /// The buyer's Alipay user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buyer_user_id: Option<String>,
}

/// The node of `alipay.trade.close`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseResponse {
    /// `code`, `msg`, `sub_code`, `sub_msg`.
    #[serde(flatten)]
    pub common: CommonResponse,
    /// Alipay's trade number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_no: Option<String>,
    /// The merchant order number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_trade_no: Option<String>,
}

/// `biz_content` of `alipay.trade.refund`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundBiz {
    /// The merchant order number.
    pub out_trade_no: String,
    /// How much to refund (at most what remains of the payment).
    pub refund_amount: Yuan,
    /// The refund request number: the refund's idempotency key, required for
    /// partial refunds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_request_no: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_reason: Option<String>,
}

/// `fund_change` of a refund answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FundChange {
    /// `Y`: this call moved money (a first refund).
    #[serde(rename = "Y")]
    Yes,
    /// `N`: no money moved (a repeated request for a refund already made).
    #[serde(rename = "N")]
    No,
}

/// The node of `alipay.trade.refund`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundResponse {
    /// `code`, `msg`, `sub_code`, `sub_msg`.
    #[serde(flatten)]
    pub common: CommonResponse,
    /// Alipay's trade number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_no: Option<String>,
    /// The merchant order number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_trade_no: Option<String>,
    /// The buyer's masked login id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buyer_logon_id: Option<String>,
    /// Whether this call moved money.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fund_change: Option<FundChange>,
    /// The total refunded on this trade so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_fee: Option<Yuan>,
    /// When the refund was paid out (`yyyy-MM-dd HH:mm:ss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gmt_refund_pay: Option<String>,
}

/// `biz_content` of `alipay.trade.fastpay.refund.query`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundQueryBiz {
    /// The merchant order number.
    pub out_trade_no: String,
    /// The refund request number (the `out_trade_no` itself for a refund made
    /// without one).
    pub out_request_no: String,
}

/// `refund_status` of a refund query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundQueryStatus {
    /// The refund succeeded. When the field is absent, the refund was not received
    /// or failed.
    RefundSuccess,
}

/// The node of `alipay.trade.fastpay.refund.query`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundQueryResponse {
    /// `code`, `msg`, `sub_code`, `sub_msg`.
    #[serde(flatten)]
    pub common: CommonResponse,
    /// Alipay's trade number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_no: Option<String>,
    /// The merchant order number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_trade_no: Option<String>,
    /// The refund request number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_request_no: Option<String>,
    /// The trade's amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_amount: Option<Yuan>,
    /// This refund's amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_amount: Option<Yuan>,
    /// `REFUND_SUCCESS`, or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_status: Option<RefundQueryStatus>,
    /// When the refund was paid out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gmt_refund_pay: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_precreate_answer() {
        let node = r#"{"code":"10000","msg":"Success","out_trade_no":"6823789339978248","qr_code":"https://qr.alipay.com/bavh4wjlxf12tper3a"}"#;
        let answer: PrecreateResponse = serde_json::from_str(node).expect("documented answer");
        assert!(answer.common.is_success());
        assert_eq!(
            answer.qr_code.as_deref(),
            Some("https://qr.alipay.com/bavh4wjlxf12tper3a")
        );
    }

    #[test]
    fn reads_a_business_failure_with_common_fields_only() {
        let node = r#"{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_NOT_EXIST","sub_msg":"交易不存在","buyer_pay_amount":"0.00","invoice_amount":"0.00","out_trade_no":"T1","point_amount":"0.00","receipt_amount":"0.00"}"#;
        let answer: QueryResponse = serde_json::from_str(node).expect("a failure");
        assert!(!answer.common.is_success());
        assert_eq!(
            answer.common.sub_code.as_deref(),
            Some("ACQ.TRADE_NOT_EXIST")
        );
        assert_eq!(answer.trade_status, None);
        assert_eq!(answer.receipt_amount, Some(Yuan::ZERO));
    }

    #[test]
    fn reads_refund_answers_with_amounts_in_fen() {
        let node = r#"{"code":"10000","msg":"Success","buyer_logon_id":"159****5620","fund_change":"Y","gmt_refund_pay":"2014-11-27 15:45:57","out_trade_no":"6823789339978248","refund_fee":"88.88","trade_no":"2013112011001004330000121536"}"#;
        let answer: RefundResponse = serde_json::from_str(node).expect("a refund");
        assert_eq!(answer.fund_change, Some(FundChange::Yes));
        assert_eq!(answer.refund_fee.map(Yuan::fen), Some(8888));
        let query = r#"{"code":"10000","msg":"Success","out_request_no":"HZ01RF001","out_trade_no":"20150320010101001","refund_amount":"12.5","refund_status":"REFUND_SUCCESS","total_amount":"100.20","trade_no":"2014112611001004680073956707"}"#;
        let answer: RefundQueryResponse = serde_json::from_str(query).expect("a refund query");
        assert_eq!(answer.refund_status, Some(RefundQueryStatus::RefundSuccess));
        assert_eq!(answer.refund_amount.map(Yuan::fen), Some(1250));
        assert_eq!(answer.total_amount.map(Yuan::fen), Some(10020));
    }

    #[test]
    fn writes_biz_content_with_amounts_as_two_decimal_strings() {
        let biz = PrecreateBiz {
            out_trade_no: "T1".into(),
            total_amount: Yuan::from_fen(8888).expect("positive"),
            subject: "Iphone6 16G".into(),
            timeout_express: Some("90m".into()),
            passback_params: None,
        };
        assert_eq!(
            serde_json::to_string(&biz).expect("serializes"),
            r#"{"out_trade_no":"T1","total_amount":"88.88","subject":"Iphone6 16G","timeout_express":"90m"}"#
        );
    }
}
