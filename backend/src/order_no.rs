//! Order numbers: `ord_` and the 32 lowercase hex digits of a v4 UUID.
//!
//! Every route that takes an order number parses it into an [`OrderNo`] before
//! anything else, so a malformed one (a NUL byte, a megabyte of text, another
//! prefix) never reaches PostgreSQL or Redis. It is answered exactly like an
//! unknown one, `404 ORDER_NOT_FOUND`, so the answer says nothing about the shape.

use std::fmt;
use uuid::Uuid;

const PREFIX: &str = "ord_";
const HEX_DIGITS: usize = 32;

/// A well-formed order number (it may still name no order).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct OrderNo(String);

impl OrderNo {
    /// A new unguessable order number: 122 random bits.
    pub fn generate() -> Self {
        Self(format!("{PREFIX}{}", Uuid::new_v4().simple()))
    }

    /// Accepts exactly the shape [`OrderNo::generate`] produces.
    pub fn parse(text: &str) -> Option<Self> {
        let digits = text.strip_prefix(PREFIX)?;
        let well_formed = digits.len() == HEX_DIGITS
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
        assert_eq!(order_no.as_str().len(), 36);
    }

    #[test]
    fn anything_but_the_generated_shape_is_refused() {
        let good = "ord_0123456789abcdef0123456789abcdef";
        assert!(OrderNo::parse(good).is_some());
        for bad in [
            "",
            "ord_",
            "ord_\0",
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
