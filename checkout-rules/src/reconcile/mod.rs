//! The pure half of the daily bill reconciliation: reading the platform's bill
//! ([`bill`]) and comparing it with what we hold ([`classify`]). The backend's
//! `reconcile/` fetches the bill, reads the books under the date's advisory
//! lock and stores every classified row. The two dates it is given, the day
//! reconciled and the time of day it runs at, are read here too.

pub mod bill;
pub mod classify;

use time::{Date, Time};

/// Parses a bill date: exactly `YYYY-MM-DD`, a real calendar day.
pub fn parse_date(text: &str) -> Result<Date, String> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let shaped = text.len() == 10
        && text.bytes().enumerate().all(|(at, byte)| {
            if matches!(at, 4 | 7) {
                byte == b'-'
            } else {
                byte.is_ascii_digit()
            }
        });
    shaped
        .then(|| Date::parse(text, format).ok())
        .flatten()
        .ok_or_else(|| format!("the date must be a calendar day written YYYY-MM-DD, not {text:?}"))
}

/// Parses `RECONCILE_AT_UTC`: `HH:MM`, 24-hour, UTC.
pub fn parse_time_of_day(text: &str) -> Result<Time, String> {
    let format = time::macros::format_description!("[hour]:[minute]");
    Time::parse(text, format)
        .map_err(|_| format!("the time of day must be HH:MM (24-hour, UTC), not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::time;

    #[test]
    fn dates_are_calendar_days_written_in_full() {
        assert_eq!(
            parse_date("2026-12-03"),
            Ok(time::macros::date!(2026 - 12 - 03))
        );
        for bad in [
            "2026-02-30",
            "2026-12-3",
            "20261203",
            "",
            "yesterday",
            "2026-12-03 ",
        ] {
            assert!(parse_date(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_time_of_day_is_hours_and_minutes() {
        assert_eq!(parse_time_of_day("10:00"), Ok(time!(10:00)));
        assert_eq!(parse_time_of_day("00:05"), Ok(time!(00:05)));
        for bad in ["24:00", "10", "10:60", "ten", ""] {
            assert!(parse_time_of_day(bad).is_err(), "{bad:?}");
        }
    }
}
