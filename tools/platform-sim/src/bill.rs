//! The daily bill: what the platform says it moved on one UTC day, in the
//! shape of a WeChat Pay trade bill (`GET /v3/bill/tradebill`, bill type ALL),
//! for the merchant to reconcile its ledger against.
//!
//! `GET /v1/bills/{date}` (`YYYY-MM-DD`, a UTC day) answers `200 text/csv`: one
//! header line ([`COLUMNS`]), then one row per payment that SUCCEEDED that day
//! (by the moment it was decided) and one row per refund that SUCCEEDED that
//! day, oldest first. A day with nothing on it is the header alone. The
//! columns are a subset of WeChat Pay's, in its order, with English names:
//!
//! | column | payment row | refund row |
//! |---|---|---|
//! | `trade_time` | when it was decided, RFC 3339 UTC | when the refund was decided |
//! | `transaction_id` | the platform's payment id | the refunded payment's id |
//! | `out_trade_no` | the merchant's order number | the refunded order's number |
//! | `trade_state` | `SUCCESS` | `REFUND` |
//! | `currency` | ISO 4217 | ISO 4217 |
//! | `amount` | the amount taken, decimal in major units (`"24.50"`) | the payment's amount |
//! | `refund_id` | empty | the platform's refund id |
//! | `out_refund_no` | empty | the merchant's refund number |
//! | `refund_amount` | empty | the amount given back, decimal in major units |
//! | `refund_state` | empty | `SUCCESS` |
//! | `fee` | the platform's fee at [`FEE_RATE_PER_MILLE`], rounded half up | `0.00` (no fee is returned) |
//! | `rate` | `0.60%` | `0.60%` |
//!
//! No field ever holds a comma, a quote or a line break (ids, order numbers
//! and refund numbers are visible ASCII without them), so fields are written
//! bare, without quoting. Amounts are written from integer minor units with
//! the currency's number of decimals, never through a float.
//!
//! Two chaos knobs make a bill disagree with what happened
//! ([`crate::Chaos::bill_omit`], [`crate::Chaos::bill_amount_delta_cents`]); a
//! payment or refund copies them when it is created, like every knob.

use crate::error::SimError;
use crate::payment::{PaymentBook, PaymentStatus};
use crate::refund::RefundStatus;
use api_types::Currency;
use time::{Date, OffsetDateTime};

/// The columns of a bill, in order (the wire contract, [`api_types::platform::BILL_COLUMNS`]).
pub use api_types::platform::BILL_COLUMNS as COLUMNS;

/// The platform's fee on a payment, in thousandths of its amount (WeChat Pay's
/// common 0.6 %).
pub const FEE_RATE_PER_MILLE: i64 = 6;

/// `trade_state` of a payment row.
pub const TRADE_SUCCESS: &str = "SUCCESS";
/// `trade_state` of a refund row.
pub const TRADE_REFUND: &str = "REFUND";

/// Parses a bill date: exactly `YYYY-MM-DD`, a real calendar day.
pub fn parse_date(text: &str) -> Result<Date, SimError> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let well_formed = text.len() == 10
        && text.bytes().enumerate().all(|(at, byte)| {
            matches!(at, 4 | 7) == (byte == b'-') && (byte == b'-' || byte.is_ascii_digit())
        });
    well_formed
        .then(|| Date::parse(text, format).ok())
        .flatten()
        .ok_or_else(|| {
            SimError::BadRequest(format!(
                "the bill date must be a calendar day written YYYY-MM-DD, not {text:?}"
            ))
        })
}

/// Formats `minor` units of `currency` as a decimal in major units with the
/// currency's number of decimals: 2450 EUR is `"24.50"`, 500 JPY is `"500"`.
/// A negative amount is written as 0 (a bill lists no negative amounts).
pub fn format_amount(minor: i64, currency: Currency) -> String {
    let minor = minor.max(0);
    let exponent = currency.exponent();
    if exponent == 0 {
        return minor.to_string();
    }
    let scale = 10_i64.pow(exponent);
    format!(
        "{}.{:0width$}",
        minor / scale,
        minor % scale,
        width = exponent as usize
    )
}

/// The fee on a payment of `amount` minor units, rounded half up.
pub fn fee_of(amount: i64) -> i64 {
    (amount.max(0) * FEE_RATE_PER_MILLE + 500) / 1000
}

/// One line of the bill, before it is written.
struct Line {
    at: OffsetDateTime,
    /// Tie-breaker for rows decided at the same instant.
    id: String,
    fields: [String; 12],
}

/// Writes the bill of `date` from the book: the header, then every payment and
/// refund that succeeded that UTC day, oldest first, as the knobs each copied
/// make it look.
pub(crate) fn write(date: Date, book: &PaymentBook) -> String {
    let on_date = |at: Option<OffsetDateTime>| {
        at.filter(|at| at.to_offset(time::UtcOffset::UTC).date() == date)
    };
    let rate = format!(
        "{}.{:02}%",
        FEE_RATE_PER_MILLE / 10,
        (FEE_RATE_PER_MILLE % 10) * 10
    );
    let mut lines = Vec::new();
    for payment in book.all() {
        if payment.status != PaymentStatus::Succeeded || payment.chaos.bill_omit {
            continue;
        }
        let Some(at) = on_date(payment.decided_at) else {
            continue;
        };
        let currency = payment.request.currency;
        let amount = payment.request.amount_cents;
        let listed = amount.saturating_add(payment.chaos.bill_amount_delta_cents);
        lines.push(Line {
            at,
            id: payment.payment_id.clone(),
            fields: [
                rfc3339(at),
                payment.payment_id.clone(),
                payment.request.order_no.clone(),
                TRADE_SUCCESS.to_owned(),
                currency.as_str().to_owned(),
                format_amount(listed, currency),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                format_amount(fee_of(listed), currency),
                rate.clone(),
            ],
        });
    }
    for refund in book.refunds.all() {
        if refund.status != RefundStatus::Succeeded || refund.chaos.bill_omit {
            continue;
        }
        let Some(at) = on_date(refund.decided_at) else {
            continue;
        };
        let currency = refund.request.currency;
        let payment_amount = book
            .get(&refund.request.payment_id)
            .map_or(0, |payment| payment.request.amount_cents);
        let listed = refund
            .request
            .amount_cents
            .saturating_add(refund.chaos.bill_amount_delta_cents);
        lines.push(Line {
            at,
            id: refund.refund_id.clone(),
            fields: [
                rfc3339(at),
                refund.request.payment_id.clone(),
                refund.order_no.clone(),
                TRADE_REFUND.to_owned(),
                currency.as_str().to_owned(),
                format_amount(payment_amount, currency),
                refund.refund_id.clone(),
                refund.request.refund_no.clone(),
                format_amount(listed, currency),
                TRADE_SUCCESS.to_owned(),
                format_amount(0, currency),
                rate.clone(),
            ],
        });
    }
    lines.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    let mut text = COLUMNS.join(",");
    text.push('\n');
    for line in lines {
        text.push_str(&line.fields.join(","));
        text.push('\n');
    }
    text
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bill_dates_are_calendar_days_written_in_full() {
        assert_eq!(
            parse_date("2026-12-03").ok(),
            Some(time::macros::date!(2026 - 12 - 03))
        );
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2026-1-01",
            "26-12-03",
            "2026/12/03",
            "2026-12-03T00:00:00Z",
            "",
            "today",
            "+2026-12-03",
        ] {
            assert!(parse_date(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn amounts_are_written_exactly_with_the_currencys_decimals() {
        assert_eq!(format_amount(2_450, Currency::EUR), "24.50");
        assert_eq!(format_amount(1, Currency::EUR), "0.01");
        assert_eq!(format_amount(100, Currency::CNY), "1.00");
        assert_eq!(format_amount(-5, Currency::EUR), "0.00");
        let yen: Currency = "JPY".parse().expect("a currency");
        assert_eq!(format_amount(500, yen), "500");
        assert_eq!(
            format_amount(i64::MAX, Currency::EUR),
            "92233720368547758.07"
        );
    }

    #[test]
    fn the_fee_is_six_per_mille_rounded_half_up() {
        assert_eq!(fee_of(10_000), 60);
        assert_eq!(fee_of(2_450), 15); // 14.7
        assert_eq!(fee_of(250), 2); // 1.5
        assert_eq!(fee_of(83), 0); // 0.498
        assert_eq!(fee_of(0), 0);
    }
}
