//! WeChat Pay API v3 (`PLATFORM=wechatpay`): Native payments (the shopper scans
//! a QR code), their query and close, and refunds.
//!
//! Every request is signed with the merchant key (`Authorization:
//! WECHATPAY2-SHA256-RSA2048 ...`), and every answer's `Wechatpay-Signature` is
//! verified with the platform public key over the raw body before a byte of it
//! is believed: an unsigned or wrongly signed answer is no answer. How our
//! numbers map onto WeChat Pay's:
//!
//! | ours | WeChat Pay |
//! |---|---|
//! | order number | `out_trade_no` (so an order has one WeChat Pay transaction) |
//! | payment id (the attempt) | `attach`, echoed back in query answers and notifications |
//! | platform payment id | `transaction_id` (known once paid: prepay answers none, and a query of an unpaid order has none, so it is `None` until then) |
//! | refund number | `out_refund_no` |
//!
//! Notifications arrive at `/api/payments/callback/wechatpay` (`routes::callbacks`).

use super::connector::{
    CloseAnswer, HandOverError, HandedOver, NoAnswer, PaymentRef, RefundHandOverError, RefundRef,
};
use crate::config::WechatPaySettings;
use crate::db::attempts::AttemptRow;
use api_types::platform::{PaymentState, PaymentStatus, RefundState, RefundStatus};
use api_types::{Currency, PlatformPaymentId};
use platform_protocols::wechatpay::{
    self as wx, CloseRequest, ErrorBody, NativePrepayRequest, NativePrepayResponse, OutTradeNo,
    PrepayAmount, RefundRequest, RefundRequestAmount, TradeState, Transaction, paths,
};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The path WeChat Pay posts notifications to, on `NOTIFY_BASE_URL`.
pub const NOTIFY_PATH: &str = "/api/payments/callback/wechatpay";

/// A WeChat Pay merchant, spoken to over HTTPS.
#[derive(Clone)]
pub(super) struct WechatPay {
    http: reqwest::Client,
    settings: Arc<WechatPaySettings>,
}

/// An answer whose signature verified.
struct Verified {
    status: StatusCode,
    body: Vec<u8>,
}

impl Verified {
    fn json<T: DeserializeOwned>(&self) -> Result<T, anyhow::Error> {
        serde_json::from_slice(&self.body).map_err(|err| {
            anyhow::anyhow!(
                "WeChat Pay answered {} with an unreadable body: {err}",
                self.status
            )
        })
    }

    /// WeChat Pay's error code, when the body is its `{"code","message"}`.
    fn error(&self) -> Option<ErrorBody> {
        serde_json::from_slice(&self.body).ok()
    }

    fn describe(&self) -> String {
        format!("{}: {}", self.status, String::from_utf8_lossy(&self.body))
    }

    /// A lookup's answer: `None` for 404 (WeChat Pay has no such thing), no
    /// answer for any other failure; `what` names the call in the error.
    fn found(self, what: &str) -> Result<Option<Self>, NoAnswer> {
        if self.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !self.status.is_success() {
            return Err(NoAnswer(anyhow::anyhow!(
                "WeChat Pay answered the {what} with {}",
                self.describe()
            )));
        }
        Ok(Some(self))
    }
}

impl WechatPay {
    pub(super) fn new(settings: Arc<WechatPaySettings>) -> anyhow::Result<Self> {
        let http = super::connector::http_client()?;
        Ok(Self { http, settings })
    }

    /// The settings notifications are checked with.
    pub(super) fn settings(&self) -> &Arc<WechatPaySettings> {
        &self.settings
    }

    /// Sends one signed request and verifies the answer's signature.
    async fn call(
        &self,
        method: Method,
        path_with_query: &str,
        body: Option<Vec<u8>>,
    ) -> anyhow::Result<Verified> {
        let body = body.unwrap_or_default();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let authorization = self.settings.merchant.sign_request(
            &method,
            path_with_query,
            &body,
            now,
            &wx::generate_nonce(),
        );
        let mut request = self
            .http
            .request(
                method,
                format!("{}{path_with_query}", self.settings.api_url),
            )
            // `Accept` and `User-Agent` come with the client (`super::http_client`).
            .header(reqwest::header::AUTHORIZATION, authorization.header_value());
        if !body.is_empty() {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        let response = request.send().await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await?.to_vec();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        wx::verify_platform_message(&headers, &body, &self.settings.platform, now).map_err(
            |err| {
                anyhow::anyhow!(
                    "WeChat Pay's answer ({status}) failed its signature check, so it is ignored: {err}"
                )
            },
        )?;
        Ok(Verified { status, body })
    }

    fn out_trade_no(order_no: &str) -> anyhow::Result<OutTradeNo> {
        OutTradeNo::parse(order_no)
            .map_err(|err| anyhow::anyhow!("order number {order_no} is no out_trade_no: {err}"))
    }

    /// `POST /v3/pay/transactions/native`: the `code_url` the shopper scans.
    pub(super) async fn hand_over(
        &self,
        attempt: &AttemptRow,
        notify_url: &str,
    ) -> Result<HandedOver, HandOverError> {
        if attempt.currency != Currency::CNY {
            return Err(HandOverError::Refused(format!(
                "WeChat Pay takes CNY only; order {} is in {}",
                attempt.order_no, attempt.currency
            )));
        }
        let out_trade_no = Self::out_trade_no(&attempt.order_no)
            .map_err(|err| HandOverError::Refused(err.to_string()))?;
        let request = NativePrepayRequest {
            appid: self.settings.appid.clone(),
            mchid: self.settings.merchant.mchid.clone(),
            description: format!("Order {}", attempt.order_no),
            out_trade_no,
            time_expire: None,
            attach: Some(attempt.payment_id.to_string()),
            notify_url: notify_url.to_owned(),
            amount: PrepayAmount {
                total: attempt.amount_cents,
                currency: Currency::CNY,
            },
        };
        let body =
            serde_json::to_vec(&request).map_err(|err| HandOverError::Unknown(err.into()))?;
        let answer = self
            .call(Method::POST, paths::NATIVE_PREPAY, Some(body))
            .await
            .map_err(HandOverError::Unknown)?;
        if answer.status.is_success() {
            let prepay: NativePrepayResponse = answer.json().map_err(HandOverError::Unknown)?;
            return Ok(HandedOver {
                platform_payment_id: None,
                qr_code: Some(prepay.code_url),
            });
        }
        match answer.error().map(|error| error.code) {
            // Paid already (a hand-over sent again after its answer was lost):
            // the platform has it; the notification or the query books it.
            Some(code) if code == "ORDERPAID" => Ok(HandedOver::default()),
            _ if answer.status.is_client_error()
                && answer.status != StatusCode::TOO_MANY_REQUESTS =>
            {
                Err(HandOverError::Refused(answer.describe()))
            }
            _ => Err(HandOverError::Unknown(anyhow::anyhow!(
                "WeChat Pay answered the prepay with {}",
                answer.describe()
            ))),
        }
    }

    /// The transaction by `out_trade_no`; `None` when WeChat Pay has none.
    async fn transaction(&self, order_no: &str) -> Result<Option<Transaction>, NoAnswer> {
        let out_trade_no = Self::out_trade_no(order_no).map_err(NoAnswer)?;
        let path = paths::query_by_out_trade_no(&out_trade_no, &self.settings.merchant.mchid);
        let answer = self
            .call(Method::GET, &path, None)
            .await
            .map_err(NoAnswer)?;
        let Some(answer) = answer.found("query")? else {
            return Ok(None);
        };
        let transaction: Transaction = answer.json().map_err(NoAnswer)?;
        self.check_merchant(&transaction.mchid, &transaction.appid)
            .map_err(NoAnswer)?;
        Ok(Some(transaction))
    }

    /// An answer about another merchant's transaction is not about ours.
    fn check_merchant(&self, mchid: &str, appid: &str) -> anyhow::Result<()> {
        if mchid != self.settings.merchant.mchid || appid != self.settings.appid {
            anyhow::bail!(
                "WeChat Pay answered about merchant {mchid} / app {appid}, not ours ({} / {})",
                self.settings.merchant.mchid,
                self.settings.appid
            );
        }
        Ok(())
    }

    /// `GET /v3/pay/transactions/out-trade-no/{out_trade_no}`.
    pub(super) async fn query(
        &self,
        payment: PaymentRef<'_>,
    ) -> Result<Option<PaymentState>, NoAnswer> {
        Ok(self
            .transaction(payment.order_no)
            .await?
            .map(|transaction| payment_state(&transaction)))
    }

    /// `POST .../close`; WeChat Pay answers 204, or `ORDERPAID` when it was paid first.
    pub(super) async fn close(&self, payment: PaymentRef<'_>) -> Result<CloseAnswer, NoAnswer> {
        let out_trade_no = Self::out_trade_no(payment.order_no).map_err(NoAnswer)?;
        let body = serde_json::to_vec(&CloseRequest {
            mchid: self.settings.merchant.mchid.clone(),
        })
        .map_err(NoAnswer::from_error)?;
        let answer = self
            .call(Method::POST, &paths::close(&out_trade_no), Some(body))
            .await
            .map_err(NoAnswer)?;
        if answer.status.is_success() {
            // 204 carries nothing: the closed transaction as WeChat Pay now has it.
            return match self.transaction(payment.order_no).await? {
                Some(transaction) => Ok(CloseAnswer::Closed(payment_state(&transaction))),
                None => Ok(CloseAnswer::NotFound),
            };
        }
        match answer.error().map(|error| error.code).as_deref() {
            Some("ORDERPAID") => Ok(CloseAnswer::AlreadyPaid),
            Some("ORDER_NOT_EXIST" | "RESOURCE_NOT_EXISTS") => Ok(CloseAnswer::NotFound),
            _ => Err(NoAnswer(anyhow::anyhow!(
                "WeChat Pay answered the close with {}",
                answer.describe()
            ))),
        }
    }

    /// `POST /v3/refund/domestic/refunds` with our refund number as `out_refund_no`.
    /// WeChat Pay wants the transaction's total with it: taken from its own
    /// answer to a query, so it is always the amount it holds.
    pub(super) async fn refund(
        &self,
        refund: &crate::db::refunds::RefundRow,
        notify_url: &str,
    ) -> Result<RefundState, RefundHandOverError> {
        let unknown = RefundHandOverError::Unknown;
        let transaction = self
            .transaction(&refund.order_no)
            .await
            .map_err(|err| unknown(err.0))?
            .ok_or_else(|| {
                RefundHandOverError::Refused(format!(
                    "WeChat Pay has no transaction for order {}",
                    refund.order_no
                ))
            })?;
        let request = RefundRequest {
            transaction_id: Some(refund.platform_payment_id.clone()),
            out_trade_no: None,
            out_refund_no: refund.refund_no.clone(),
            reason: Some(refund.reason.chars().take(80).collect()),
            notify_url: Some(notify_url.to_owned()),
            amount: RefundRequestAmount {
                refund: refund.amount_cents,
                total: transaction.amount.total,
                currency: Currency::CNY,
            },
        };
        let body = serde_json::to_vec(&request).map_err(|err| unknown(err.into()))?;
        let answer = self
            .call(Method::POST, paths::REFUNDS, Some(body))
            .await
            .map_err(unknown)?;
        if answer.status.is_success() {
            let accepted: wx::Refund = answer.json().map_err(unknown)?;
            return Ok(refund_state(&accepted));
        }
        let transient = matches!(answer.status.as_u16(), 408 | 425 | 429);
        let busy = answer.error().is_some_and(|error| {
            matches!(error.code.as_str(), "SYSTEM_ERROR" | "FREQUENCY_LIMITED")
        });
        Err(if answer.status.is_client_error() && !transient && !busy {
            RefundHandOverError::Refused(answer.describe())
        } else {
            unknown(anyhow::anyhow!(
                "WeChat Pay answered the refund with {}",
                answer.describe()
            ))
        })
    }

    /// `GET /v3/refund/domestic/refunds/{out_refund_no}`.
    pub(super) async fn query_refund(
        &self,
        refund: RefundRef<'_>,
    ) -> Result<Option<RefundState>, NoAnswer> {
        let answer = self
            .call(Method::GET, &paths::query_refund(refund.refund_no), None)
            .await
            .map_err(NoAnswer)?;
        let Some(answer) = answer.found("refund query")? else {
            return Ok(None);
        };
        let found: wx::Refund = answer.json().map_err(NoAnswer)?;
        Ok(Some(refund_state(&found)))
    }
}

/// A transaction as the checkout's query answer. WeChat Pay names its
/// `transaction_id` only once the order is paid: before that the answer has
/// no platform payment id (`None`, never an empty one).
pub(crate) fn payment_state(transaction: &Transaction) -> PaymentState {
    PaymentState {
        payment_id: PlatformPaymentId::from_optional(transaction.transaction_id.as_deref()),
        order_no: transaction.out_trade_no.to_string(),
        merchant_reference: transaction.attach.clone(),
        amount_cents: transaction.amount.total,
        currency: transaction.amount.currency,
        status: match transaction.trade_state {
            // A refunded transaction was paid first.
            TradeState::Success | TradeState::Refund => PaymentStatus::Succeeded,
            TradeState::NotPay | TradeState::UserPaying => PaymentStatus::Processing,
            TradeState::Closed | TradeState::Revoked => PaymentStatus::Closed,
            TradeState::PayError => PaymentStatus::Failed,
        },
    }
}

/// A refund as the checkout's query answer.
fn refund_state(refund: &wx::Refund) -> RefundState {
    RefundState {
        refund_id: refund.refund_id.clone(),
        payment_id: refund.transaction_id.clone(),
        refund_no: refund.out_refund_no.clone(),
        amount_cents: refund.amount.refund,
        currency: refund.amount.currency,
        status: refund_status(refund.status),
    }
}

/// WeChat Pay's refund states as ours: `ABNORMAL` (the money could not reach
/// the shopper) and `CLOSED` are failures; only `SUCCESS` gave money back.
pub(crate) fn refund_status(status: wx::RefundStatus) -> RefundStatus {
    match status {
        wx::RefundStatus::Success => RefundStatus::Succeeded,
        wx::RefundStatus::Processing => RefundStatus::Processing,
        wx::RefundStatus::Abnormal | wx::RefundStatus::Closed => RefundStatus::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform_protocols::wechatpay::{TradeType, TransactionAmount};

    /// A query answer as WeChat Pay writes it for the order in `trade_state`.
    fn answer(trade_state: TradeState, transaction_id: Option<&str>) -> Transaction {
        Transaction {
            appid: "wxd678efh567hg6787".into(),
            mchid: "1900009191".into(),
            out_trade_no: OutTradeNo::parse("ord_0123456789abcdef0123456789ab").expect("fits"),
            transaction_id: transaction_id.map(str::to_owned),
            trade_type: transaction_id.map(|_| TradeType::Native),
            trade_state,
            trade_state_desc: "订单未支付".into(),
            bank_type: None,
            attach: Some("2f7c4f1e-5d7b-4c55-9a39-2d5c1b0e8f11".into()),
            success_time: None,
            payer: None,
            amount: TransactionAmount {
                total: 1_250,
                payer_total: None,
                currency: Currency::CNY,
                payer_currency: None,
            },
        }
    }

    #[test]
    fn an_unpaid_order_has_no_platform_payment_id() {
        for state in [TradeState::NotPay, TradeState::UserPaying] {
            let unpaid = payment_state(&answer(state, None));
            assert_eq!(unpaid.payment_id, None, "{state:?}");
            assert_eq!(unpaid.status, PaymentStatus::Processing, "{state:?}");
        }
        // An empty transaction_id names no payment either.
        assert_eq!(
            payment_state(&answer(TradeState::NotPay, Some(""))).payment_id,
            None
        );
    }

    #[test]
    fn a_paid_order_names_its_transaction_id() {
        let paid = payment_state(&answer(
            TradeState::Success,
            Some("4200000991202612036853086457"),
        ));
        assert_eq!(paid.status, PaymentStatus::Succeeded);
        assert_eq!(
            paid.payment_id,
            PlatformPaymentId::new("4200000991202612036853086457").ok()
        );
    }
}
