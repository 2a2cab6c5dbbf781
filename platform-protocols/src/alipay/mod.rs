//! The Alipay open platform (支付宝开放平台) gateway with RSA2 keys, for face-to-face
//! QR payments (当面付 `alipay.trade.precreate`) and their query, close and refunds,
//! as both the merchant application and the platform speak it.
//!
//! The rules, from Alipay's pages "签名" / "自行实现签名" (signing), "自行实现验签"
//! (verifying), "公共请求参数", "异步通知说明" and the API pages of
//! `alipay.trade.precreate`, `alipay.trade.query`, `alipay.trade.close`,
//! `alipay.trade.refund` and `alipay.trade.fastpay.refund.query`:
//!
//! **Requests** ([`sign`]) are form parameters POSTed to the gateway: the common
//! parameters `app_id`, `method`, `format=JSON`, `charset=utf-8`, `sign_type=RSA2`,
//! `timestamp` (`yyyy-MM-dd HH:mm:ss`, Beijing time), `version=1.0`, optionally
//! `notify_url`, and `biz_content`, the call's own parameters as one JSON string.
//! The signed content is every parameter except `sign` whose value is not empty,
//! sorted by name in ASCII order, written `name=value` joined by `&`, with the raw
//! values (not URL-encoded):
//!
//! ```text
//! app_id=2014072300007148&biz_content={"out_trade_no":"T1","total_amount":"88.88","subject":"Iphone6 16G"}&charset=utf-8&format=JSON&method=alipay.trade.precreate&sign_type=RSA2&timestamp=2014-07-24 03:07:50&version=1.0
//! ```
//!
//! RSA2 is SHA256withRSA (RSASSA-PKCS1-v1_5 over SHA-256) with the application's
//! private key; `sign` is its standard base64. `sign_type=RSA` (SHA1withRSA) is
//! refused everywhere here.
//!
//! **Answers** ([`response`]) are JSON with one node named after the method
//! (`alipay.trade.precreate` answers in `alipay_trade_precreate_response`; gateway
//! errors may come in `error_response`) and a sibling `sign`:
//!
//! ```text
//! {"alipay_trade_precreate_response":{"code":"10000","msg":"Success","out_trade_no":"T1","qr_code":"https://qr.alipay.com/bax03431ljhokirwl38f00a7"},"sign":"..."}
//! ```
//!
//! Alipay signs the node's JSON text exactly as it appears in the answer, so the
//! verifier must take those bytes from the raw text, not re-serialize a parsed value
//! (key order, spacing and escapes would change). This module finds them with
//! `serde_json`'s `RawValue`, which keeps a value's exact span. Every answer's node
//! has `code` (`10000` is success), `msg`, and on failure `sub_code`/`sub_msg`
//! ([`CommonResponse`]).
//!
//! **Notifications** ([`notification`]) are `application/x-www-form-urlencoded`
//! POSTs. The verifier URL-decodes the parameters, removes `sign` and `sign_type`,
//! and checks the RSA2 signature (with the Alipay public key) over the same sorted
//! `name=value&...` content. The merchant answers with the plain text `success`
//! ([`NOTIFY_SUCCESS`]); anything else (conventionally `fail`) makes Alipay retry
//! (4m, 10m, 10m, 1h, 2h, 6h, 15h). A refund produces a notification with
//! `out_biz_no` (the refund request number), `refund_fee` and `gmt_refund`.
//!
//! **Amounts** are decimal yuan strings (`"88.88"`), kept here as
//! [`crate::money::Yuan`] (integer fen).

pub mod api;
pub mod notification;
pub mod response;
pub mod sign;

pub use api::{
    CloseResponse, CommonResponse, FundChange, PrecreateBiz, PrecreateResponse, QueryResponse,
    RefundBiz, RefundQueryBiz, RefundQueryResponse, RefundQueryStatus, RefundResponse, TradeRef,
    TradeStatus,
};
pub use notification::{
    TradeNotification, sign_notification, sign_notification_params, verify_notification,
};
pub use response::{
    ResponseNode, extract_response, sign_method_response, sign_response, verify_response,
};
pub use sign::{
    VerifiedRequest, format_timestamp, parse_form, parse_timestamp, sign_content, sign_request,
    to_form, verify_request,
};

use std::fmt;
use std::str::FromStr;

/// `sign_type` of every message: SHA256withRSA.
pub const SIGN_TYPE_RSA2: &str = "RSA2";
/// `charset` of every message.
pub const CHARSET: &str = "utf-8";
/// `format` of every request.
pub const FORMAT: &str = "JSON";
/// `version` of every request.
pub const VERSION: &str = "1.0";
/// `code` of a successful answer.
pub const SUCCESS_CODE: &str = "10000";
/// The node name of gateway errors that are not tied to a method.
pub const ERROR_RESPONSE_NODE: &str = "error_response";
/// The merchant's answer accepting a notification: exactly this text.
pub const NOTIFY_SUCCESS: &str = "success";
/// The merchant's answer refusing a notification (anything but `success` refuses;
/// this is the conventional text).
pub const NOTIFY_FAIL: &str = "fail";

/// Why an Alipay message is refused.
#[derive(Debug, thiserror::Error)]
pub enum AlipayError {
    /// A parameter the message needs is absent or empty.
    #[error("parameter {0} is missing")]
    MissingParameter(&'static str),
    /// A parameter appears twice: which one was signed would be ambiguous.
    #[error("parameter {0:?} appears twice")]
    DuplicateParameter(String),
    /// A parameter with an empty name.
    #[error("a parameter has an empty name")]
    EmptyParameterName,
    /// `sign_type` is not `RSA2` (`RSA`, SHA1withRSA, is refused).
    #[error("sign_type {0:?} is not supported; only RSA2 is accepted")]
    UnsupportedSignType(String),
    /// A common parameter has a value we do not speak (`charset`, `format`, `version`).
    #[error("parameter {name} must be {expected}, got {got:?}")]
    UnsupportedValue {
        /// The parameter.
        name: &'static str,
        /// What is accepted.
        expected: &'static str,
        /// What came.
        got: String,
    },
    /// The request is for another application.
    #[error("the message is for app_id {got:?}, not {expected:?}")]
    WrongAppId {
        /// The app id configured.
        expected: String,
        /// The app id in the message.
        got: String,
    },
    /// `method` is not one of [`Method`].
    #[error("unknown method {0:?}")]
    UnknownMethod(String),
    /// The signature does not verify.
    #[error("the signature does not match")]
    BadSignature,
    /// The answer has no `sign`. Gateway errors can come unsigned; such an answer
    /// proves nothing but that the call failed.
    #[error("the answer carries no sign")]
    MissingSign,
    /// The answer has neither the method's node nor `error_response`.
    #[error("the answer has neither {0} nor error_response")]
    MissingResponseNode(&'static str),
    /// The answer, a node or `biz_content` is not the JSON expected.
    #[error("not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A form body or its fields could not be decoded.
    #[error("not the expected form: {0}")]
    Form(String),
    /// A `timestamp` not in `yyyy-MM-dd HH:mm:ss`.
    #[error("timestamp {0:?} is not yyyy-MM-dd HH:mm:ss")]
    Timestamp(String),
}

/// The gateway methods the checkout calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `alipay.trade.precreate`: create an order and get a QR code.
    TradePrecreate,
    /// `alipay.trade.query`: where a payment stands.
    TradeQuery,
    /// `alipay.trade.close`: close an unpaid order.
    TradeClose,
    /// `alipay.trade.refund`: refund a payment, in part or in full.
    TradeRefund,
    /// `alipay.trade.fastpay.refund.query`: where a refund stands.
    TradeFastpayRefundQuery,
}

impl Method {
    /// Every method, for lookups and tests.
    pub const ALL: [Method; 5] = [
        Method::TradePrecreate,
        Method::TradeQuery,
        Method::TradeClose,
        Method::TradeRefund,
        Method::TradeFastpayRefundQuery,
    ];

    /// The `method` parameter, e.g. `alipay.trade.precreate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::TradePrecreate => "alipay.trade.precreate",
            Method::TradeQuery => "alipay.trade.query",
            Method::TradeClose => "alipay.trade.close",
            Method::TradeRefund => "alipay.trade.refund",
            Method::TradeFastpayRefundQuery => "alipay.trade.fastpay.refund.query",
        }
    }

    /// The answer's node: the method with `.` replaced by `_`, plus `_response`.
    pub fn response_node(self) -> &'static str {
        match self {
            Method::TradePrecreate => "alipay_trade_precreate_response",
            Method::TradeQuery => "alipay_trade_query_response",
            Method::TradeClose => "alipay_trade_close_response",
            Method::TradeRefund => "alipay_trade_refund_response",
            Method::TradeFastpayRefundQuery => "alipay_trade_fastpay_refund_query_response",
        }
    }
}

impl FromStr for Method {
    type Err = AlipayError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Method::ALL
            .into_iter()
            .find(|method| method.as_str() == text)
            .ok_or_else(|| AlipayError::UnknownMethod(text.to_owned()))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_the_method_with_underscores_and_response() {
        for method in Method::ALL {
            assert_eq!(
                method.response_node(),
                format!("{}_response", method.as_str().replace('.', "_"))
            );
            assert_eq!(method.as_str().parse::<Method>().expect("known"), method);
        }
        assert!("alipay.trade.pay".parse::<Method>().is_err());
    }
}
