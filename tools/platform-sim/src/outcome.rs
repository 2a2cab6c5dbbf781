//! Which payments and refunds succeed: a rule on the amount, so a test or a
//! demo picks the outcome by picking the price, with no extra field in the
//! request.

/// How a payment or a refund ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The money moves (taken, or given back).
    Succeeded,
    /// The money does not move.
    Failed,
}

/// Decides whether a payment or a refund succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeRule {
    /// Fails when the last two digits of the amount in minor units equal this (0..=99).
    FailCentsSuffix(u8),
    /// Every payment and refund fails.
    AlwaysFail,
}

impl Default for OutcomeRule {
    /// An amount ending in 13 minor units (e.g. 10.13 EUR) fails; anything else succeeds.
    fn default() -> Self {
        Self::FailCentsSuffix(13)
    }
}

impl OutcomeRule {
    /// How a payment or refund of `amount_cents` ends.
    pub fn decide(&self, amount_cents: i64) -> Outcome {
        let fails = match self {
            Self::FailCentsSuffix(suffix) => amount_cents.rem_euclid(100) == i64::from(*suffix),
            Self::AlwaysFail => true,
        };
        if fails {
            Outcome::Failed
        } else {
            Outcome::Succeeded
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_amounts_ending_in_13_fail() {
        let rule = OutcomeRule::default();
        assert_eq!(rule.decide(1013), Outcome::Failed);
        assert_eq!(rule.decide(13), Outcome::Failed);
        assert_eq!(rule.decide(1000), Outcome::Succeeded);
        assert_eq!(rule.decide(1312), Outcome::Succeeded);
        assert_eq!(rule.decide(113_000), Outcome::Succeeded);
    }

    #[test]
    fn the_failing_suffix_is_configurable() {
        let rule = OutcomeRule::FailCentsSuffix(0);
        assert_eq!(rule.decide(500), Outcome::Failed);
        assert_eq!(rule.decide(513), Outcome::Succeeded);
    }

    #[test]
    fn always_fail_fails_everything() {
        for amount in [1, 13, 100, 9999] {
            assert_eq!(OutcomeRule::AlwaysFail.decide(amount), Outcome::Failed);
        }
    }
}
