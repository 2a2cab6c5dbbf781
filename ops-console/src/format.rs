//! How values are written for the operator.

use time::{OffsetDateTime, UtcOffset};

/// A timestamp in UTC to the second, as `2025-01-31 14:05:09 UTC`.
pub fn timestamp(at: OffsetDateTime) -> String {
    let utc = at.checked_to_offset(UtcOffset::UTC).unwrap_or(at);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        utc.year(),
        u8::from(utc.month()),
        utc.day(),
        utc.hour(),
        utc.minute(),
        utc.second()
    )
}

/// A timestamp in UTC to the millisecond, as `2025-01-31 14:05:09.042 UTC`:
/// a timeline's events often share a second.
pub fn timestamp_ms(at: OffsetDateTime) -> String {
    let utc = at.checked_to_offset(UtcOffset::UTC).unwrap_or(at);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC",
        utc.year(),
        u8::from(utc.month()),
        utc.day(),
        utc.hour(),
        utc.minute(),
        utc.second(),
        utc.millisecond()
    )
}

/// The minute of a timestamp in UTC, as `14:05`.
pub fn minute(at: OffsetDateTime) -> String {
    let utc = at.checked_to_offset(UtcOffset::UTC).unwrap_or(at);
    format!("{:02}:{:02}", utc.hour(), utc.minute())
}

/// JSON facts, indented for reading.
pub fn pretty_json(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A wire name such as `SECOND_SUCCESS_FOR_PAID_ORDER` or `attempt_created`
/// as words: `Second success for paid order`.
pub fn words(name: &str) -> String {
    let lower = name.replace('_', " ").to_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Today's date in UTC as `YYYY-MM-DD`, from the browser's clock.
pub fn today_utc() -> String {
    let iso: String = js_sys::Date::new_0().to_iso_string().into();
    iso.chars().take(10).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn timestamps_are_shown_in_utc() {
        assert_eq!(
            timestamp(datetime!(2025-01-31 15:05:09 +01:00)),
            "2025-01-31 14:05:09 UTC"
        );
        assert_eq!(minute(datetime!(2025-01-31 14:05:59 UTC)), "14:05");
        assert_eq!(
            timestamp_ms(datetime!(2025-01-31 14:05:09.042_9 UTC)),
            "2025-01-31 14:05:09.042 UTC"
        );
    }

    #[test]
    fn wire_names_read_as_words() {
        assert_eq!(
            words("SECOND_SUCCESS_FOR_PAID_ORDER"),
            "Second success for paid order"
        );
        assert_eq!(words("attempt_created"), "Attempt created");
        assert_eq!(words(""), "");
    }

    #[test]
    fn facts_are_indented() {
        let facts = serde_json::json!({"amount_cents": 2500});
        assert_eq!(pretty_json(&facts), "{\n  \"amount_cents\": 2500\n}");
    }
}
