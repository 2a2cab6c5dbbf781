//! The checkout's own platform protocol over HTTP (`PLATFORM=remote`):
//! `platform-sim` on its own, or any platform that speaks it. Payments and
//! refunds are created with an `Idempotency-Key`, found again by our merchant
//! reference, and their results arrive as Standard Webhooks callbacks
//! (`routes::callbacks`).

use super::connector::{
    BillError, CloseAnswer, HandOverError, NoAnswer, PaymentRef, RefundHandOverError,
};
use api_types::PlatformPaymentId;
use api_types::platform::{ALREADY_PAID, CreatePayment, CreateRefund, PaymentState, RefundState};

/// A platform at a base URL, spoken to with our protocol.
#[derive(Clone)]
pub(super) struct Standard {
    http: reqwest::Client,
    base_url: String,
}

impl Standard {
    /// A platform at `base_url` (e.g. `http://127.0.0.1:4000`).
    pub(super) fn new(base_url: &str) -> anyhow::Result<Self> {
        let http = super::connector::http_client()?;
        let base_url = base_url.trim_end_matches('/').to_owned();
        Ok(Self { http, base_url })
    }

    /// `POST /v1/payments`; the platform's payment id once it has it (an
    /// answer without one, or with an empty one, names none).
    pub(super) async fn hand_over(
        &self,
        key: &str,
        request: &CreatePayment,
    ) -> Result<Option<PlatformPaymentId>, HandOverError> {
        let response = self
            .http
            .post(format!("{}/v1/payments", self.base_url))
            .header("idempotency-key", key)
            .json(request)
            .send()
            .await
            .map_err(|err| HandOverError::Unknown(err.into()))?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        if status.is_client_error() {
            return Err(HandOverError::Refused(format!(
                "platform answered {status}: {body}"
            )));
        }
        if !status.is_success() {
            return Err(HandOverError::Unknown(anyhow::anyhow!(
                "platform answered {status}: {body}"
            )));
        }
        Ok(PlatformPaymentId::from_optional(
            body["payment_id"].as_str(),
        ))
    }

    /// `GET /v1/payments/by-reference/{payment id}`.
    pub(super) async fn query(
        &self,
        payment: PaymentRef<'_>,
    ) -> Result<Option<PaymentState>, NoAnswer> {
        let response = self
            .http
            .get(format!(
                "{}/v1/payments/by-reference/{}",
                self.base_url, payment.payment_id
            ))
            .send()
            .await
            .map_err(NoAnswer::from_error)?;
        match response.status() {
            reqwest::StatusCode::NOT_FOUND => Ok(None),
            status if status.is_success() => {
                Ok(Some(response.json().await.map_err(NoAnswer::from_error)?))
            }
            status => Err(NoAnswer(anyhow::anyhow!("query answered {status}"))),
        }
    }

    /// `POST /v1/payments/by-reference/{payment id}/close`.
    pub(super) async fn close(&self, payment: PaymentRef<'_>) -> Result<CloseAnswer, NoAnswer> {
        let response = self
            .http
            .post(format!(
                "{}/v1/payments/by-reference/{}/close",
                self.base_url, payment.payment_id
            ))
            .send()
            .await
            .map_err(NoAnswer::from_error)?;
        let status = response.status();
        if status.is_success() {
            let state = response.json().await.map_err(NoAnswer::from_error)?;
            return Ok(CloseAnswer::Closed(state));
        }
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(CloseAnswer::NotFound);
        }
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        // The error code, in our platform's `{"error":{"code"}}` or a flat `{"code"}`.
        let code = body["error"]["code"].as_str().or(body["code"].as_str());
        if status == reqwest::StatusCode::CONFLICT && code == Some(ALREADY_PAID) {
            return Ok(CloseAnswer::AlreadyPaid);
        }
        Err(NoAnswer(anyhow::anyhow!("close answered {status}: {body}")))
    }

    /// `POST /v1/refunds`, the refund number as the `Idempotency-Key`.
    pub(super) async fn refund(
        &self,
        request: &CreateRefund,
    ) -> Result<RefundState, RefundHandOverError> {
        let unknown = |err: reqwest::Error| RefundHandOverError::Unknown(err.into());
        let response = self
            .http
            .post(format!("{}/v1/refunds", self.base_url))
            .header("idempotency-key", &request.refund_no)
            .json(request)
            .send()
            .await
            .map_err(unknown)?;
        let status = response.status();
        if status.is_success() {
            return response.json().await.map_err(unknown);
        }
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        let answer = format!("{status}: {body}");
        // A 4xx is the platform's considered refusal, except "try later".
        let transient = matches!(status.as_u16(), 408 | 425 | 429);
        Err(if status.is_client_error() && !transient {
            RefundHandOverError::Refused(answer)
        } else {
            RefundHandOverError::Unknown(anyhow::anyhow!(
                "the platform answered the refund with {answer}"
            ))
        })
    }

    /// `GET /v1/refunds/by-reference/{refund_no}`.
    pub(super) async fn query_refund(
        &self,
        refund_no: &str,
    ) -> Result<Option<RefundState>, NoAnswer> {
        let response = self
            .http
            .get(format!(
                "{}/v1/refunds/by-reference/{refund_no}",
                self.base_url
            ))
            .send()
            .await
            .map_err(NoAnswer::from_error)?;
        match response.status() {
            reqwest::StatusCode::NOT_FOUND => Ok(None),
            status if status.is_success() => {
                Ok(Some(response.json().await.map_err(NoAnswer::from_error)?))
            }
            status => Err(NoAnswer(anyhow::anyhow!("refund query answered {status}"))),
        }
    }

    /// `GET /v1/bills/{date}`: the day's bill as CSV text.
    pub(super) async fn daily_bill(&self, date: time::Date) -> Result<String, BillError> {
        let no_answer = |err: reqwest::Error| BillError::NoAnswer(err.into());
        let response = self
            .http
            .get(format!("{}/v1/bills/{date}", self.base_url))
            .send()
            .await
            .map_err(no_answer)?;
        let status = response.status();
        let text = response.text().await.map_err(no_answer)?;
        if status.is_success() {
            return Ok(text);
        }
        let answer = format!("{status}: {}", text.chars().take(500).collect::<String>());
        Err(if status.is_client_error() {
            BillError::Refused(answer)
        } else {
            BillError::NoAnswer(anyhow::anyhow!("the bill was answered with {answer}"))
        })
    }
}
