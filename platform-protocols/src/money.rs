//! Yuan amounts as the platforms write them, and integer fen as we keep them.
//!
//! WeChat Pay API v3 sends amounts as integers in fen (分, the minor unit), so it needs
//! nothing from here. Alipay sends and expects decimal yuan strings: `total_amount`,
//! `refund_amount`, `receipt_amount`, `refund_fee` are "Price" fields, a string with
//! at most two decimals (`"88.88"`, in the range 0.01 to 100000000 for a payment).
//! This module converts between the two exactly: the text is parsed digit by digit
//! into an `i64` of fen, never through a float, and anything that is not plainly a
//! non-negative decimal with at most two places is refused.
//!
//! (`api-types::money` has no decimal parser, only a display formatter, so the parser
//! lives here beside its only users.)

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Fen in a yuan.
const FEN_PER_YUAN: i64 = 100;

/// Why a text is not a yuan amount, or a number is not a payable amount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// The text is empty.
    #[error("a yuan amount cannot be empty")]
    Empty,
    /// The text has something other than digits and one decimal point (a sign, an
    /// exponent, a space, a comma, a second point).
    #[error("{0:?} is not a yuan amount: only digits and one decimal point are allowed")]
    NotDecimal(String),
    /// The text starts with the decimal point (`".5"`).
    #[error("{0:?} is not a yuan amount: digits must come before the decimal point")]
    MissingWholePart(String),
    /// The text ends with the decimal point (`"5."`).
    #[error("{0:?} is not a yuan amount: digits must follow the decimal point")]
    MissingFraction(String),
    /// More than two decimals: fen are the smallest unit.
    #[error("{0:?} has more than two decimals; the smallest unit is one fen (0.01)")]
    TooManyDecimals(String),
    /// The amount does not fit in an `i64` of fen.
    #[error("{0:?} is too large")]
    Overflow(String),
    /// A negative number of fen has no yuan text on these platforms.
    #[error("a yuan amount cannot be negative, got {0} fen")]
    Negative(i64),
}

/// Parses a yuan amount into fen: `"12.50"` and `"12.5"` are 1250, `"12"` is 1200,
/// `"0.01"` is 1.
///
/// Refused: the empty text, signs (`+`, `-`), exponents, spaces and any other
/// character, a leading or trailing decimal point, more than two decimals, and
/// amounts beyond `i64::MAX` fen. Leading zeros are accepted (`"007.00"` is 700).
pub fn parse_yuan(text: &str) -> Result<i64, MoneyError> {
    if text.is_empty() {
        return Err(MoneyError::Empty);
    }
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    let all_digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if !all_digits(whole) || !fraction.is_none_or(all_digits) {
        return Err(MoneyError::NotDecimal(text.to_owned()));
    }
    if whole.is_empty() {
        return Err(MoneyError::MissingWholePart(text.to_owned()));
    }
    let fraction_fen = match fraction {
        None => 0,
        Some("") => return Err(MoneyError::MissingFraction(text.to_owned())),
        Some(digits) if digits.len() > 2 => {
            return Err(MoneyError::TooManyDecimals(text.to_owned()));
        }
        // One decimal is tenths of a yuan: "12.5" is 50 fen.
        Some(digits) => {
            digits
                .bytes()
                .fold(0_i64, |acc, byte| acc * 10 + i64::from(byte - b'0'))
                * if digits.len() == 1 { 10 } else { 1 }
        }
    };
    let overflow = || MoneyError::Overflow(text.to_owned());
    let whole_yuan = whole.bytes().try_fold(0_i64, |acc, byte| {
        acc.checked_mul(10)?.checked_add(i64::from(byte - b'0'))
    });
    whole_yuan
        .and_then(|yuan| yuan.checked_mul(FEN_PER_YUAN))
        .and_then(|fen| fen.checked_add(fraction_fen))
        .ok_or_else(overflow)
}

/// Formats fen as yuan with exactly two decimals: 1250 is `"12.50"`, 1 is `"0.01"`.
/// Negative amounts are refused ([`MoneyError::Negative`]).
pub fn format_yuan(fen: i64) -> Result<String, MoneyError> {
    if fen < 0 {
        return Err(MoneyError::Negative(fen));
    }
    Ok(format!("{}.{:02}", fen / FEN_PER_YUAN, fen % FEN_PER_YUAN))
}

/// A non-negative amount of yuan, kept as integer fen. On the wire (Alipay's JSON
/// and forms) it is the decimal string `"12.50"`; in code it is [`Yuan::fen`].
///
/// Only strings deserialize: a JSON number would have to pass through a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Yuan(i64);

impl Yuan {
    /// Zero yuan.
    pub const ZERO: Yuan = Yuan(0);

    /// The amount of `fen` minor units; refuses a negative number.
    pub fn from_fen(fen: i64) -> Result<Self, MoneyError> {
        if fen < 0 {
            return Err(MoneyError::Negative(fen));
        }
        Ok(Self(fen))
    }

    /// The amount in fen (minor units).
    pub fn fen(self) -> i64 {
        self.0
    }
}

impl FromStr for Yuan {
    type Err = MoneyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_yuan(text).map(Self)
    }
}

impl fmt::Display for Yuan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Non-negative by construction, so this is plain arithmetic.
        write!(f, "{}.{:02}", self.0 / FEN_PER_YUAN, self.0 % FEN_PER_YUAN)
    }
}

impl Serialize for Yuan {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Yuan {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct YuanVisitor;

        impl serde::de::Visitor<'_> for YuanVisitor {
            type Value = Yuan;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a yuan amount as a string, like \"12.50\"")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Yuan, E> {
                text.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(YuanVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_forms_alipay_writes() {
        assert_eq!(parse_yuan("12.50"), Ok(1250));
        assert_eq!(parse_yuan("12.5"), Ok(1250));
        assert_eq!(parse_yuan("12"), Ok(1200));
        assert_eq!(parse_yuan("0.01"), Ok(1));
        assert_eq!(parse_yuan("0"), Ok(0));
        assert_eq!(parse_yuan("100000000.00"), Ok(10_000_000_000));
        assert_eq!(parse_yuan("007.00"), Ok(700));
    }

    #[test]
    fn refuses_everything_that_is_not_a_plain_decimal() {
        let cases: &[(&str, MoneyError)] = &[
            ("", MoneyError::Empty),
            ("-1.00", MoneyError::NotDecimal("-1.00".into())),
            ("+1.00", MoneyError::NotDecimal("+1.00".into())),
            ("1e2", MoneyError::NotDecimal("1e2".into())),
            ("1.5e1", MoneyError::NotDecimal("1.5e1".into())),
            (" 1.00", MoneyError::NotDecimal(" 1.00".into())),
            ("1.00 ", MoneyError::NotDecimal("1.00 ".into())),
            ("1 000", MoneyError::NotDecimal("1 000".into())),
            ("1,00", MoneyError::NotDecimal("1,00".into())),
            ("1.0.0", MoneyError::NotDecimal("1.0.0".into())),
            ("NaN", MoneyError::NotDecimal("NaN".into())),
            ("１２", MoneyError::NotDecimal("１２".into())),
            (".5", MoneyError::MissingWholePart(".5".into())),
            (".", MoneyError::MissingWholePart(".".into())),
            ("5.", MoneyError::MissingFraction("5.".into())),
            ("0.001", MoneyError::TooManyDecimals("0.001".into())),
            ("12.500", MoneyError::TooManyDecimals("12.500".into())),
            (
                "92233720368547758.08",
                MoneyError::Overflow("92233720368547758.08".into()),
            ),
            (
                "99999999999999999999",
                MoneyError::Overflow("99999999999999999999".into()),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_yuan(text).as_ref(), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn the_largest_amount_parses_and_one_fen_more_does_not() {
        assert_eq!(parse_yuan("92233720368547758.07"), Ok(i64::MAX));
        assert!(parse_yuan("92233720368547758.08").is_err());
        assert_eq!(format_yuan(i64::MAX).as_deref(), Ok("92233720368547758.07"));
    }

    #[test]
    fn formats_with_exactly_two_decimals() {
        assert_eq!(format_yuan(1250).as_deref(), Ok("12.50"));
        assert_eq!(format_yuan(1).as_deref(), Ok("0.01"));
        assert_eq!(format_yuan(0).as_deref(), Ok("0.00"));
        assert_eq!(format_yuan(100).as_deref(), Ok("1.00"));
        assert_eq!(format_yuan(-1), Err(MoneyError::Negative(-1)));
    }

    #[test]
    fn yuan_is_a_json_string_and_refuses_json_numbers() {
        let amount: Yuan = serde_json::from_str("\"88.88\"").expect("a string amount");
        assert_eq!(amount.fen(), 8888);
        assert_eq!(
            serde_json::to_string(&amount).expect("serializes"),
            "\"88.88\""
        );
        assert!(serde_json::from_str::<Yuan>("88.88").is_err());
        assert!(serde_json::from_str::<Yuan>("\"-1\"").is_err());
        assert_eq!(Yuan::from_fen(-5), Err(MoneyError::Negative(-5)));
    }

    proptest! {
        #[test]
        fn format_then_parse_gives_back_every_amount(fen in 0_i64..=i64::MAX) {
            let text = format_yuan(fen).expect("non-negative");
            prop_assert_eq!(parse_yuan(&text), Ok(fen));
            let yuan = Yuan::from_fen(fen).expect("non-negative");
            prop_assert_eq!(yuan.to_string(), text.clone());
            prop_assert_eq!(text.parse::<Yuan>(), Ok(yuan));
        }

        #[test]
        fn one_decimal_means_tenths(whole in 0_i64..1_000_000_000, tenth in 0_i64..10) {
            prop_assert_eq!(parse_yuan(&format!("{whole}.{tenth}")), Ok(whole * 100 + tenth * 10));
            prop_assert_eq!(parse_yuan(&format!("{whole}")), Ok(whole * 100));
        }

        #[test]
        fn never_accepts_text_with_a_foreign_character(
            prefix in "[0-9]{0,4}",
            bad in "[^0-9.]",
            suffix in "[0-9.]{0,4}",
        ) {
            let text = format!("{prefix}{bad}{suffix}");
            prop_assert!(parse_yuan(&text).is_err(), "{:?} was accepted", text);
        }
    }
}
