//! The merchant order number (`out_trade_no`, 商户订单号).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A merchant order number as WeChat Pay accepts it: 6 to 32 characters, each an
/// ASCII letter, digit, `_`, `-`, `|` or `*` ("只能是数字、大小写字母_-|*").
/// Unique per merchant; WeChat Pay uses it as the idempotency key of a prepay.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OutTradeNo(String);

/// Why a text is not an [`OutTradeNo`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("out_trade_no must be 6 to 32 characters of A-Z a-z 0-9 _ - | *, got {0:?}")]
pub struct OutTradeNoError(pub String);

impl OutTradeNo {
    /// The fewest characters.
    pub const MIN_LEN: usize = 6;
    /// The most characters.
    pub const MAX_LEN: usize = 32;

    /// Checks the length and the character set.
    pub fn parse(text: &str) -> Result<Self, OutTradeNoError> {
        let allowed =
            |byte: u8| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'|' | b'*');
        if (Self::MIN_LEN..=Self::MAX_LEN).contains(&text.len()) && text.bytes().all(allowed) {
            Ok(Self(text.to_owned()))
        } else {
            Err(OutTradeNoError(text.to_owned()))
        }
    }

    /// The order number as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for OutTradeNo {
    type Err = OutTradeNoError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl TryFrom<String> for OutTradeNo {
    type Error = OutTradeNoError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(&text)
    }
}

impl From<OutTradeNo> for String {
    fn from(value: OutTradeNo) -> Self {
        value.0
    }
}

impl fmt::Display for OutTradeNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_six_to_thirty_two_allowed_characters() {
        for good in [
            "123456",
            "ORD_2024-0001|a*b",
            "abcdefghijklmnopqrstuvwxyz012345",
            "******",
        ] {
            assert_eq!(
                OutTradeNo::parse(good).map(|no| no.to_string()),
                Ok(good.to_owned())
            );
        }
    }

    #[test]
    fn refuses_wrong_lengths_and_characters() {
        for bad in [
            "",
            "12345",
            "abcdefghijklmnopqrstuvwxyz0123456",
            "order 1",
            "order/1",
            "order@12",
            "订单号123456",
            "order\n123",
            "order.123",
        ] {
            assert!(OutTradeNo::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn is_checked_when_deserialized() {
        assert!(serde_json::from_str::<OutTradeNo>("\"ORD-000001\"").is_ok());
        assert!(serde_json::from_str::<OutTradeNo>("\"short\"").is_err());
    }

    proptest! {
        #[test]
        fn every_valid_number_round_trips(text in "[A-Za-z0-9_|*-]{6,32}") {
            let parsed = OutTradeNo::parse(&text).expect("valid by construction");
            prop_assert_eq!(parsed.as_str(), text.as_str());
        }

        #[test]
        fn any_foreign_character_is_refused(
            head in "[A-Za-z0-9]{3,10}",
            bad in "[^A-Za-z0-9_|*-]",
            tail in "[A-Za-z0-9]{3,10}",
        ) {
            let text = format!("{head}{bad}{tail}");
            prop_assert!(OutTradeNo::parse(&text).is_err(), "{:?} was accepted", text);
        }
    }
}
