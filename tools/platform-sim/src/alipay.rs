//! The Alipay open platform gateway (RSA2), server side: face-to-face QR
//! payments and their query, close and refunds, served from the same book as
//! `/v1` payments and refunds, when [`SimConfig::alipay`] is set.
//!
//! Every call is `POST /gateway.do` with Alipay's common request parameters,
//! form-encoded in the body (parameters in the query string are taken too, as
//! some SDKs send them; a name given twice is refused); `method` chooses the
//! call. The request's RSA2 signature is verified with the merchant's public
//! key (`platform_protocols::alipay::verify_request`: `sign_type` must be
//! `RSA2`, `app_id` the configured one). Every answer is HTTP 200, as Alipay's
//! are, with JSON `{"<method>_response":{...},"sign":"..."}` signed with the
//! platform key over the node's exact bytes; refusals included (a request
//! whose `method` is unknown or missing is answered in `error_response`).
//!
//! Refusals, `code`/`sub_code`:
//!
//! | when | code | sub_code |
//! |---|---|---|
//! | the form cannot be read, a parameter twice | 40002 | `isv.invalid-parameter` |
//! | `sign` missing / wrong | 40002 | `isv.missing-signature` / `isv.invalid-signature` |
//! | `sign_type` missing / not `RSA2` | 40002 | `isv.missing-signature-type` / `isv.invalid-signature-type` |
//! | `app_id` missing / another | 40002 | `isv.missing-app-id` / `isv.invalid-app-id` |
//! | `method` missing / unknown | 40002 | `isv.missing-method` / `isv.invalid-method` |
//! | `charset`, `format`, `version`, `timestamp` wrong | 40002 | `isv.invalid-charset`, `isv.invalid-format`, `isv.invalid-version`, `isv.invalid-timestamp` |
//! | `biz_content` missing or not the call's JSON, a bad number or amount, no `notify_url` on a precreate | 40004 | `ACQ.INVALID_PARAMETER` |
//! | chaos `lose_create_answer`: a new trade or refund was stored | 20000 | `isp.unknow-error` |
//!
//! | call | answer |
//! |---|---|
//! | `alipay.trade.precreate` | `qr_code` `https://qr.alipay.com/<token>`, the same for the same `out_trade_no` and parameters again; other parameters, `ACQ.CONTEXT_INCONSISTENT`; the trade paid, `ACQ.TRADE_HAS_SUCCESS`; closed, `ACQ.TRADE_HAS_CLOSE` |
//! | `alipay.trade.query` | `trade_status` `WAIT_BUYER_PAY`, `TRADE_SUCCESS`, `TRADE_FINISHED`, `TRADE_CLOSED` (closed unpaid, or fully refunded), `trade_no`, `total_amount`; unknown, `ACQ.TRADE_NOT_EXIST` |
//! | `alipay.trade.close` | success (again on a closed trade); paid, `ACQ.TRADE_STATUS_ERROR`; unknown, `ACQ.TRADE_NOT_EXIST` |
//! | `alipay.trade.refund` | `fund_change` `Y` and `refund_fee` (the trade's refunded total); the same `out_request_no` and parameters again, the same answer with `fund_change` `N` (as Alipay answers a repeat); other parameters, `ACQ.DISCORDANT_REPEAT_REQUEST`; no `out_request_no` and not the whole amount, `ACQ.REFUND_AMT_NOT_EQUAL_TOTAL`; more than remains, `ACQ.REASON_TRADE_REFUND_FEE_ERR`; the trade not paid (or closed), `ACQ.TRADE_STATUS_ERROR`; finished, `ACQ.TRADE_HAS_FINISHED`; a refund the outcome rule fails, `ACQ.SELLER_BALANCE_NOT_ENOUGH` (kept: the same request again gets it again); unknown trade, `ACQ.TRADE_NOT_EXIST` |
//! | `alipay.trade.fastpay.refund.query` | `refund_status` `REFUND_SUCCESS`, `refund_amount`, `total_amount`; a refund that failed or was never made answers success without `refund_status` (Alipay's way of saying "no such refund"); unknown trade, `ACQ.TRADE_NOT_EXIST` |
//!
//! A trade is decided by the same outcome rule, processing delay and chaos
//! knobs as a `/v1` payment: a success is `TRADE_SUCCESS` and notified; after
//! [`AlipayConfig::trade_finished_after`] (scaled by the time scale) it becomes
//! `TRADE_FINISHED`, notified again with a `notify_id` of its own, and refunds
//! are refused from then on (as Alipay does at the end of the refund period).
//! A trade fully refunded before that is `TRADE_CLOSED` and never finishes. A
//! failure (and a close) leaves the trade `TRADE_CLOSED` and sends nothing:
//! Alipay does not notify `TRADE_CLOSED` by default. A refund is decided on
//! arrival, as Alipay's are synchronous (chaos `hold_processing` does not
//! apply to it); a successful one is also notified (`out_biz_no`,
//! `refund_fee`, `gmt_refund`, `trade_status` `TRADE_SUCCESS` or
//! `TRADE_CLOSED` once fully refunded).
//!
//! Notifications are form POSTs to the precreate's `notify_url`, signed with
//! the platform key, carrying the precreate's `passback_params` unchanged.
//! Only an HTTP 200 whose body is exactly `success` acknowledges one;
//! anything else is retried ([`crate::delivery`], with the chaos knobs; use
//! the `alipay` schedule for Alipay's waits).
//!
//! `trade_no` is the simulator's payment id. The merchant's numbers live in
//! the book under an `alipay:` prefix, so they never meet `/v1` or WeChat Pay
//! references.
//!
//! [`SimConfig::alipay`]: crate::SimConfig::alipay
//! [`AlipayConfig::trade_finished_after`]: crate::AlipayConfig::trade_finished_after

use crate::Simulator;
use crate::config::AlipayConfig;
use crate::error::SimError;
use crate::payment::{
    AlipayTrade, CreatePayment, Lookup, PaymentStatus, PlatformOrder, StoredPayment,
};
use crate::refund::{AlipayRefund, CreateRefund, RefundStatus, StoredRefund};
use api_types::Currency;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use platform_protocols::alipay::{
    self as ali, AlipayError, CloseResponse, CommonResponse, FundChange, Method, PrecreateBiz,
    PrecreateResponse, QueryResponse, RefundBiz, RefundQueryBiz, RefundQueryResponse,
    RefundQueryStatus, RefundResponse, TradeNotification, TradeRef, TradeStatus, VerifiedRequest,
};
use platform_protocols::money::Yuan;
use serde::Serialize;

/// The gateway's path.
pub const GATEWAY_PATH: &str = "/gateway.do";

/// The book's namespace for Alipay merchant numbers.
const PREFIX: &str = "alipay:";

/// The largest amount of one trade, in fen (100 000 000 yuan).
const MAX_TOTAL_FEN: i64 = 10_000_000_000;

/// The book's merchant reference (and idempotency key) of an `out_trade_no`.
fn trade_reference(out_trade_no: &str) -> String {
    format!("{PREFIX}{out_trade_no}")
}

/// The book's refund number (and idempotency key) of a refund request:
/// `out_request_no` is unique within its trade.
fn refund_reference(out_trade_no: &str, out_request_no: &str) -> String {
    format!("{PREFIX}refund:{out_trade_no}:{out_request_no}")
}

/// The Alipay route; merged into the simulator's router when configured.
pub(crate) fn routes() -> Router<Simulator> {
    Router::new().route(GATEWAY_PATH, post(gateway))
}

/// A refusal as Alipay words it: the node's common fields.
type Refusal = CommonResponse;

/// 40002: the request itself is wrong (parameters, signature).
fn invalid(sub_code: &str, sub_msg: &str) -> Refusal {
    CommonResponse {
        code: "40002".to_owned(),
        msg: "Invalid Arguments".to_owned(),
        sub_code: Some(sub_code.to_owned()),
        sub_msg: Some(sub_msg.to_owned()),
    }
}

/// 40004: a business failure.
fn business(sub_code: &str, sub_msg: &str) -> Refusal {
    CommonResponse::business_failure(sub_code, sub_msg)
}

fn invalid_parameter(message: impl std::fmt::Display) -> Refusal {
    business("ACQ.INVALID_PARAMETER", &format!("参数无效: {message}"))
}

fn trade_not_exist() -> Refusal {
    business("ACQ.TRADE_NOT_EXIST", "交易不存在")
}

fn system_error(message: impl std::fmt::Display) -> Refusal {
    business("ACQ.SYSTEM_ERROR", &format!("系统错误: {message}"))
}

/// 20000: what a lost answer looks like to the merchant.
fn unavailable() -> Refusal {
    CommonResponse {
        code: "20000".to_owned(),
        msg: "Service Currently Unavailable".to_owned(),
        sub_code: Some("isp.unknow-error".to_owned()),
        sub_msg: Some("系统繁忙".to_owned()),
    }
}

/// Why a request was refused before its call ran, as Alipay's sub codes say it.
fn gateway_refusal(error: &AlipayError) -> Refusal {
    let (sub_code, sub_msg) = match error {
        AlipayError::MissingParameter("sign") => ("isv.missing-signature", "缺少签名参数"),
        AlipayError::MissingParameter("sign_type") => {
            ("isv.missing-signature-type", "缺少签名类型参数")
        }
        AlipayError::MissingParameter("app_id") => ("isv.missing-app-id", "缺少AppID参数"),
        AlipayError::MissingParameter("method") => ("isv.missing-method", "缺少方法名参数"),
        AlipayError::MissingParameter("timestamp") => ("isv.missing-timestamp", "缺少时间戳参数"),
        AlipayError::MissingParameter("version") => ("isv.missing-version", "缺少版本参数"),
        AlipayError::MissingParameter("biz_content") => {
            return invalid_parameter("缺少 biz_content");
        }
        AlipayError::UnsupportedSignType(_) => ("isv.invalid-signature-type", "无效的签名类型"),
        AlipayError::WrongAppId { .. } => ("isv.invalid-app-id", "无效的AppID参数"),
        AlipayError::UnknownMethod(_) => ("isv.invalid-method", "不存在的方法名"),
        AlipayError::BadSignature => ("isv.invalid-signature", "验签出错"),
        AlipayError::UnsupportedValue {
            name: "charset", ..
        } => ("isv.invalid-charset", "字符集错误"),
        AlipayError::UnsupportedValue { name: "format", .. } => {
            ("isv.invalid-format", "参数格式错误")
        }
        AlipayError::UnsupportedValue {
            name: "version", ..
        } => ("isv.invalid-version", "版本号错误"),
        AlipayError::Timestamp(_) => ("isv.invalid-timestamp", "非法的时间戳参数"),
        _ => ("isv.invalid-parameter", "参数无效"),
    };
    invalid(sub_code, &format!("{sub_msg} ({error})"))
}

/// A call's answer node as JSON text, or its refusal.
type Node = Result<String, Refusal>;

fn node(response: &impl Serialize) -> Node {
    serde_json::to_string(response).map_err(system_error)
}

/// `POST /gateway.do`: reads, verifies and dispatches one call, and signs its answer.
async fn gateway(
    State(simulator): State<Simulator>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let Some(config) = &simulator.config().alipay else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let params = match read_params(query.as_deref(), &body) {
        Ok(params) => params,
        Err(error) => {
            return signed(
                config,
                ali::ERROR_RESPONSE_NODE,
                Err(gateway_refusal(&error)),
            );
        }
    };
    // The node to answer in: the method's, when it names one we speak.
    let method = params
        .iter()
        .find(|(name, _)| name == "method")
        .and_then(|(_, value)| value.parse::<Method>().ok());
    let node_name = method.map_or(ali::ERROR_RESPONSE_NODE, Method::response_node);
    let verified = match ali::verify_request(&params, &config.app_id, &config.merchant_public) {
        Ok(verified) => verified,
        Err(error) => {
            tracing::info!(%error, ?method, "Alipay request refused");
            return signed(config, node_name, Err(gateway_refusal(&error)));
        }
    };
    if ali::parse_timestamp(&verified.timestamp).is_err() {
        let error = AlipayError::Timestamp(verified.timestamp.clone());
        return signed(config, node_name, Err(gateway_refusal(&error)));
    }
    let call = Call {
        simulator: &simulator,
        request: &verified,
    };
    let answer = match verified.method {
        Method::TradePrecreate => call.precreate(),
        Method::TradeQuery => call.query().await,
        Method::TradeClose => call.close().await,
        Method::TradeRefund => call.refund(),
        Method::TradeFastpayRefundQuery => call.refund_query().await,
    };
    if let Err(refusal) = &answer {
        tracing::info!(method = %verified.method, code = %refusal.code,
            sub_code = refusal.sub_code.as_deref(), "Alipay call refused");
    }
    signed(config, verified.method.response_node(), answer)
}

/// The query string's parameters and the form body's, together.
fn read_params(query: Option<&str>, body: &[u8]) -> Result<Vec<(String, String)>, AlipayError> {
    let body = std::str::from_utf8(body).map_err(|err| AlipayError::Form(err.to_string()))?;
    let mut params = ali::parse_form(query.unwrap_or_default())?;
    for (name, value) in ali::parse_form(body)? {
        if params.iter().any(|(seen, _)| *seen == name) {
            return Err(AlipayError::DuplicateParameter(name));
        }
        params.push((name, value));
    }
    Ok(params)
}

/// The answer, signed with the platform key over the node's exact bytes; HTTP 200 always.
fn signed(config: &AlipayConfig, node_name: &str, answer: Node) -> Response {
    let json = match answer {
        Ok(json) => json,
        Err(refusal) => match serde_json::to_string(&refusal) {
            Ok(json) => json,
            Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        },
    };
    match ali::sign_response(node_name, &json, &config.platform_private) {
        Ok(text) => {
            let mut response = text.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json;charset=utf-8"),
            );
            response
        }
        Err(err) => {
            tracing::error!(error = %err, "cannot sign an Alipay answer");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// One verified call.
struct Call<'a> {
    simulator: &'a Simulator,
    request: &'a VerifiedRequest,
}

/// An `out_trade_no` or `out_request_no`: 1 to 64 letters, digits and `_`.
fn valid_number(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

fn yuan(fen: i64) -> Option<Yuan> {
    Yuan::from_fen(fen).ok()
}

impl Call<'_> {
    fn biz<T: serde::de::DeserializeOwned>(&self) -> Result<T, Refusal> {
        self.request.biz().map_err(invalid_parameter)
    }

    /// The Alipay trade a [`TradeRef`] names (`trade_no` first, as Alipay reads it).
    fn find(&self, trade: &TradeRef) -> Result<StoredPayment, Refusal> {
        let reference;
        let lookup = match (&trade.trade_no, &trade.out_trade_no) {
            (Some(trade_no), _) => Lookup::Id(trade_no),
            (None, Some(out_trade_no)) => {
                reference = trade_reference(out_trade_no);
                Lookup::Reference(&reference)
            }
            (None, None) => return Err(invalid_parameter("out_trade_no 和 trade_no 不能同时为空")),
        };
        self.simulator
            .stored_payment(lookup)
            .filter(|stored| stored.alipay().is_some())
            .ok_or_else(trade_not_exist)
    }

    fn precreate(&self) -> Node {
        let biz: PrecreateBiz = self.biz()?;
        if !valid_number(&biz.out_trade_no) {
            return Err(invalid_parameter("out_trade_no"));
        }
        let fen = biz.total_amount.fen();
        if !(1..=MAX_TOTAL_FEN).contains(&fen) {
            return Err(invalid_parameter(
                "total_amount 须在 0.01 到 100000000 之间",
            ));
        }
        if biz.subject.trim().is_empty() || biz.subject.chars().count() > 256 {
            return Err(invalid_parameter("subject"));
        }
        let notify_url = self
            .request
            .notify_url
            .clone()
            .ok_or_else(|| invalid_parameter("notify_url (the simulator needs one)"))?;
        let reference = trade_reference(&biz.out_trade_no);
        let payment = CreatePayment {
            order_no: biz.out_trade_no.clone(),
            amount_cents: fen,
            currency: Currency::CNY,
            notify_url,
            merchant_reference: Some(reference.clone()),
        };
        let trade = AlipayTrade {
            app_id: self.request.app_id.clone(),
            out_trade_no: biz.out_trade_no,
            subject: biz.subject,
            timeout_express: biz.timeout_express,
            passback_params: biz.passback_params,
        };
        let (stored, replayed) = self
            .simulator
            .create_payment_with(&reference, payment, PlatformOrder::Alipay(trade))
            .map_err(|err| match err {
                SimError::IdempotencyKeyReused | SimError::MerchantReferenceReused => {
                    business("ACQ.CONTEXT_INCONSISTENT", "交易信息被篡改")
                }
                SimError::BadRequest(message) => invalid_parameter(message),
                other => system_error(other),
            })?;
        if !replayed && self.simulator.chaos().lose_create_answer {
            tracing::info!(payment_id = %stored.payment_id, "chaos: accepted, answering 20000");
            return Err(unavailable());
        }
        match stored.status {
            PaymentStatus::Succeeded => Err(business("ACQ.TRADE_HAS_SUCCESS", "交易已被支付")),
            PaymentStatus::Closed | PaymentStatus::Failed => {
                Err(business("ACQ.TRADE_HAS_CLOSE", "交易已经关闭"))
            }
            PaymentStatus::Processing => node(&PrecreateResponse {
                common: CommonResponse::success(),
                out_trade_no: Some(stored.request.order_no.clone()),
                qr_code: Some(qr_code(&stored)),
            }),
        }
    }

    async fn query(&self) -> Node {
        let found = self.find(&self.biz()?)?;
        // Counted and delayed as a merchant's query.
        self.simulator
            .query_by_id(&found.payment_id)
            .await
            .map_err(|_| trade_not_exist())?;
        let stored = self
            .simulator
            .stored_payment(Lookup::Id(&found.payment_id))
            .ok_or_else(trade_not_exist)?;
        let trade = stored.alipay().ok_or_else(trade_not_exist)?;
        let paid = stored.status == PaymentStatus::Succeeded;
        let total = yuan(stored.request.amount_cents);
        node(&QueryResponse {
            common: CommonResponse::success(),
            trade_no: Some(stored.payment_id.clone()),
            out_trade_no: Some(trade.out_trade_no.clone()),
            buyer_logon_id: paid.then(|| "sim***@alipay.test".to_owned()),
            trade_status: Some(trade_status(&stored)),
            total_amount: total,
            receipt_amount: total.filter(|_| paid),
            buyer_pay_amount: total.filter(|_| paid),
            send_pay_date: stored
                .decided_at
                .filter(|_| paid)
                .map(ali::format_timestamp),
            buyer_user_id: paid.then(|| buyer_id(&stored)),
        })
    }

    async fn close(&self) -> Node {
        let found = self.find(&self.biz()?)?;
        let trade = found.alipay().ok_or_else(trade_not_exist)?;
        match self.simulator.close_by_id(&found.payment_id).await {
            Ok(_) => node(&CloseResponse {
                common: CommonResponse::success(),
                trade_no: Some(found.payment_id.clone()),
                out_trade_no: Some(trade.out_trade_no.clone()),
            }),
            Err(SimError::AlreadySucceeded(_)) => {
                Err(business("ACQ.TRADE_STATUS_ERROR", "交易状态不合法"))
            }
            Err(SimError::PaymentNotFound(_)) => Err(trade_not_exist()),
            Err(other) => Err(system_error(other)),
        }
    }

    fn refund(&self) -> Node {
        let biz: RefundBiz = self.biz()?;
        let payment = self.find(&TradeRef::by_out_trade_no(&biz.out_trade_no))?;
        let fen = biz.refund_amount.fen();
        if fen <= 0 {
            return Err(invalid_parameter("refund_amount 须大于 0"));
        }
        // Without a request number the refund must be the whole trade, and
        // the trade number stands for it.
        let out_request_no = match biz.out_request_no {
            Some(number) => number,
            None if fen == payment.request.amount_cents => biz.out_trade_no.clone(),
            None => {
                return Err(business(
                    "ACQ.REFUND_AMT_NOT_EQUAL_TOTAL",
                    "撤销或退款金额与订单金额不一致",
                ));
            }
        };
        if !valid_number(&out_request_no) {
            return Err(invalid_parameter("out_request_no"));
        }
        let reference = refund_reference(&biz.out_trade_no, &out_request_no);
        let request = CreateRefund {
            payment_id: payment.payment_id.clone(),
            refund_no: reference.clone(),
            amount_cents: fen,
            currency: payment.request.currency,
            notify_url: payment.request.notify_url.clone(),
        };
        let extra = AlipayRefund {
            out_trade_no: biz.out_trade_no.clone(),
            out_request_no,
            refund_reason: biz.refund_reason,
        };
        let (stored, payment, replayed) = self
            .simulator
            .create_refund_now(&reference, request, extra)
            .map_err(|err| refund_refusal(self.simulator, &payment.payment_id, err))?;
        if !replayed && self.simulator.chaos().lose_create_answer {
            tracing::info!(refund_id = %stored.refund_id, "chaos: refunded, answering 20000");
            return Err(unavailable());
        }
        if stored.status != RefundStatus::Succeeded {
            return Err(business("ACQ.SELLER_BALANCE_NOT_ENOUGH", "卖家余额不足"));
        }
        node(&RefundResponse {
            common: CommonResponse::success(),
            trade_no: Some(payment.payment_id.clone()),
            out_trade_no: Some(biz.out_trade_no),
            buyer_logon_id: Some("sim***@alipay.test".to_owned()),
            fund_change: Some(if replayed {
                FundChange::No
            } else {
                FundChange::Yes
            }),
            refund_fee: yuan(payment.refunds.refunded_cents()),
            gmt_refund_pay: stored.decided_at.map(ali::format_timestamp),
        })
    }

    async fn refund_query(&self) -> Node {
        let biz: RefundQueryBiz = self.biz()?;
        let payment = self.find(&TradeRef::by_out_trade_no(&biz.out_trade_no))?;
        let reference = refund_reference(&biz.out_trade_no, &biz.out_request_no);
        let refund = match self.simulator.refund_by_reference(&reference).await {
            Ok(found) => self.simulator.stored_refund(&found.state.refund_id),
            Err(_) => None,
        };
        let succeeded = refund
            .as_ref()
            .filter(|refund| refund.alipay().is_some())
            .filter(|refund| refund.status == RefundStatus::Succeeded);
        node(&RefundQueryResponse {
            common: CommonResponse::success(),
            trade_no: Some(payment.payment_id.clone()),
            out_trade_no: Some(biz.out_trade_no),
            out_request_no: Some(biz.out_request_no),
            total_amount: yuan(payment.request.amount_cents),
            refund_amount: succeeded.and_then(|refund| yuan(refund.request.amount_cents)),
            refund_status: succeeded.map(|_| RefundQueryStatus::RefundSuccess),
            gmt_refund_pay: succeeded
                .and_then(|refund| refund.decided_at)
                .map(ali::format_timestamp),
        })
    }
}

/// A refund the book refused, as Alipay words it.
fn refund_refusal(simulator: &Simulator, payment_id: &str, err: SimError) -> Refusal {
    match err {
        SimError::IdempotencyKeyReused | SimError::RefundNoReused => business(
            "ACQ.DISCORDANT_REPEAT_REQUEST",
            "再次请求的参数与原请求不一致",
        ),
        SimError::PaymentNotRefundable { .. } => {
            let finished = simulator
                .stored_payment(Lookup::Id(payment_id))
                .is_some_and(|payment| payment.finished_at.is_some());
            if finished {
                business("ACQ.TRADE_HAS_FINISHED", "交易已完结")
            } else {
                business("ACQ.TRADE_STATUS_ERROR", "交易状态不合法")
            }
        }
        SimError::RefundExceedsPayment { .. } => {
            business("ACQ.REASON_TRADE_REFUND_FEE_ERR", "退款金额无效")
        }
        SimError::PaymentNotFound(_) => trade_not_exist(),
        SimError::BadRequest(message) => invalid_parameter(message),
        other => system_error(other),
    }
}

/// The payment link: stable for a trade, so a replayed precreate shows the same QR code.
fn qr_code(stored: &StoredPayment) -> String {
    format!("https://qr.alipay.com/bax{}", stored.token())
}

/// A stable 16-digit Alipay user id (`2088...`) for the trade's simulated buyer.
fn buyer_id(stored: &StoredPayment) -> String {
    let digits: String = stored
        .payment_id
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(char::from)
        .chain(std::iter::repeat('0'))
        .take(12)
        .collect();
    format!("2088{digits}")
}

/// Where a trade stands, as Alipay says it.
fn trade_status(stored: &StoredPayment) -> TradeStatus {
    match stored.status {
        PaymentStatus::Processing => TradeStatus::WaitBuyerPay,
        PaymentStatus::Succeeded if stored.finished_at.is_some() => TradeStatus::TradeFinished,
        PaymentStatus::Succeeded
            if stored.refunds.refunded_cents() >= stored.request.amount_cents =>
        {
            TradeStatus::TradeClosed
        }
        PaymentStatus::Succeeded => TradeStatus::TradeSuccess,
        PaymentStatus::Closed | PaymentStatus::Failed => TradeStatus::TradeClosed,
    }
}

/// The notification of a trade as it stands (`TRADE_SUCCESS`, or
/// `TRADE_FINISHED` once finished), without `notify_id` and `notify_time`
/// (the sender fills them in); None for a payment not made through the gateway.
pub(crate) fn trade_notification(stored: &StoredPayment) -> Option<TradeNotification> {
    let trade = stored.alipay()?;
    let total = yuan(stored.request.amount_cents);
    let refunded = stored.refunds.refunded_cents();
    let mut notification = TradeNotification::new(
        "",
        "",
        &trade.app_id,
        &stored.payment_id,
        &trade.out_trade_no,
    );
    notification.buyer_id = Some(buyer_id(stored));
    notification.trade_status = Some(trade_status(stored));
    notification.total_amount = total;
    notification.receipt_amount = total;
    notification.buyer_pay_amount = total;
    notification.refund_fee = (refunded > 0).then(|| yuan(refunded)).flatten();
    notification.subject = Some(trade.subject.clone());
    notification.gmt_create = Some(ali::format_timestamp(stored.created_at));
    notification.gmt_payment = stored.decided_at.map(ali::format_timestamp);
    notification.gmt_close = stored.finished_at.map(ali::format_timestamp);
    notification.passback_params = trade.passback_params.clone();
    Some(notification)
}

/// The notification of a refund: the trade as it stands after it (`trade_status`
/// `TRADE_CLOSED` once fully refunded), with `out_biz_no`, `refund_fee` (the
/// trade's refunded total) and `gmt_refund`.
pub(crate) fn refund_notification(
    refund: &StoredRefund,
    payment: &StoredPayment,
) -> Option<TradeNotification> {
    let extra = refund.alipay()?;
    let mut notification = trade_notification(payment)?;
    notification.out_biz_no = Some(extra.out_request_no.clone());
    notification.refund_fee = yuan(payment.refunds.refunded_cents());
    notification.gmt_refund = refund.decided_at.map(ali::format_timestamp);
    Some(notification)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_letters_digits_and_underscores_up_to_64() {
        assert!(valid_number("T_2024_0001"));
        assert!(valid_number(&"9".repeat(64)));
        for bad in ["", "a-b", "a b", "订单", &"9".repeat(65)] {
            assert!(!valid_number(bad), "{bad:?}");
        }
    }

    #[test]
    fn gateway_refusals_use_alipays_sub_codes() {
        let sub_code = |error: AlipayError| gateway_refusal(&error).sub_code.unwrap_or_default();
        assert_eq!(sub_code(AlipayError::BadSignature), "isv.invalid-signature");
        assert_eq!(
            sub_code(AlipayError::UnsupportedSignType("RSA".into())),
            "isv.invalid-signature-type"
        );
        assert_eq!(
            sub_code(AlipayError::WrongAppId {
                expected: "1".into(),
                got: "2".into()
            }),
            "isv.invalid-app-id"
        );
        assert_eq!(
            sub_code(AlipayError::MissingParameter("sign")),
            "isv.missing-signature"
        );
        assert_eq!(
            gateway_refusal(&AlipayError::BadSignature).code,
            "40002",
            "invalid arguments"
        );
    }

    #[test]
    fn a_trade_is_notified_as_it_stands_in_yuan_with_its_passback() {
        use crate::chaos::Chaos;
        use crate::payment::{Created, PaymentBook};
        let mut book = PaymentBook::default();
        let request = CreatePayment {
            order_no: "T1".into(),
            amount_cents: 1250,
            currency: Currency::CNY,
            notify_url: "http://127.0.0.1:9/notify".into(),
            merchant_reference: Some(trade_reference("T1")),
        };
        let trade = AlipayTrade {
            app_id: "2021000000000001".into(),
            out_trade_no: "T1".into(),
            subject: "Checkout order".into(),
            timeout_express: None,
            passback_params: Some("payment_id%3D42".into()),
        };
        let Ok(Created::New(stored)) = book.create_with(
            &trade_reference("T1"),
            request,
            Chaos::default(),
            Some(PlatformOrder::Alipay(trade)),
        ) else {
            panic!("created");
        };
        let waiting = trade_status(&stored);
        assert!(book.decide(&stored.payment_id, PaymentStatus::Succeeded));
        let paid = book.get(&stored.payment_id).cloned().expect("stored");
        let finished = book.finish(&stored.payment_id).expect("finishes");

        let success = trade_notification(&paid).expect("an Alipay trade");
        let done = trade_notification(&finished).expect("an Alipay trade");

        assert_eq!(waiting, TradeStatus::WaitBuyerPay);
        assert_eq!(success.trade_status, Some(TradeStatus::TradeSuccess));
        assert_eq!(
            success.total_amount.map(|yuan| yuan.to_string()).as_deref(),
            Some("12.50")
        );
        assert_eq!(success.passback_params.as_deref(), Some("payment_id%3D42"));
        assert_eq!(success.trade_no, stored.payment_id);
        assert!(success.gmt_payment.is_some() && success.gmt_close.is_none());
        assert_eq!(done.trade_status, Some(TradeStatus::TradeFinished));
        assert!(done.gmt_close.is_some());
        assert!(book.finish(&stored.payment_id).is_none(), "finishes once");
    }

    #[test]
    fn params_come_from_the_query_and_the_body_but_never_twice() {
        let params = read_params(Some("method=a&app_id=1"), b"biz_content=%7B%7D").expect("reads");
        assert_eq!(params.len(), 3);
        assert_eq!(params[2], ("biz_content".to_owned(), "{}".to_owned()));
        assert!(read_params(Some("app_id=1"), b"app_id=2").is_err());
    }
}
