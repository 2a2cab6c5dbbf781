//! The simulator inside this process (`PLATFORM=sandbox`, the `sandbox`
//! feature): the same rules as `platform-sim`, no network, no money. It dies
//! with the process (see [`super::Platform::forget_in_process_hand_overs`]).

use super::connector::{CloseAnswer, HandOverError, NoAnswer, PaymentRef, RefundHandOverError};
use api_types::PlatformPaymentId;
use api_types::platform::{CreatePayment, CreateRefund, PaymentState, RefundState};
use platform_sim::{SimError, Simulator};

/// The in-process simulator.
#[derive(Clone)]
pub(super) struct Sandbox(pub(super) Simulator);

impl Sandbox {
    /// Creates the payment (idempotently by `key`); the simulator's payment id.
    pub(super) async fn hand_over(
        &self,
        key: &str,
        request: CreatePayment,
    ) -> Result<Option<PlatformPaymentId>, HandOverError> {
        let (payment, _) = self
            .0
            .create_payment(key, request)
            .await
            .map_err(|err| HandOverError::Unknown(err.into()))?;
        Ok(PlatformPaymentId::from_optional(Some(&payment.payment_id)))
    }

    /// The payment named by our payment id.
    pub(super) async fn query(
        &self,
        payment: PaymentRef<'_>,
    ) -> Result<Option<PaymentState>, NoAnswer> {
        match self
            .0
            .query_by_reference(&payment.payment_id.to_string())
            .await
        {
            Ok(found) => Ok(Some(state_of(&found))),
            Err(SimError::PaymentNotFound(_)) => Ok(None),
            Err(err) => Err(NoAnswer::from_error(err)),
        }
    }

    /// Closes the payment named by our payment id.
    pub(super) async fn close(&self, payment: PaymentRef<'_>) -> Result<CloseAnswer, NoAnswer> {
        match self
            .0
            .close_by_reference(&payment.payment_id.to_string())
            .await
        {
            Ok(closed) => Ok(CloseAnswer::Closed(state_of(&closed))),
            Err(SimError::AlreadySucceeded(_)) => Ok(CloseAnswer::AlreadyPaid),
            Err(SimError::PaymentNotFound(_)) => Ok(CloseAnswer::NotFound),
            Err(err) => Err(NoAnswer::from_error(err)),
        }
    }

    /// Creates the refund, idempotently by its refund number; a 4xx of the
    /// simulator's is its refusal.
    pub(super) async fn refund(
        &self,
        request: CreateRefund,
    ) -> Result<RefundState, RefundHandOverError> {
        let key = request.refund_no.clone();
        let (view, _) = self.0.create_refund(&key, request).await.map_err(|err| {
            let status = err.status();
            if status.is_client_error() {
                RefundHandOverError::Refused(format!("{status}: {} {err}", err.code()))
            } else {
                RefundHandOverError::Unknown(err.into())
            }
        })?;
        Ok(view.state)
    }

    /// The refund with our refund number.
    pub(super) async fn query_refund(
        &self,
        refund_no: &str,
    ) -> Result<Option<RefundState>, NoAnswer> {
        match self.0.refund_by_reference(refund_no).await {
            Ok(view) => Ok(Some(view.state)),
            Err(SimError::RefundNotFound(_)) => Ok(None),
            Err(err) => Err(NoAnswer::from_error(err)),
        }
    }
}

/// The simulator's fuller view, as any platform's query answer.
fn state_of(payment: &platform_sim::Payment) -> PaymentState {
    PaymentState {
        payment_id: PlatformPaymentId::from_optional(Some(&payment.payment_id)),
        order_no: payment.order_no.clone(),
        merchant_reference: payment.merchant_reference.clone(),
        amount_cents: payment.amount_cents,
        currency: payment.currency,
        status: payment.status,
    }
}
