//! Money is an integer count of minor units (cents) with an ISO 4217 currency. Never floats.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// An ISO 4217 currency code: exactly three ASCII capital letters, checked when parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Currency([u8; 3]);

/// The text is not a three-letter capital currency code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("currency must be three capital letters (ISO 4217), got {0:?}")]
pub struct CurrencyError(pub String);

impl Currency {
    /// The euro, the demo shop's currency: a constant so no code has to parse it.
    pub const EUR: Currency = Currency(*b"EUR");

    /// The Chinese yuan (renminbi): the currency WeChat Pay and Alipay settle domestic
    /// payments in, a constant so their wire types need not parse it.
    pub const CNY: Currency = Currency(*b"CNY");

    /// The code as text, e.g. `"EUR"`.
    pub fn as_str(&self) -> &str {
        // Only ASCII capitals are ever stored, so this cannot fail.
        std::str::from_utf8(&self.0).unwrap_or("???")
    }

    /// How many decimal places the currency's minor unit has (2 for EUR, 0 for JPY).
    pub fn exponent(&self) -> u32 {
        match self.as_str() {
            "BIF" | "CLP" | "DJF" | "GNF" | "ISK" | "JPY" | "KMF" | "KRW" | "PYG" | "RWF"
            | "UGX" | "UYI" | "VND" | "VUV" | "XAF" | "XOF" | "XPF" => 0,
            "BHD" | "IQD" | "JOD" | "KWD" | "LYD" | "OMR" | "TND" => 3,
            _ => 2,
        }
    }
}

impl FromStr for Currency {
    type Err = CurrencyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.as_bytes() {
            [a, b, c] if [a, b, c].iter().all(|byte| byte.is_ascii_uppercase()) => {
                Ok(Self([*a, *b, *c]))
            }
            _ => Err(CurrencyError(s.to_owned())),
        }
    }
}

impl TryFrom<String> for Currency {
    type Error = CurrencyError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Currency> for String {
    fn from(value: Currency) -> Self {
        value.as_str().to_owned()
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Formats an amount in minor units for people: `format_minor(123456, EUR)` is `"1,234.56 EUR"`.
pub fn format_minor(amount_minor: i64, currency: Currency) -> String {
    let exponent = currency.exponent();
    let divisor = 10_u64.pow(exponent);
    let magnitude = amount_minor.unsigned_abs();
    let whole = group_thousands(magnitude / divisor);
    let sign = if amount_minor < 0 { "-" } else { "" };
    if exponent == 0 {
        format!("{sign}{whole} {currency}")
    } else {
        let fraction = magnitude % divisor;
        format!(
            "{sign}{whole}.{fraction:0width$} {currency}",
            width = exponent as usize
        )
    }
}

fn group_thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Currency {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some("^[A-Z]{3}$"))
            .description(Some("ISO 4217 currency code, three capital letters"))
            .examples(["EUR"])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Currency {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn eur() -> Currency {
        "EUR".parse().expect("valid")
    }

    #[test]
    fn formats_minor_units_with_the_currency_exponent() {
        assert_eq!(format_minor(123_456, eur()), "1,234.56 EUR");
        assert_eq!(format_minor(5, eur()), "0.05 EUR");
        assert_eq!(format_minor(-1_000, eur()), "-10.00 EUR");
        assert_eq!(
            format_minor(1_500, "JPY".parse().expect("valid")),
            "1,500 JPY"
        );
        assert_eq!(
            format_minor(1_234, "KWD".parse().expect("valid")),
            "1.234 KWD"
        );
    }

    #[test]
    fn currency_rejects_anything_but_three_capitals() {
        for bad in ["", "eu", "eur", "EURO", "E1R", "€UR"] {
            assert!(bad.parse::<Currency>().is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn currency_is_a_json_string() {
        let parsed: Currency = serde_json::from_str("\"USD\"").expect("valid");
        assert_eq!(parsed.as_str(), "USD");
        assert!(serde_json::from_str::<Currency>("\"usd\"").is_err());
    }

    proptest! {
        #[test]
        fn formatting_keeps_every_digit(amount in any::<i64>()) {
            let text = format_minor(amount, eur());
            let digits: String = text.chars().filter(|c| c.is_ascii_digit()).collect();
            let expected = amount.unsigned_abs().to_string();
            // Leading zeros only appear for amounts under one major unit.
            prop_assert_eq!(digits.trim_start_matches('0'), expected.trim_start_matches('0'));
            prop_assert_eq!(text.starts_with('-'), amount < 0);
        }
    }
}
