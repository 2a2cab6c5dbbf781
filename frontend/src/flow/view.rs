//! What the payment page shows for a state of the flow.
//!
//! The page draws what a [`PayView`] says, so which buttons, progress line,
//! notice and receipt a state shows is decided here, in plain Rust the tests
//! compare, rather than in the `view!` markup.

use super::rules::{PayFlow, Phase};
use super::texts::{self, Notice};
use crate::api::RefundSummary;
use crate::format::format_timestamp;
use api_types::api::{Account, Order};
use api_types::{
    AttemptStatus, OrderStatus, PaymentMethod, RefundRequester, RefundStatus, format_minor,
};

impl PayFlow {
    /// What the page shows for this state.
    pub fn view(&self) -> PayView {
        let status = self.order.as_ref().map(|order| order.status);
        let pay_button = match &self.phase {
            Phase::FetchingToken => Some(PayButton {
                enabled: false,
                label: texts::PAY_NOW,
                busy: false,
            }),
            Phase::Ready { .. } => Some(PayButton {
                enabled: true,
                label: texts::PAY_NOW,
                busy: false,
            }),
            Phase::Submitting { .. } | Phase::Verifying { .. } => Some(PayButton {
                enabled: false,
                label: texts::PAYING,
                busy: true,
            }),
            _ => None,
        };
        let retry_label = match self.phase {
            Phase::OrderUnavailable | Phase::TokenUnavailable | Phase::SubmitStalled { .. } => {
                Some(texts::TRY_AGAIN)
            }
            Phase::Slow => Some(texts::CHECK_AGAIN),
            _ => None,
        };
        let progress = match self.phase {
            Phase::LoadingOrder => Some(texts::LOADING_ORDER),
            Phase::FetchingToken => Some(texts::PREPARING_PAYMENT),
            Phase::Submitting { retry: 0, .. } => Some(texts::SENDING_PAYMENT),
            Phase::Submitting { .. } => Some(texts::SENDING_PAYMENT_AGAIN),
            Phase::Verifying { .. } => Some(texts::CHECKING_ORDER),
            Phase::Processing { .. }
                if self.order.as_ref().and_then(|order| order.payment_status)
                    == Some(AttemptStatus::Unknown) =>
            {
                Some(texts::CONFIRMING_WITH_PROVIDER)
            }
            Phase::Processing { .. } => Some(texts::WAITING_FOR_BANK),
            _ => None,
        };
        let outcome = match self.order.as_ref() {
            Some(order)
                if self.phase == Phase::Done
                    && matches!(order.status, OrderStatus::Paid | OrderStatus::Refunded) =>
            {
                let refunded = order.status == OrderStatus::Refunded;
                Some(Outcome::Paid {
                    heading: if refunded {
                        texts::RECEIPT_REFUNDED
                    } else {
                        texts::RECEIPT_PAID
                    },
                    summary: if refunded {
                        texts::RECEIPT_REFUNDED_SUMMARY
                    } else {
                        texts::RECEIPT_PAID_SUMMARY
                    },
                    paid_at: order.paid_at.map(format_timestamp),
                    payment_id: self.payment_id.map(|id| id.to_string()),
                })
            }
            Some(order) if self.phase == Phase::Done && order.status == OrderStatus::Closed => {
                Some(Outcome::Failed {
                    reason: texts::ORDER_EXPIRED.to_owned(),
                })
            }
            Some(order) if self.phase == Phase::Done && order.status == OrderStatus::Failed => {
                Some(Outcome::Failed {
                    reason: order
                        .failure_reason
                        .clone()
                        .unwrap_or_else(|| texts::DECLINED_WITHOUT_REASON.to_owned()),
                })
            }
            _ => None,
        };
        // A final order names its own method only (one closed unpaid names none).
        let method = match self.order.as_ref() {
            Some(order) if order.status.is_final() => order.payment_method,
            Some(order) => order.payment_method.or(self.method),
            None => None,
        };
        let name = |method| texts::method_name(method, &self.platform);
        let choices: Vec<_> = self.choices().iter().map(|&m| (m, name(m))).collect();
        let way_back = self.order.as_ref().and_then(|order| {
            let merchant = order.merchant_name.as_deref().unwrap_or(texts::THE_SHOP);
            if self.phase == Phase::Done {
                order.return_url.as_deref().map(|url| WayBack {
                    label: format!("{}{merchant}", texts::RETURN_TO),
                    href: with_result(url, &order.order_no, Some(order.status)),
                    automatic: true,
                })
            } else if order.status == OrderStatus::Pending
                && order.payment_status.is_none()
                && matches!(
                    self.phase,
                    Phase::FetchingToken | Phase::TokenUnavailable | Phase::Ready { .. }
                )
            {
                order.cancel_url.as_deref().map(|url| WayBack {
                    label: format!("{}{merchant}", texts::CANCEL_AND_RETURN_TO),
                    href: with_result(url, &order.order_no, None),
                    automatic: false,
                })
            } else {
                None
            }
        });
        PayView {
            way_back,
            method,
            method_name: method.filter(|_| choices.is_empty()).map(name),
            choices,
            scan_code: matches!(self.phase, Phase::Processing { .. })
                && self.order.as_ref().and_then(|order| order.payment_status)
                    == Some(AttemptStatus::Submitted),
            amount: self
                .order
                .as_ref()
                .map(|order| format_minor(order.amount_cents, order.currency)),
            status,
            pay_button,
            retry_label,
            progress,
            notice: self.notice,
            outcome,
            refunds: if self.phase == Phase::Done {
                self.refunds.iter().map(RefundLine::of).collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// The pay button as shown; absent when paying is not possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayButton {
    /// Whether a press does anything.
    pub enabled: bool,
    /// Its text.
    pub label: &'static str,
    /// A request is in flight (`aria-busy`).
    pub busy: bool,
}

/// How a settled order ended, for the receipt or the failure panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Charged once (and perhaps given back since, in part or in full).
    Paid {
        /// The receipt's heading: paid, or refunded in full.
        heading: &'static str,
        /// The line under it.
        summary: &'static str,
        /// When, formatted for people.
        paid_at: Option<String>,
        /// Our payment id, when it was paid from this page load.
        payment_id: Option<String>,
    },
    /// Will never be charged.
    Failed {
        /// Why.
        reason: String,
    },
}

/// The way back to the merchant's shop: only ever the order's own
/// `return_url` or `cancel_url`, which the backend accepted for the merchant's
/// origins; the page reaches no other address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WayBack {
    /// "Return to {merchant}" or "Cancel and return to {merchant}".
    pub label: String,
    /// The URL with `order_no` (and, once final, `status`) appended.
    pub href: String,
    /// Followed by itself after [`RETURN_AFTER_MS`] (the final return), unless
    /// the shopper stays.
    pub automatic: bool,
}

/// How long the receipt stays before the page returns to the merchant by itself.
pub const RETURN_AFTER_MS: u32 = 5_000;

/// `url` (as the backend serialised it) with `order_no` and, when given,
/// `status` appended to its query, before any fragment. Both values are
/// letters, digits and `_` (an order number, a status), so nothing needs escaping.
pub fn with_result(url: &str, order_no: &str, status: Option<OrderStatus>) -> String {
    let (base, fragment) = match url.split_once('#') {
        Some((base, fragment)) => (base, Some(fragment)),
        None => (url, None),
    };
    let safe = |text: &str| {
        text.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<String>()
    };
    let mut out = format!(
        "{base}{}order_no={}",
        if base.contains('?') { '&' } else { '?' },
        safe(order_no)
    );
    if let Some(status) = status {
        out.push_str("&status=");
        out.push_str(status.as_str());
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Everything the payment page renders, derived from [`PayFlow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayView {
    /// The way back to the merchant's shop, when the order has one for now.
    pub way_back: Option<WayBack>,
    /// What pays: the order's method once it has a payment attempt, else
    /// (while it is pending) the one this page chose; `None` when unknown.
    pub method: Option<PaymentMethod>,
    /// [`PayView::method`] named, for the line that says what pays, when the
    /// shopper has nothing to choose.
    pub method_name: Option<&'static str>,
    /// The methods to choose from, with their names, the default first;
    /// empty when there is no choice ([`PayFlow::choices`]).
    pub choices: Vec<(PaymentMethod, &'static str)>,
    /// The platform has the payment and waits for the shopper: a platform
    /// paid by QR code shows its code now.
    pub scan_code: bool,
    /// The formatted amount, once the order is known.
    pub amount: Option<String>,
    /// The order's status, once known.
    pub status: Option<OrderStatus>,
    /// The pay button, when paying is possible.
    pub pay_button: Option<PayButton>,
    /// The retry button's label, when there is something to retry.
    pub retry_label: Option<&'static str>,
    /// A progress line while something is in flight.
    pub progress: Option<&'static str>,
    /// A message for the shopper.
    pub notice: Option<Notice>,
    /// The receipt or failure reason, once final.
    pub outcome: Option<Outcome>,
    /// The final order's refunds, oldest first, listed under the receipt.
    pub refunds: Vec<RefundLine>,
}

/// One refund as listed under the receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundLine {
    /// The amount given back, formatted.
    pub amount: String,
    /// Where it stands (its wire spelling goes into `data-status`).
    pub status: RefundStatus,
    /// Where it stands, in words.
    pub status_text: &'static str,
    /// Why the checkout gave it back by itself, for an automatic refund.
    pub note: Option<&'static str>,
}

impl RefundLine {
    fn of(refund: &RefundSummary) -> Self {
        Self {
            amount: format_minor(refund.amount_cents, refund.currency),
            status: refund.status,
            status_text: texts::refund_status(refund.status),
            note: (refund.requested_by == RefundRequester::Automatic)
                .then_some(texts::REFUND_AUTOMATIC),
        }
    }
}

/// The balance of the account the order charges, formatted, when the wallet
/// pays (`method`, [`PayView::method`]) and the account is one of the
/// shopper's `accounts`. A payment through the platform shows no balance.
pub fn balance_text(
    order: Option<&Order>,
    method: Option<PaymentMethod>,
    accounts: &[Account],
) -> Option<String> {
    let order = order.filter(|_| method == Some(PaymentMethod::Wallet))?;
    accounts
        .iter()
        .find(|account| account.account_id == order.account_id)
        .map(|account| format_minor(account.balance_cents, account.currency))
}
