//! The Alipay open platform (`PLATFORM=alipay`): face-to-face payments (the
//! shopper scans a QR code, `alipay.trade.precreate`), their query and close,
//! and refunds.
//!
//! Every call is a form POST to the gateway, signed RSA2 with the application
//! private key (`platform_protocols::alipay::sign_request`), and every answer's
//! `sign` is verified with the Alipay public key over the response node's exact
//! bytes (`verify_response`) before a byte of it is believed: an unsigned or
//! wrongly signed answer (an unsigned `error_response` among them) is no answer.
//! Answers carry no `app_id`; the node's `out_trade_no`, when it has one, must
//! be the order asked about. How our numbers map onto Alipay's:
//!
//! | ours | Alipay |
//! |---|---|
//! | order number | `out_trade_no` (so an order has one Alipay trade) |
//! | payment id (the attempt) | `passback_params`, echoed back in notifications (query answers do not carry it: the query takes the attempt's from [`PaymentRef`]) |
//! | platform payment id | `trade_no` (precreate answers none; a query answer without one has `None`, never "") |
//! | refund number | `out_request_no` (in notifications `out_biz_no`); Alipay has no id of its own for a refund, so the refund number stands for it |
//! | amounts in fen | yuan strings, converted exactly by `platform_protocols::money` |
//!
//! Answers, by `code`: `10000` success; `40004` a business refusal (`sub_code`
//! `ACQ.*`), final except `ACQ.SYSTEM_ERROR`; `40002` our request is wrong
//! (refused); `20000` (`isp.*`) and anything else: the outcome is unknown.
//!
//! `trade_status` as our payment status: `TRADE_SUCCESS` and `TRADE_FINISHED`
//! (paid, the refund period over) are Succeeded, `WAIT_BUYER_PAY` Processing.
//! `TRADE_CLOSED` means "closed unpaid" *or* "paid, then fully refunded": an
//! answer that shows the trade was paid (`send_pay_date`, or a buyer or
//! received amount above zero) is Succeeded, since the refunds are booked as
//! refunds of their own and the charge must stand; otherwise Closed.
//!
//! Notifications arrive at `/api/payments/callback/alipay` (`routes::alipay_notify`).

use super::connector::{
    CloseAnswer, HandOverError, HandedOver, NoAnswer, PaymentRef, RefundHandOverError, RefundRef,
};
use crate::config::AlipaySettings;
use crate::db::attempts::AttemptRow;
use api_types::platform::{PaymentState, PaymentStatus, RefundState, RefundStatus};
use api_types::{Currency, PlatformPaymentId};
use platform_protocols::alipay::{
    self as ali, CloseResponse, CommonResponse, Method, PrecreateBiz, PrecreateResponse,
    QueryResponse, RefundBiz, RefundQueryBiz, RefundQueryResponse, RefundQueryStatus,
    RefundResponse, TradeRef, TradeStatus,
};
use platform_protocols::money::Yuan;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The path Alipay posts notifications to, on `NOTIFY_BASE_URL`.
pub const NOTIFY_PATH: &str = "/api/payments/callback/alipay";

/// An Alipay application, speaking to the gateway over HTTPS.
#[derive(Clone)]
pub(super) struct Alipay {
    http: reqwest::Client,
    settings: Arc<AlipaySettings>,
}

/// Why a call left no answer to act on.
#[derive(Debug)]
enum CallError {
    /// No verified answer (transport, status, signature, unreadable node).
    NoAnswer(anyhow::Error),
    /// A verified answer that is not a success: its common fields.
    Refused(CommonResponse),
}

impl CallError {
    fn into_anyhow(self, method: Method) -> anyhow::Error {
        match self {
            Self::NoAnswer(err) => err,
            Self::Refused(common) => {
                anyhow::anyhow!("Alipay answered {method} with {}", describe(&common))
            }
        }
    }
}

/// `code msg (sub_code: sub_msg)`, for logs and refusal reasons.
fn describe(common: &CommonResponse) -> String {
    format!(
        "{} {} ({}: {})",
        common.code,
        common.msg,
        common.sub_code.as_deref().unwrap_or("-"),
        common.sub_msg.as_deref().unwrap_or("-")
    )
}

/// Whether a refusal is Alipay's final word on the request: a business
/// refusal (`40004`, but not `ACQ.SYSTEM_ERROR`, which asks to try again) or
/// an invalid request (`40002`). `20000` and `isp.*` leave the outcome open.
fn is_final_refusal(common: &CommonResponse) -> bool {
    let sub_code = common.sub_code.as_deref().unwrap_or_default();
    let transient = sub_code.starts_with("isp.") || sub_code.ends_with("SYSTEM_ERROR");
    matches!(common.code.as_str(), "40004" | "40002") && !transient
}

fn sub_code(common: &CommonResponse) -> &str {
    common.sub_code.as_deref().unwrap_or_default()
}

/// The fen of a yuan amount, `None` when absent.
fn fen(amount: Option<Yuan>) -> Option<i64> {
    amount.map(Yuan::fen)
}

impl Alipay {
    pub(super) fn new(settings: Arc<AlipaySettings>) -> anyhow::Result<Self> {
        let http = super::connector::http_client()?;
        Ok(Self { http, settings })
    }

    /// The settings notifications are checked with.
    pub(super) fn settings(&self) -> &Arc<AlipaySettings> {
        &self.settings
    }

    /// Sends one signed call, verifies the answer's signature and parses its
    /// node; a node whose `code` is not `10000` is [`CallError::Refused`].
    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        biz: &B,
        notify_url: Option<&str>,
    ) -> Result<T, CallError> {
        let no_answer = |err: anyhow::Error| CallError::NoAnswer(err);
        let params = ali::sign_request(
            &self.settings.app_id,
            &self.settings.app_private_key,
            method,
            biz,
            notify_url,
            time::OffsetDateTime::now_utc(),
        )
        .map_err(|err| no_answer(err.into()))?;
        let form = ali::to_form(&params).map_err(|err| no_answer(err.into()))?;
        let response = self
            .http
            .post(&self.settings.gateway_url)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded;charset=utf-8",
            )
            .body(form)
            .send()
            .await
            .map_err(|err| no_answer(err.into()))?;
        let status = response.status();
        let body = response.text().await.map_err(|err| no_answer(err.into()))?;
        if !status.is_success() {
            return Err(no_answer(anyhow::anyhow!(
                "Alipay answered {method} with HTTP {status}"
            )));
        }
        let node = ali::verify_response(&body, method, &self.settings.alipay_public_key)
            .map_err(|err| {
                no_answer(anyhow::anyhow!(
                    "Alipay's answer to {method} failed its signature check, so it is ignored: {err}"
                ))
            })?;
        let common: CommonResponse = node.parse().map_err(|err| {
            no_answer(anyhow::anyhow!(
                "Alipay answered {method} with an unreadable node: {err}"
            ))
        })?;
        if node.is_error_response() || !common.is_success() {
            return Err(CallError::Refused(common));
        }
        node.parse().map_err(|err| {
            no_answer(anyhow::anyhow!(
                "Alipay answered {method} with an unreadable node: {err}"
            ))
        })
    }

    /// An answer about another order is not about ours.
    fn check_order(order_no: &str, answered: Option<&str>) -> anyhow::Result<()> {
        match answered {
            Some(other) if other != order_no => {
                anyhow::bail!("Alipay answered about out_trade_no {other}, not order {order_no}")
            }
            _ => Ok(()),
        }
    }

    /// `alipay.trade.precreate`: the `qr_code` the shopper scans. Our payment
    /// id travels in `passback_params` and comes back in the notifications.
    pub(super) async fn hand_over(
        &self,
        attempt: &AttemptRow,
        notify_url: &str,
    ) -> Result<HandedOver, HandOverError> {
        if attempt.currency != Currency::CNY {
            return Err(HandOverError::Refused(format!(
                "Alipay takes CNY only; order {} is in {}",
                attempt.order_no, attempt.currency
            )));
        }
        let total_amount = Yuan::from_fen(attempt.amount_cents)
            .map_err(|err| HandOverError::Refused(format!("amount: {err}")))?;
        let biz = PrecreateBiz {
            out_trade_no: attempt.order_no.clone(),
            total_amount,
            subject: format!("Order {}", attempt.order_no),
            timeout_express: None,
            // A UUID: nothing in it needs URL-encoding.
            passback_params: Some(attempt.payment_id.to_string()),
        };
        match self
            .call::<_, PrecreateResponse>(Method::TradePrecreate, &biz, Some(notify_url))
            .await
        {
            Ok(answer) => {
                Self::check_order(&attempt.order_no, answer.out_trade_no.as_deref())
                    .map_err(HandOverError::Unknown)?;
                let qr_code = answer
                    .qr_code
                    .filter(|code| !code.is_empty())
                    .ok_or_else(|| {
                        HandOverError::Unknown(anyhow::anyhow!(
                            "Alipay accepted the precreate without a qr_code"
                        ))
                    })?;
                Ok(HandedOver {
                    platform_payment_id: None,
                    qr_code: Some(qr_code),
                })
            }
            // Paid already (a hand-over sent again after its answer was lost):
            // Alipay has it; the notification or the query books it.
            Err(CallError::Refused(common)) if sub_code(&common) == "ACQ.TRADE_HAS_SUCCESS" => {
                Ok(HandedOver::default())
            }
            Err(CallError::Refused(common)) if is_final_refusal(&common) => {
                Err(HandOverError::Refused(describe(&common)))
            }
            Err(err) => Err(HandOverError::Unknown(
                err.into_anyhow(Method::TradePrecreate),
            )),
        }
    }

    /// `alipay.trade.query` by `out_trade_no`; `None` when Alipay has no such trade.
    async fn trade(&self, order_no: &str) -> Result<Option<QueryResponse>, NoAnswer> {
        match self
            .call::<_, QueryResponse>(
                Method::TradeQuery,
                &TradeRef::by_out_trade_no(order_no),
                None,
            )
            .await
        {
            Ok(answer) => {
                Self::check_order(order_no, answer.out_trade_no.as_deref()).map_err(NoAnswer)?;
                Ok(Some(answer))
            }
            Err(CallError::Refused(common)) if sub_code(&common) == "ACQ.TRADE_NOT_EXIST" => {
                Ok(None)
            }
            Err(err) => Err(NoAnswer(err.into_anyhow(Method::TradeQuery))),
        }
    }

    /// `alipay.trade.query`.
    pub(super) async fn query(
        &self,
        payment: PaymentRef<'_>,
    ) -> Result<Option<PaymentState>, NoAnswer> {
        match self.trade(payment.order_no).await? {
            Some(answer) => payment_state(&answer, payment).map(Some),
            None => Ok(None),
        }
    }

    /// `alipay.trade.close`. Alipay answers `ACQ.TRADE_STATUS_ERROR` for a
    /// trade it cannot close; a query says whether that is because it was paid.
    pub(super) async fn close(&self, payment: PaymentRef<'_>) -> Result<CloseAnswer, NoAnswer> {
        let asked = self
            .call::<_, CloseResponse>(
                Method::TradeClose,
                &TradeRef::by_out_trade_no(payment.order_no),
                None,
            )
            .await;
        match asked {
            Ok(answer) => {
                Self::check_order(payment.order_no, answer.out_trade_no.as_deref())
                    .map_err(NoAnswer)?;
            }
            Err(CallError::Refused(common)) if sub_code(&common) == "ACQ.TRADE_NOT_EXIST" => {
                return Ok(CloseAnswer::NotFound);
            }
            Err(CallError::Refused(common)) if sub_code(&common) == "ACQ.TRADE_STATUS_ERROR" => {
                // Not closable: paid (book it), or closed already.
                return match self.query(payment).await? {
                    Some(state) if state.status == PaymentStatus::Succeeded => {
                        Ok(CloseAnswer::AlreadyPaid)
                    }
                    Some(state) if state.status.is_final() => Ok(CloseAnswer::Closed(state)),
                    Some(_) => Err(NoAnswer(anyhow::anyhow!(
                        "Alipay refused to close a trade it says is still waiting: {}",
                        describe(&common)
                    ))),
                    None => Ok(CloseAnswer::NotFound),
                };
            }
            Err(err) => return Err(NoAnswer(err.into_anyhow(Method::TradeClose))),
        }
        // The close answer carries no status: the trade as Alipay now has it.
        match self.query(payment).await? {
            Some(state) => Ok(CloseAnswer::Closed(state)),
            None => Ok(CloseAnswer::NotFound),
        }
    }

    /// `alipay.trade.refund` with our refund number as `out_request_no`.
    /// Alipay refunds synchronously: a success is the refund made (`fund_change`
    /// `Y`), or the same refund asked again (`N`, same amounts).
    pub(super) async fn refund(
        &self,
        refund: &crate::db::refunds::RefundRow,
    ) -> Result<RefundState, RefundHandOverError> {
        let refund_amount = Yuan::from_fen(refund.amount_cents)
            .map_err(|err| RefundHandOverError::Refused(format!("amount: {err}")))?;
        let biz = RefundBiz {
            out_trade_no: refund.order_no.clone(),
            refund_amount,
            out_request_no: Some(refund.refund_no.clone()),
            refund_reason: Some(refund.reason.chars().take(80).collect()),
        };
        match self
            .call::<_, RefundResponse>(Method::TradeRefund, &biz, None)
            .await
        {
            Ok(answer) => {
                Self::check_order(&refund.order_no, answer.out_trade_no.as_deref())
                    .map_err(RefundHandOverError::Unknown)?;
                Ok(RefundState {
                    refund_id: refund.refund_no.clone(),
                    payment_id: answer
                        .trade_no
                        .filter(|trade_no| !trade_no.is_empty())
                        .unwrap_or_else(|| refund.platform_payment_id.clone()),
                    refund_no: refund.refund_no.clone(),
                    amount_cents: refund.amount_cents,
                    currency: Currency::CNY,
                    status: RefundStatus::Succeeded,
                })
            }
            Err(CallError::Refused(common)) if is_final_refusal(&common) => {
                Err(RefundHandOverError::Refused(describe(&common)))
            }
            Err(err) => Err(RefundHandOverError::Unknown(
                err.into_anyhow(Method::TradeRefund),
            )),
        }
    }

    /// `alipay.trade.fastpay.refund.query`: `REFUND_SUCCESS`, or no
    /// `refund_status` (Alipay's way of saying it has no such refund).
    pub(super) async fn query_refund(
        &self,
        refund: RefundRef<'_>,
    ) -> Result<Option<RefundState>, NoAnswer> {
        let biz = RefundQueryBiz {
            out_trade_no: refund.order_no.to_owned(),
            out_request_no: refund.refund_no.to_owned(),
        };
        let answer = match self
            .call::<_, RefundQueryResponse>(Method::TradeFastpayRefundQuery, &biz, None)
            .await
        {
            Ok(answer) => answer,
            Err(CallError::Refused(common)) if sub_code(&common) == "ACQ.TRADE_NOT_EXIST" => {
                return Ok(None);
            }
            Err(err) => return Err(NoAnswer(err.into_anyhow(Method::TradeFastpayRefundQuery))),
        };
        Self::check_order(refund.order_no, answer.out_trade_no.as_deref()).map_err(NoAnswer)?;
        if let Some(other) = answer
            .out_request_no
            .as_deref()
            .filter(|number| *number != refund.refund_no)
        {
            return Err(NoAnswer(anyhow::anyhow!(
                "Alipay answered about refund {other}, not {}",
                refund.refund_no
            )));
        }
        match answer.refund_status {
            Some(RefundQueryStatus::RefundSuccess) => {
                let amount_cents = fen(answer.refund_amount).ok_or_else(|| {
                    NoAnswer(anyhow::anyhow!(
                        "Alipay answered REFUND_SUCCESS without refund_amount"
                    ))
                })?;
                Ok(Some(RefundState {
                    refund_id: refund.refund_no.to_owned(),
                    // The refunded trade: Alipay's words for it, or ours when it leaves them out.
                    payment_id: answer
                        .trade_no
                        .filter(|trade_no| !trade_no.is_empty())
                        .unwrap_or_else(|| refund.payment_id.to_string()),
                    refund_no: refund.refund_no.to_owned(),
                    amount_cents,
                    currency: Currency::CNY,
                    status: RefundStatus::Succeeded,
                }))
            }
            None => Ok(None),
        }
    }
}

/// A query answer as the checkout's payment state (see the module docs for
/// `TRADE_CLOSED`). The merchant reference is the attempt's payment id: the
/// query answer does not echo `passback_params`, and Alipay keys the trade by
/// our order number, which has one attempt.
pub(crate) fn payment_state(
    answer: &QueryResponse,
    payment: PaymentRef<'_>,
) -> Result<PaymentState, NoAnswer> {
    let trade_status = answer.trade_status.ok_or_else(|| {
        NoAnswer(anyhow::anyhow!(
            "Alipay answered the query without trade_status"
        ))
    })?;
    let amount_cents = fen(answer.total_amount).ok_or_else(|| {
        NoAnswer(anyhow::anyhow!(
            "Alipay answered the query without total_amount"
        ))
    })?;
    let was_paid = answer
        .send_pay_date
        .as_deref()
        .is_some_and(|at| !at.is_empty())
        || fen(answer.buyer_pay_amount).is_some_and(|paid| paid > 0)
        || fen(answer.receipt_amount).is_some_and(|received| received > 0);
    let status = match trade_status {
        TradeStatus::TradeSuccess | TradeStatus::TradeFinished => PaymentStatus::Succeeded,
        TradeStatus::WaitBuyerPay => PaymentStatus::Processing,
        // Paid, then fully refunded: the charge stands; its refunds are booked as refunds.
        TradeStatus::TradeClosed if was_paid => PaymentStatus::Succeeded,
        TradeStatus::TradeClosed => PaymentStatus::Closed,
    };
    Ok(PaymentState {
        // Absent (or empty) until Alipay has a trade to name: `None`, never "".
        payment_id: PlatformPaymentId::from_optional(answer.trade_no.as_deref()),
        order_no: payment.order_no.to_owned(),
        merchant_reference: Some(payment.payment_id.to_string()),
        amount_cents,
        currency: Currency::CNY,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn answer(status: TradeStatus, paid: bool) -> QueryResponse {
        QueryResponse {
            common: CommonResponse::success(),
            trade_no: Some("2026120322001400000000000001".into()),
            out_trade_no: Some("T1".into()),
            buyer_logon_id: None,
            trade_status: Some(status),
            total_amount: Yuan::from_fen(1250).ok(),
            receipt_amount: paid.then(|| Yuan::from_fen(1250).ok()).flatten(),
            buyer_pay_amount: None,
            send_pay_date: paid.then(|| "2026-12-03 10:00:00".to_owned()),
            buyer_user_id: None,
        }
    }

    #[test]
    fn trade_statuses_map_and_a_refunded_close_stays_paid() {
        let payment_id = Uuid::new_v4();
        let payment = PaymentRef {
            order_no: "T1",
            payment_id,
        };
        let state = |status, paid| {
            payment_state(&answer(status, paid), payment)
                .expect("readable")
                .status
        };
        assert_eq!(
            state(TradeStatus::TradeSuccess, true),
            PaymentStatus::Succeeded
        );
        assert_eq!(
            state(TradeStatus::TradeFinished, true),
            PaymentStatus::Succeeded
        );
        assert_eq!(
            state(TradeStatus::WaitBuyerPay, false),
            PaymentStatus::Processing
        );
        assert_eq!(
            state(TradeStatus::TradeClosed, false),
            PaymentStatus::Closed
        );
        assert_eq!(
            state(TradeStatus::TradeClosed, true),
            PaymentStatus::Succeeded
        );
        let full = payment_state(&answer(TradeStatus::TradeSuccess, true), payment).expect("ok");
        assert_eq!(full.amount_cents, 1250);
        assert_eq!(full.merchant_reference, Some(payment_id.to_string()));
        assert_eq!(
            full.payment_id,
            PlatformPaymentId::new("2026120322001400000000000001").ok()
        );
    }

    #[test]
    fn a_waiting_trade_without_trade_no_has_no_platform_payment_id() {
        let payment = PaymentRef {
            order_no: "T1",
            payment_id: Uuid::new_v4(),
        };
        for trade_no in [None, Some(String::new())] {
            let mut waiting = answer(TradeStatus::WaitBuyerPay, false);
            waiting.trade_no = trade_no.clone();
            let state = payment_state(&waiting, payment).expect("readable");
            assert_eq!(state.status, PaymentStatus::Processing);
            assert_eq!(state.payment_id, None, "{trade_no:?}");
        }
    }

    #[test]
    fn only_business_and_argument_refusals_are_final() {
        let refusal = |code: &str, sub_code: &str| CommonResponse {
            code: code.into(),
            msg: "x".into(),
            sub_code: Some(sub_code.into()),
            sub_msg: None,
        };
        assert!(is_final_refusal(&refusal(
            "40004",
            "ACQ.TRADE_HAS_FINISHED"
        )));
        assert!(is_final_refusal(&refusal(
            "40004",
            "ACQ.REASON_TRADE_REFUND_FEE_ERR"
        )));
        assert!(is_final_refusal(&refusal("40002", "isv.invalid-signature")));
        assert!(!is_final_refusal(&refusal("40004", "ACQ.SYSTEM_ERROR")));
        assert!(!is_final_refusal(&refusal("20000", "isp.unknow-error")));
        assert!(!is_final_refusal(&refusal("40004", "isp.unknow-error")));
    }
}
