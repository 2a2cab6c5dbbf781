//! How values are written for people.
//!
//! Money is not here: `api_types::format_minor` formats it next to
//! `Currency`, whose number of minor digits it needs.

/// Shows an RFC 3339 UTC timestamp as `2025-01-31 14:05:09 UTC`; other text unchanged.
pub fn format_timestamp(rfc3339: &str) -> String {
    let trimmed = rfc3339.trim();
    let Some((date, time)) = trimmed.split_once('T') else {
        return trimmed.to_owned();
    };
    let utc = time.ends_with('Z') || time.ends_with("+00:00");
    let clock: String = time.chars().take(8).collect();
    let well_formed = date.len() == 10
        && clock.len() == 8
        && clock.chars().enumerate().all(|(i, c)| {
            if i == 2 || i == 5 {
                c == ':'
            } else {
                c.is_ascii_digit()
            }
        });
    if utc && well_formed {
        format!("{date} {clock} UTC")
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::format_timestamp;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn timestamps_are_shown_in_utc_for_people() {
        assert_eq!(
            format_timestamp("2025-01-31T14:05:09Z"),
            "2025-01-31 14:05:09 UTC"
        );
        assert_eq!(
            format_timestamp("2025-01-31T14:05:09.5+00:00"),
            "2025-01-31 14:05:09 UTC"
        );
        assert_eq!(
            format_timestamp("2025-01-31T14:05:09+02:00"),
            "2025-01-31T14:05:09+02:00"
        );
        assert_eq!(format_timestamp("yesterday"), "yesterday");
    }
}
