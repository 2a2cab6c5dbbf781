//! Every sentence and label of the payment page that depends on where the
//! pay flow stands. (Fixed headings such as "Payment" stay in the page's markup.)
//!
//! They live together so the wording can be reviewed in one place without
//! reading the rules, and because they quote each other: notices name the
//! buttons ("Pay now", "Try again"), so a label and the notices quoting it
//! change together. Tests keep the literal strings on purpose: a changed
//! word should be a deliberate change to a test too.

use api_types::{PaymentMethod, RefundStatus};

/// The pay button, while paying is possible.
pub const PAY_NOW: &str = "Pay now";
/// The pay button, while the pay request is in flight.
pub const PAYING: &str = "Paying\u{2026}";

/// The retry button, when the last request failed and repeating it is safe.
pub const TRY_AGAIN: &str = "Try again";
/// The retry button, when the bank is slow and the order may settle any moment.
pub const CHECK_AGAIN: &str = "Check again";

/// Progress while the order is fetched.
pub const LOADING_ORDER: &str = "Loading your order\u{2026}";
/// Progress while a request token is fetched.
pub const PREPARING_PAYMENT: &str = "Preparing a secure payment\u{2026}";
/// Progress while the first pay request is in flight.
pub const SENDING_PAYMENT: &str = "Sending your payment\u{2026}";
/// Progress while the same pay request is re-sent after getting no answer.
pub const SENDING_PAYMENT_AGAIN: &str = "Sending your payment again\u{2026}";
/// Progress while the order is read after a pay request ended in doubt.
pub const CHECKING_ORDER: &str = "Checking what became of your payment\u{2026}";
/// Progress while the accepted payment is polled until final.
pub const WAITING_FOR_BANK: &str = "Waiting for the bank to confirm\u{2026}";
/// Progress while the payment's hand-over had no answer and the platform is
/// being asked where it stands: the payment is not failed, only unconfirmed.
pub const CONFIRMING_WITH_PROVIDER: &str = "Confirming with the payment provider\u{2026}";

/// The failure reason shown when a FAILED order carries none of its own.
/// While a platform paid by QR code waits for the shopper to scan it.
pub const SCAN_TO_PAY: &str = "Scan the QR code to pay\u{2026}";

pub const DECLINED_WITHOUT_REASON: &str = "The payment was declined.";

/// What a CLOSED order's page says.
pub const ORDER_EXPIRED: &str =
    "This order expired before it was paid. Nothing was charged; place it again to buy.";

/// The receipt's heading, for a PAID order.
pub const RECEIPT_PAID: &str = "Payment received";
/// The receipt's line under the heading, for a PAID order.
pub const RECEIPT_PAID_SUMMARY: &str = "Thank you. Your order is paid.";
/// The receipt's heading, for a REFUNDED order (given back in full).
pub const RECEIPT_REFUNDED: &str = "Refunded";
/// The receipt's line under the heading, for a REFUNDED order.
pub const RECEIPT_REFUNDED_SUMMARY: &str = "Your payment was given back in full.";

/// The note on a refund the checkout made by itself: the platform took money
/// it could not book for this order, and gives it back to where it came from
/// (not to the shopper's balance with us).
pub const REFUND_AUTOMATIC: &str =
    "Returned automatically to where it came from: a payment we could not book.";

/// A payment method's name: the shopper's wallet, or the platform
/// (`GET /api/platform`'s `platform`) that takes the money.
pub fn method_name(method: PaymentMethod, platform: &str) -> &'static str {
    match (method, platform) {
        (PaymentMethod::Wallet, _) => "Wallet balance",
        (_, "wechatpay") => "WeChat Pay",
        (_, "alipay") => "Alipay",
        (_, "sandbox") => "Simulated payment platform",
        _ => "Payment platform",
    }
}

/// A refund's status in words, for its line under the receipt.
pub fn refund_status(status: RefundStatus) -> &'static str {
    match status {
        RefundStatus::Pending => "Refund in progress",
        RefundStatus::Succeeded => "Refunded",
        RefundStatus::Failed => "Refund failed",
    }
}

/// Something the page has to say to the shopper, shown in the live region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The order could not be loaded (network or server).
    OrderUnavailable,
    /// There is no order with that number.
    OrderNotFound,
    /// The payment service (token store) is down for now.
    ServiceUnavailable,
    /// The page could not reach the server.
    Offline,
    /// The old token was refused and the order, read after it, has no
    /// payment; a new token is ready. Nothing was charged.
    TokenRenewed,
    /// The balance does not cover the order.
    InsufficientFunds,
    /// The balance does not cover the order, and the platform's own method
    /// is now chosen, with a new token: "Pay now" pays that way.
    InsufficientFundsPayAnotherWay,
    /// The method named is not offered; another one is chosen, the token kept.
    MethodUnavailable,
    /// Re-sending the same pay request because the last one got no answer.
    Retrying,
    /// Another submit of the same payment is still being recorded; sending it again shortly.
    BeingRecorded,
    /// The pay request kept failing; pressing "Try again" is safe.
    SubmitStalled,
    /// The order was already settled by another tab or an earlier attempt.
    AlreadySettled,
    /// The bank is taking longer than usual to confirm.
    Slow,
    /// Something unexpected answered; pressing again is safe.
    Unexpected,
    /// The session is gone; the page is going to the sign-in page.
    SignedOut,
}

impl Notice {
    /// The text shown and announced.
    pub fn text(self) -> &'static str {
        match self {
            Self::OrderUnavailable => "We could not load this order. Please try again.",
            Self::OrderNotFound => "We could not find this order. Please check the link.",
            Self::ServiceUnavailable => {
                "Payments are temporarily unavailable. Nothing was charged. Please try again in a moment."
            }
            Self::Offline => {
                "We could not reach the server. Check your connection; nothing was charged. Please try again."
            }
            Self::TokenRenewed => {
                "Your payment session expired, so nothing was charged. Please press \u{201c}Pay now\u{201d} again."
            }
            Self::InsufficientFunds => {
                "Your balance is too low for this order. Nothing was charged."
            }
            Self::InsufficientFundsPayAnotherWay => {
                "Your balance is too low for this order, so nothing was charged. You can pay another way: it is chosen below; press \u{201c}Pay now\u{201d} to pay with it."
            }
            Self::MethodUnavailable => {
                "That payment method is not available for this order, so nothing was charged. Please check the method below and press \u{201c}Pay now\u{201d} again."
            }
            Self::Retrying => {
                "The connection is unstable; still trying to send your payment\u{2026}"
            }
            Self::BeingRecorded => {
                "Your payment is being recorded\u{2026} You will be charged at most once."
            }
            Self::SubmitStalled => {
                "We could not confirm that your payment was sent. Pressing \u{201c}Try again\u{201d} is safe: you will be charged at most once."
            }
            Self::AlreadySettled => "This order has already been settled.",
            Self::Slow => {
                "The bank is taking longer than usual. You will be charged at most once; check again in a moment."
            }
            Self::Unexpected => {
                "Something went wrong on our side. Pressing \u{201c}Try again\u{201d} is safe: you will be charged at most once."
            }
            Self::SignedOut => "You are signed out. Taking you to the sign-in page\u{2026}",
        }
    }

    /// A stable name for tests and styling (`data-notice`).
    pub fn code(self) -> &'static str {
        match self {
            Self::OrderUnavailable => "order-unavailable",
            Self::OrderNotFound => "order-not-found",
            Self::ServiceUnavailable => "service-unavailable",
            Self::Offline => "offline",
            Self::TokenRenewed => "token-renewed",
            Self::InsufficientFunds => "insufficient-funds",
            Self::InsufficientFundsPayAnotherWay => "insufficient-funds-pay-another-way",
            Self::MethodUnavailable => "method-unavailable",
            Self::Retrying => "retrying",
            Self::BeingRecorded => "being-recorded",
            Self::SubmitStalled => "submit-stalled",
            Self::AlreadySettled => "already-settled",
            Self::Slow => "slow",
            Self::Unexpected => "unexpected",
            Self::SignedOut => "signed-out",
        }
    }

    /// True for problems (shown as an error), false for information.
    pub fn is_problem(self) -> bool {
        !matches!(
            self,
            Self::Retrying
                | Self::BeingRecorded
                | Self::AlreadySettled
                | Self::Slow
                | Self::SignedOut
        )
    }
}

/// "Return to " before the merchant's name, on the receipt.
pub const RETURN_TO: &str = "Return to ";
/// "Cancel and return to " before the merchant's name, while the order can be paid.
pub const CANCEL_AND_RETURN_TO: &str = "Cancel and return to ";
/// The merchant's name when the order does not carry one.
pub const THE_SHOP: &str = "the shop";
/// Said under the receipt while the page counts down to the return.
pub const RETURNING_SOON: &str = "Taking you back in a few seconds\u{2026}";
/// The button that cancels the automatic return.
pub const STAY_HERE: &str = "Stay on this page";
