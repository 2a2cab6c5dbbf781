//! Which payments succeed: a rule on the amount, so a test or a demo picks the
//! outcome by picking the price, with no extra field in the payment request.

use api_types::api::CallbackType;

/// Decides whether a payment succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeRule {
    /// Fails when the last two digits of the amount in minor units equal this (0..=99).
    FailCentsSuffix(u8),
    /// Every payment fails.
    AlwaysFail,
}

impl Default for OutcomeRule {
    /// An amount ending in 13 minor units (e.g. 10.13 EUR) fails; anything else succeeds.
    fn default() -> Self {
        Self::FailCentsSuffix(13)
    }
}

impl OutcomeRule {
    /// The result callback a payment of `amount_cents` ends with.
    pub fn decide(&self, amount_cents: i64) -> CallbackType {
        let fails = match self {
            Self::FailCentsSuffix(suffix) => amount_cents.rem_euclid(100) == i64::from(*suffix),
            Self::AlwaysFail => true,
        };
        if fails {
            CallbackType::PaymentFailed
        } else {
            CallbackType::PaymentSucceeded
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_amounts_ending_in_13_fail() {
        let rule = OutcomeRule::default();
        assert_eq!(rule.decide(1013), CallbackType::PaymentFailed);
        assert_eq!(rule.decide(13), CallbackType::PaymentFailed);
        assert_eq!(rule.decide(1000), CallbackType::PaymentSucceeded);
        assert_eq!(rule.decide(1312), CallbackType::PaymentSucceeded);
        assert_eq!(rule.decide(113_000), CallbackType::PaymentSucceeded);
    }

    #[test]
    fn the_failing_suffix_is_configurable() {
        let rule = OutcomeRule::FailCentsSuffix(0);
        assert_eq!(rule.decide(500), CallbackType::PaymentFailed);
        assert_eq!(rule.decide(513), CallbackType::PaymentSucceeded);
    }

    #[test]
    fn always_fail_fails_everything() {
        for amount in [1, 13, 100, 9999] {
            assert_eq!(
                OutcomeRule::AlwaysFail.decide(amount),
                CallbackType::PaymentFailed
            );
        }
    }
}
