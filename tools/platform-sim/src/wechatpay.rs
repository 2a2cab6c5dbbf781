//! WeChat Pay API v3, server side: the calls the checkout makes, served from the
//! same book as `/v1` payments and refunds, when [`SimConfig::wechatpay`] is set.
//!
//! Every request must say who is calling and what it reads, as WeChat Pay's
//! API v3 rules require (a `User-Agent` identifying the client, `Accept:
//! application/json`): one without either header is answered as WeChat Pay
//! answers it, 400 `{"code":"INVALID_REQUEST","message":"Http头缺少Accept或User-Agent"}`,
//! and changes nothing. Every request's `Authorization` is then verified with
//! the merchant's public key (`MerchantKey::verify_request_headers`: the
//! merchant id, the serial, a timestamp within five minutes, the signature); a
//! request that fails is answered 401 `{"code":"SIGN_ERROR","message":...}`
//! and changes nothing. Every answer, errors
//! included, is signed with the platform key (`Wechatpay-Timestamp`, `-Nonce`,
//! `-Signature`, `-Serial`, `-Signature-Type`). Errors are WeChat Pay's
//! `{"code","message"}` ([`ErrorBody`]).
//!
//! | call | answer |
//! |---|---|
//! | `POST /v3/pay/transactions/native` | 200 `{"code_url":"weixin://wxpay/bizpayurl?pr=..."}`; the same `out_trade_no` and body again, the same `code_url`; other fields, 403 `OUT_TRADE_NO_USED`; the order closed, 400 `ORDER_CLOSED`; paid, 403 `ORDERPAID` |
//! | `GET /v3/pay/transactions/out-trade-no/{out_trade_no}?mchid=` | 200 `Transaction` (`NOTPAY`, `SUCCESS`, `REFUND` once refunded, `CLOSED`, `PAYERROR`), or 404 `ORDER_NOT_EXIST` |
//! | `POST /v3/pay/transactions/out-trade-no/{out_trade_no}/close` | 204; paid, 403 `ORDERPAID`; unknown, 404 `ORDER_NOT_EXIST` |
//! | `POST /v3/refund/domestic/refunds` | 200 `Refund` (`PROCESSING`); the same `out_refund_no` and body again, the same refund; otherwise 400 `INVALID_REQUEST`; unknown order, 404 `RESOURCE_NOT_EXISTS` |
//! | `GET /v3/refund/domestic/refunds/{out_refund_no}` | 200 `Refund`, or 404 `RESOURCE_NOT_EXISTS` |
//!
//! A payment is decided by the same outcome rule as a `/v1` one: a success is
//! `SUCCESS` and sends a `TRANSACTION.SUCCESS` notification, a failure is
//! `PAYERROR` and sends none (WeChat Pay notifies only payments that succeed). A
//! refund ends `SUCCESS` (`REFUND.SUCCESS`) or `ABNORMAL` (`REFUND.ABNORMAL`).
//! Notifications are delivered by [`crate::delivery`] with the chaos knobs; use
//! the `wechat` schedule for WeChat Pay's retry waits.
//!
//! The merchant's numbers live in the book under a `wechatpay:` prefix
//! (`merchant_reference`, `refund_no`), so they never meet `/v1` references.
//!
//! [`SimConfig::wechatpay`]: crate::SimConfig::wechatpay

use crate::Simulator;
use crate::config::WechatPayConfig;
use crate::error::SimError;
use crate::payment::{
    CreatePayment, Lookup, PaymentStatus, PlatformOrder, StoredPayment, WechatOrder,
};
use crate::refund::{CreateRefund, RefundStatus, StoredRefund, WechatRefund};
use api_types::Currency;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use platform_protocols::wechatpay::{
    self as wx, CloseRequest, ErrorBody, NativePrepayRequest, NativePrepayResponse, Payer,
    RefundAmount, RefundNotification, RefundNotificationAmount, RefundRequest, TradeState,
    TradeType, Transaction, TransactionAmount, paths,
};
use serde::Serialize;
use time::OffsetDateTime;

/// The book's namespace for WeChat Pay merchant numbers.
const PREFIX: &str = "wechatpay:";

/// The book's merchant reference (and idempotency key) of an `out_trade_no`.
fn order_reference(out_trade_no: &str) -> String {
    format!("{PREFIX}{out_trade_no}")
}

/// The book's refund number (and idempotency key) of an `out_refund_no`.
fn refund_reference(out_refund_no: &str) -> String {
    format!("{PREFIX}refund:{out_refund_no}")
}

/// The WeChat Pay routes; merged into the simulator's router when configured.
pub(crate) fn routes() -> Router<Simulator> {
    Router::new()
        .route(paths::NATIVE_PREPAY, post(answered(prepay)))
        .route(
            "/v3/pay/transactions/out-trade-no/{out_trade_no}",
            get(query_order),
        )
        .route(
            "/v3/pay/transactions/out-trade-no/{out_trade_no}/close",
            post(close_order),
        )
        .route(paths::REFUNDS, post(answered(refund)))
        .route(
            "/v3/refund/domestic/refunds/{out_refund_no}",
            get(query_refund),
        )
}

/// A refusal as WeChat Pay words it.
#[derive(Debug)]
struct WxError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl WxError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    fn param(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "PARAM_ERROR", message)
    }

    fn order_not_exist() -> Self {
        Self::new(StatusCode::NOT_FOUND, "ORDER_NOT_EXIST", "订单不存在")
    }

    fn refund_not_exist() -> Self {
        Self::new(StatusCode::NOT_FOUND, "RESOURCE_NOT_EXISTS", "退款单不存在")
    }

    fn order_paid() -> Self {
        Self::new(StatusCode::FORBIDDEN, "ORDERPAID", "订单已支付")
    }

    /// WeChat Pay's refusal of a request without `Accept` or `User-Agent`.
    fn missing_client_headers() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "INVALID_REQUEST",
            MISSING_CLIENT_HEADERS,
        )
    }

    fn system() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "SYSTEM_ERROR",
            "系统异常，请稍后重试",
        )
    }
}

/// An answer before signing: a status and a body (empty for 204).
type Answer = Result<(StatusCode, Vec<u8>), WxError>;

fn json_answer(status: StatusCode, body: &impl Serialize) -> Answer {
    serde_json::to_vec(body)
        .map(|bytes| (status, bytes))
        .map_err(|_| WxError::system())
}

/// Signs an answer (or an error) with the platform key.
fn signed(simulator: &Simulator, answer: Answer) -> Response {
    let (status, body) = answer.unwrap_or_else(|error| {
        let body = ErrorBody {
            code: error.code.to_owned(),
            message: error.message,
            detail: None,
        };
        (error.status, serde_json::to_vec(&body).unwrap_or_default())
    });
    let Some(config) = &simulator.config().wechatpay else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let signature = config
        .platform_signer
        .sign(&body, now(), &wx::generate_nonce());
    let has_body = !body.is_empty();
    let mut response = (status, body).into_response();
    if has_body {
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    if let Err(err) = signature.insert_into(response.headers_mut()) {
        tracing::error!(error = %err, "cannot write the Wechatpay-* headers");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    response
}

fn now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

/// WeChat Pay's words for a request without `Accept` or `User-Agent`.
pub const MISSING_CLIENT_HEADERS: &str = "Http头缺少Accept或User-Agent";

/// Whether the request lacks `Accept` or `User-Agent` (or sends one empty).
fn lacks_client_headers(headers: &HeaderMap) -> bool {
    [header::ACCEPT, header::USER_AGENT].iter().any(|name| {
        headers
            .get(name)
            .is_none_or(|value| value.as_bytes().iter().all(u8::is_ascii_whitespace))
    })
}

/// A merchant request that carried `Accept` and `User-Agent` (else a signed
/// 400 `INVALID_REQUEST`) and whose signature verified with the merchant's
/// public key (over the request as received; else a signed 401
/// `SIGN_ERROR`), both before any handler runs. Every route takes one,
/// answers with [`Verified::answer`], and so is signed the same way.
struct Verified {
    simulator: Simulator,
    uri: Uri,
    body: Bytes,
}

impl FromRequest<Simulator> for Verified {
    type Rejection = Response;

    async fn from_request(request: Request, simulator: &Simulator) -> Result<Self, Response> {
        let (parts, body) = request.into_parts();
        if lacks_client_headers(&parts.headers) {
            tracing::info!(path = %parts.uri.path(), "WeChat Pay request refused: no Accept or User-Agent");
            return Err(signed(simulator, Err(WxError::missing_client_headers())));
        }
        let body = axum::body::to_bytes(body, MAX_BODY)
            .await
            .map_err(|_| signed(simulator, Err(WxError::param("请求体过大"))))?;
        let verified = Self {
            simulator: simulator.clone(),
            uri: parts.uri,
            body,
        };
        verified
            .authenticate(&parts.method, &parts.headers)
            .map_err(|error| signed(simulator, Err(error)))?;
        Ok(verified)
    }
}

/// The largest request body read.
const MAX_BODY: usize = 64 * 1024;

impl Verified {
    /// The WeChat Pay side's configuration (the extractor already checked it is there).
    fn config(&self) -> Result<&WechatPayConfig, WxError> {
        self.simulator
            .config()
            .wechatpay
            .as_ref()
            .ok_or_else(WxError::system)
    }

    /// Verifies the merchant's signature over the request as received.
    fn authenticate(&self, method: &Method, headers: &HeaderMap) -> Result<(), WxError> {
        let uri = &self.uri;
        let path = uri
            .path_and_query()
            .map_or_else(|| uri.path(), |path| path.as_str());
        self.config()?
            .merchant
            .verify_request_headers(headers, method, path, &self.body, now())
            .map_err(|err| {
                tracing::info!(error = %err, %path, "WeChat Pay request refused: bad signature");
                WxError::new(StatusCode::UNAUTHORIZED, "SIGN_ERROR", err.to_string())
            })?;
        Ok(())
    }

    /// The signed answer.
    fn answer(&self, answer: Answer) -> Response {
        signed(&self.simulator, answer)
    }

    /// The simulator, the WeChat Pay configuration, and the body read as `T`.
    fn json<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<(&Simulator, &WechatPayConfig, T), WxError> {
        Ok((&self.simulator, self.config()?, parse(&self.body)?))
    }
}

/// A handler that computes its answer from the verified request at once, signed.
fn answered(
    compute: fn(&Verified) -> Answer,
) -> impl Fn(Verified) -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
    move |request: Verified| std::future::ready(request.answer(compute(&request)))
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, WxError> {
    serde_json::from_slice(body).map_err(|err| WxError::param(format!("请求体格式错误: {err}")))
}

fn check_mchid(config: &WechatPayConfig, mchid: &str) -> Result<(), WxError> {
    if mchid == config.mchid {
        Ok(())
    } else {
        Err(WxError::new(
            StatusCode::BAD_REQUEST,
            "MCH_NOT_EXISTS",
            format!("商户号 {mchid} 不存在"),
        ))
    }
}

fn prepay(verified: &Verified) -> Answer {
    let (simulator, config, request) = verified.json::<NativePrepayRequest>()?;
    check_mchid(config, &request.mchid)?;
    if request.appid != config.appid {
        return Err(WxError::new(
            StatusCode::BAD_REQUEST,
            "APPID_MCHID_NOT_MATCH",
            "AppID和mch_id不匹配",
        ));
    }
    if request.amount.total <= 0 {
        return Err(WxError::param("amount.total 必须大于0"));
    }
    if request.amount.currency != Currency::CNY {
        return Err(WxError::param("amount.currency 只支持CNY"));
    }
    let reference = order_reference(request.out_trade_no.as_str());
    let payment = CreatePayment {
        order_no: request.out_trade_no.to_string(),
        amount_cents: request.amount.total,
        currency: request.amount.currency,
        notify_url: request.notify_url.clone(),
        merchant_reference: Some(reference.clone()),
    };
    let order = WechatOrder {
        appid: request.appid,
        mchid: request.mchid,
        description: request.description,
        out_trade_no: request.out_trade_no,
        attach: request.attach,
    };
    let (stored, replayed) = simulator
        .create_payment_with(&reference, payment, PlatformOrder::Wechat(order))
        .map_err(|err| match err {
            SimError::IdempotencyKeyReused | SimError::MerchantReferenceReused => {
                WxError::new(StatusCode::FORBIDDEN, "OUT_TRADE_NO_USED", "商户订单号重复")
            }
            SimError::BadRequest(message) => WxError::param(message),
            other => WxError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_REQUEST",
                other.to_string(),
            ),
        })?;
    if !replayed && simulator.chaos().lose_create_answer {
        tracing::info!(payment_id = %stored.payment_id, "chaos: accepted, answering 500");
        return Err(WxError::system());
    }
    match stored.status {
        PaymentStatus::Closed => Err(WxError::new(
            StatusCode::BAD_REQUEST,
            "ORDER_CLOSED",
            "订单已关闭",
        )),
        PaymentStatus::Succeeded => Err(WxError::order_paid()),
        PaymentStatus::Processing | PaymentStatus::Failed => json_answer(
            StatusCode::OK,
            &NativePrepayResponse {
                code_url: code_url(&stored),
            },
        ),
    }
}

/// The payment link: stable for a payment, so a replayed prepay shows the same QR code.
fn code_url(stored: &StoredPayment) -> String {
    format!("weixin://wxpay/bizpayurl?pr={}", stored.token())
}

async fn query_order(Path(out_trade_no): Path<String>, request: Verified) -> Response {
    let answer = async {
        let simulator = &request.simulator;
        let config = request.config()?;
        let mchid = request
            .uri
            .query()
            .unwrap_or_default()
            .split('&')
            .find_map(|pair| pair.strip_prefix("mchid="))
            .ok_or_else(|| WxError::param("缺少参数 mchid"))?;
        check_mchid(config, mchid)?;
        let payment = simulator
            .query_by_reference(&order_reference(&out_trade_no))
            .await
            .map_err(|_| WxError::order_not_exist())?;
        let stored = simulator
            .stored_payment(Lookup::Id(&payment.payment_id))
            .ok_or_else(WxError::order_not_exist)?;
        let order = stored.wechat().ok_or_else(WxError::order_not_exist)?;
        json_answer(StatusCode::OK, &transaction(&stored, order))
    }
    .await;
    request.answer(answer)
}

async fn close_order(Path(out_trade_no): Path<String>, request: Verified) -> Response {
    let answer = async {
        let close: CloseRequest = parse(&request.body)?;
        check_mchid(request.config()?, &close.mchid)?;
        match request
            .simulator
            .close_by_reference(&order_reference(&out_trade_no))
            .await
        {
            Ok(_) => Ok((StatusCode::NO_CONTENT, Vec::new())),
            Err(SimError::AlreadySucceeded(_)) => Err(WxError::order_paid()),
            Err(SimError::PaymentNotFound(_)) => Err(WxError::order_not_exist()),
            Err(other) => Err(WxError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_REQUEST",
                other.to_string(),
            )),
        }
    }
    .await;
    request.answer(answer)
}

/// An `out_refund_no`: 1 to 64 characters of `[A-Za-z0-9_-|*@]`.
fn valid_out_refund_no(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"_-|*@".contains(&byte))
}

fn refund(verified: &Verified) -> Answer {
    let (simulator, config, request) = verified.json::<RefundRequest>()?;
    if !valid_out_refund_no(&request.out_refund_no) {
        return Err(WxError::param("out_refund_no 格式错误"));
    }
    let payment = match (&request.transaction_id, &request.out_trade_no) {
        (Some(transaction_id), _) => simulator.stored_payment(Lookup::Id(transaction_id)),
        (None, Some(out_trade_no)) => {
            simulator.stored_payment(Lookup::Reference(&order_reference(out_trade_no.as_str())))
        }
        (None, None) => {
            return Err(WxError::param("transaction_id 和 out_trade_no 必须二选一"));
        }
    }
    .ok_or_else(|| WxError::new(StatusCode::NOT_FOUND, "RESOURCE_NOT_EXISTS", "订单不存在"))?;
    let order = payment
        .wechat()
        .cloned()
        .ok_or_else(|| WxError::new(StatusCode::NOT_FOUND, "RESOURCE_NOT_EXISTS", "订单不存在"))?;
    if request.amount.total != payment.request.amount_cents {
        return Err(WxError::param("amount.total 与订单金额不一致"));
    }
    if request.amount.currency != payment.request.currency {
        return Err(WxError::param("amount.currency 与订单币种不一致"));
    }
    let reference = refund_reference(&request.out_refund_no);
    let create = CreateRefund {
        payment_id: payment.payment_id.clone(),
        refund_no: reference.clone(),
        amount_cents: request.amount.refund,
        currency: request.amount.currency,
        notify_url: request
            .notify_url
            .clone()
            .unwrap_or_else(|| payment.request.notify_url.clone()),
    };
    let extra = WechatRefund {
        mchid: config.mchid.clone(),
        out_trade_no: order.out_trade_no,
        out_refund_no: request.out_refund_no,
        total: payment.request.amount_cents,
    };
    let invalid =
        |message: String| WxError::new(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message);
    let (stored, replayed) = simulator
        .create_refund_with(&reference, create, extra)
        .map_err(|err| match err {
            SimError::IdempotencyKeyReused | SimError::RefundNoReused => {
                invalid("退款单号已使用，且参数不一致".to_owned())
            }
            SimError::PaymentNotRefundable { .. } => invalid("订单未支付，不能退款".to_owned()),
            SimError::RefundExceedsPayment { .. } => {
                invalid("申请退款金额超过订单可退金额".to_owned())
            }
            SimError::BadRequest(message) => WxError::param(message),
            SimError::PaymentNotFound(_) => {
                WxError::new(StatusCode::NOT_FOUND, "RESOURCE_NOT_EXISTS", "订单不存在")
            }
            other => invalid(other.to_string()),
        })?;
    if !replayed && simulator.chaos().lose_create_answer {
        tracing::info!(refund_id = %stored.refund_id, "chaos: accepted, answering 500");
        return Err(WxError::system());
    }
    let wechat = stored.wechat().ok_or_else(WxError::system)?;
    json_answer(StatusCode::OK, &refund_view(&stored, wechat))
}

async fn query_refund(Path(out_refund_no): Path<String>, request: Verified) -> Response {
    let answer = async {
        let simulator = &request.simulator;
        let found = simulator
            .refund_by_reference(&refund_reference(&out_refund_no))
            .await
            .map_err(|_| WxError::refund_not_exist())?;
        let stored = simulator
            .stored_refund(&found.state.refund_id)
            .ok_or_else(WxError::refund_not_exist)?;
        let wechat = stored.wechat().ok_or_else(WxError::refund_not_exist)?;
        json_answer(StatusCode::OK, &refund_view(&stored, wechat))
    }
    .await;
    request.answer(answer)
}

/// A payment as WeChat Pay shows it: in a query and in `TRANSACTION.SUCCESS`.
pub(crate) fn transaction(stored: &StoredPayment, order: &WechatOrder) -> Transaction {
    let (trade_state, description) = match stored.status {
        PaymentStatus::Processing => (TradeState::NotPay, "订单未支付"),
        PaymentStatus::Succeeded if stored.refunds.refunded_cents() > 0 => {
            (TradeState::Refund, "转入退款")
        }
        PaymentStatus::Succeeded => (TradeState::Success, "支付成功"),
        PaymentStatus::Closed => (TradeState::Closed, "订单已关闭"),
        PaymentStatus::Failed => (TradeState::PayError, "支付失败"),
    };
    let paid = stored.status == PaymentStatus::Succeeded;
    let total = stored.request.amount_cents;
    let currency = stored.request.currency;
    Transaction {
        appid: order.appid.clone(),
        mchid: order.mchid.clone(),
        out_trade_no: order.out_trade_no.clone(),
        transaction_id: paid.then(|| stored.payment_id.clone()),
        trade_type: paid.then_some(TradeType::Native),
        trade_state,
        trade_state_desc: description.to_owned(),
        bank_type: paid.then(|| "OTHERS".to_owned()),
        attach: order.attach.clone(),
        success_time: if paid { stored.decided_at } else { None },
        payer: Some(Payer {
            openid: paid.then(|| format!("o_sim_{}", &stored.payment_id)),
        }),
        amount: TransactionAmount {
            total,
            payer_total: paid.then_some(total),
            currency,
            payer_currency: paid.then_some(currency),
        },
    }
}

fn refund_status(status: RefundStatus) -> wx::RefundStatus {
    match status {
        RefundStatus::Processing => wx::RefundStatus::Processing,
        RefundStatus::Succeeded => wx::RefundStatus::Success,
        RefundStatus::Failed => wx::RefundStatus::Abnormal,
    }
}

/// A refund as WeChat Pay shows it in the answer to a refund request and query.
pub(crate) fn refund_view(stored: &StoredRefund, refund: &WechatRefund) -> wx::Refund {
    let amount = stored.request.amount_cents;
    wx::Refund {
        refund_id: stored.refund_id.clone(),
        out_refund_no: refund.out_refund_no.clone(),
        transaction_id: stored.request.payment_id.clone(),
        out_trade_no: refund.out_trade_no.clone(),
        channel: Some("ORIGINAL".to_owned()),
        user_received_account: Some("支付用户零钱".to_owned()),
        success_time: if stored.status == RefundStatus::Succeeded {
            stored.decided_at
        } else {
            None
        },
        create_time: stored.created_at,
        status: refund_status(stored.status),
        funds_account: Some("AVAILABLE".to_owned()),
        amount: RefundAmount {
            total: refund.total,
            refund: amount,
            payer_total: refund.total,
            payer_refund: amount,
            settlement_refund: Some(amount),
            settlement_total: Some(refund.total),
            discount_refund: Some(0),
            currency: stored.request.currency,
        },
    }
}

/// The resource of a `REFUND.*` notification.
pub(crate) fn refund_notification(
    stored: &StoredRefund,
    refund: &WechatRefund,
) -> RefundNotification {
    let view = refund_view(stored, refund);
    RefundNotification {
        mchid: refund.mchid.clone(),
        out_trade_no: view.out_trade_no,
        transaction_id: view.transaction_id,
        out_refund_no: view.out_refund_no,
        refund_id: view.refund_id,
        refund_status: view.status,
        success_time: view.success_time,
        user_received_account: view.user_received_account,
        amount: RefundNotificationAmount {
            total: view.amount.total,
            refund: view.amount.refund,
            payer_total: view.amount.payer_total,
            payer_refund: view.amount.payer_refund,
        },
    }
}
