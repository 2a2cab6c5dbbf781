//! Order numbers: `ord_` and 28 lowercase hex digits (112 random bits), 32
//! characters in all, so an order number is also a valid WeChat Pay
//! `out_trade_no` (6 to 32 characters) and Alipay `out_trade_no` (at most 64).
//! Orders made before this shape carry 32 hex digits; they still parse.
//!
//! Every route that takes an order number parses it into an [`OrderNo`] before
//! anything else (the backend's `OrderNoPath` extractor), so a malformed one (a NUL byte, a megabyte of text, another
//! prefix) never reaches PostgreSQL or Redis. It is answered exactly like an
//! unknown one, `404 ORDER_NOT_FOUND`, so the answer says nothing about the shape.

use std::fmt;
use uuid::Uuid;

const PREFIX: &str = "ord_";
/// Digits of the numbers made now.
const HEX_DIGITS: usize = 28;
/// Digits of the numbers made before they had to fit WeChat Pay's 32 characters.
const LEGACY_HEX_DIGITS: usize = 32;

/// A well-formed order number (it may still name no order).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct OrderNo(String);

impl OrderNo {
    /// A new unguessable order number: 112 random bits (from the operating
    /// system's generator, as every v4 UUID).
    pub fn generate() -> Self {
        let random = Uuid::new_v4().simple().to_string();
        // A v4 UUID's 13th digit is its version (always 4): the 28 digits after it are random.
        Self(format!(
            "{PREFIX}{}",
            &random[LEGACY_HEX_DIGITS - HEX_DIGITS..]
        ))
    }

    /// Accepts exactly the shape [`OrderNo::generate`] produces, and the
    /// longer one it produced before.
    pub fn parse(text: &str) -> Option<Self> {
        let digits = text.strip_prefix(PREFIX)?;
        let well_formed = (digits.len() == HEX_DIGITS || digits.len() == LEGACY_HEX_DIGITS)
            && digits
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
        well_formed.then(|| Self(text.to_owned()))
    }

    /// The number as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OrderNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The bare number, so spans that record it read `order_no=ord_...`.
impl fmt::Debug for OrderNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::OrderNo;

    #[test]
    fn a_generated_order_number_parses() {
        let order_no = OrderNo::generate();

        assert_eq!(OrderNo::parse(order_no.as_str()).as_ref(), Some(&order_no));
        assert_eq!(
            order_no.as_str().len(),
            32,
            "fits WeChat Pay's out_trade_no"
        );
    }

    #[test]
    fn generated_order_numbers_differ() {
        let numbers: std::collections::HashSet<_> =
            (0..1_000).map(|_| OrderNo::generate()).collect();
        assert_eq!(numbers.len(), 1_000);
    }

    #[test]
    fn an_order_number_of_the_earlier_shape_still_parses() {
        assert!(OrderNo::parse("ord_0123456789abcdef0123456789abcdef").is_some());
    }

    #[test]
    fn anything_but_the_generated_shape_is_refused() {
        let good = "ord_0123456789abcdef0123456789ab";
        assert!(OrderNo::parse(good).is_some());
        for bad in [
            "",
            "ord_",
            "ord_\0",
            "ord_0123456789abcdef0123456789a",
            "ord_0123456789abcdef0123456789abc",
            "ord_0123456789abcdef0123456789abcde",
            "ord_0123456789abcdef0123456789abcdef0",
            "ord_0123456789ABCDEF0123456789ABCDEF",
            "ord_0123456789abcdef0123456789abcdeg",
            "ord_0123456789abcdef0123456789abcde\0",
            "ORD_0123456789abcdef0123456789abcdef",
            "xrd_0123456789abcdef0123456789abcdef",
            " ord_0123456789abcdef0123456789abcdef",
            "ord_01234567-89ab-cdef-0123-456789abcdef",
            "ord_0123456789abcdef0123456789abcdé",
        ] {
            assert_eq!(OrderNo::parse(bad), None, "{bad:?}");
        }
    }
}
