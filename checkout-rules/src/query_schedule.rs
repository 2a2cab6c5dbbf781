//! When the platform is asked about a payment (or refund) that has no result
//! yet, and when such a payment is put in front of a person. The backend's
//! query worker (`settlement.rs`) follows it; the settings come from
//! `QUERY_AFTER_SECS`, `QUERY_EVERY_SECS` and `QUERY_RETRIES`.

use std::time::Duration;

/// When the platform is asked about a payment without a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuerySchedule {
    /// First query, this long after the hand-over (`QUERY_AFTER_SECS`).
    pub after: Duration,
    /// Then again every this long (`QUERY_EVERY_SECS`).
    pub every: Duration,
    /// After the first query and this many more without a result, `STUCK_PAYMENT` (`QUERY_RETRIES`).
    pub retries: u32,
}

impl QuerySchedule {
    /// True exactly at the query that spends the retries (the first and
    /// `retries` more): the moment to flag `STUCK_PAYMENT`, once.
    pub fn spent_at(self, queries: i32) -> bool {
        queries
            == i32::try_from(self.retries)
                .unwrap_or(i32::MAX)
                .saturating_add(1)
    }
}

impl Default for QuerySchedule {
    /// WeChat Pay's advice and hyperswitch's payment sync: 60 s, then 5 × 300 s.
    fn default() -> Self {
        Self {
            after: Duration::from_secs(60),
            every: Duration::from_secs(300),
            retries: 5,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stuck_is_flagged_once_at_the_query_that_spends_the_retries() {
        let schedule = QuerySchedule::default();

        let flagged: Vec<i32> = (0..20)
            .filter(|&queries| schedule.spent_at(queries))
            .collect();

        assert_eq!(flagged, vec![6], "the first query and 5 more");
    }

    #[test]
    fn retries_beyond_i32_never_flag_early() {
        let schedule = QuerySchedule {
            retries: u32::MAX,
            ..QuerySchedule::default()
        };

        assert!(!schedule.spent_at(6));
        assert!(schedule.spent_at(i32::MAX));
    }
}
