//! How a result reached us: on its own, or as the answer to our query. The
//! refund rule ([`crate::refund::decide_refund`]) frees money only on the latter.

/// How a result reached us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A signed notification the platform posted (the callback endpoint).
    Notification,
    /// The platform's answer to our own query of the payment or refund.
    QueryAnswer,
}
