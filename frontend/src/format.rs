//! How values are written for people.
//!
//! Money is not here: `api_types::format_minor` formats it next to
//! `Currency`, whose number of minor digits it needs.

use time::{OffsetDateTime, UtcOffset};

/// Shows a timestamp in UTC to the second, as `2025-01-31 14:05:09 UTC`.
///
/// Written out by hand rather than with a `time` format description, which
/// would link `time`'s formatter into the page for one line of text.
pub fn format_timestamp(at: OffsetDateTime) -> String {
    // The backend sends UTC; another offset is shown as the same instant in UTC.
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

#[cfg(test)]
mod tests {
    use super::format_timestamp;
    use time::macros::datetime;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn timestamps_are_shown_in_utc_to_the_second_for_people() {
        assert_eq!(
            format_timestamp(datetime!(2025-01-31 14:05:09 UTC)),
            "2025-01-31 14:05:09 UTC"
        );
        assert_eq!(
            format_timestamp(datetime!(2025-01-31 14:05:09.999_999 UTC)),
            "2025-01-31 14:05:09 UTC"
        );
        assert_eq!(
            format_timestamp(datetime!(0999-01-02 03:04:05 UTC)),
            "0999-01-02 03:04:05 UTC"
        );
        assert_eq!(
            format_timestamp(datetime!(2025-01-31 16:05:09 +02:00)),
            "2025-01-31 14:05:09 UTC"
        );
    }
}
