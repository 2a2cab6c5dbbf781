//! Which `Idempotency-Key` a press of "Buy" sends, free of any browser code.
//!
//! Every press of a "Buy" button is one order the shopper wants, so it gets a
//! new random key. A request that got no answer (no connection, our timeout,
//! a proxy's 502/504) may or may not have placed the order, so:
//!
//! - the shop re-sends it with the *same* key on [`BUY_RETRY_DELAYS_MS`], and
//!   the backend answers a repeat with the order it placed the first time;
//! - when it still got no answer, the next press of the same button repeats
//!   that press ([`BuyKeys::key_for_press`] hands back the same key), so the
//!   shopper who presses again after a network error gets one order, not two.
//!
//! Any answer from the backend (an order, or an error such as an unknown
//! product) settles the press: the next press is a new one with a new key.

use crate::api::ApiError;
use api_types::api::CreateOrder;
use uuid::Uuid;

/// Waits before each automatic re-send of an order request that got no answer.
pub const BUY_RETRY_DELAYS_MS: [u32; 3] = [250, 500, 1_000];

/// The delay before automatic re-send number `retry` (1-based), or `None`
/// when the shop should stop and tell the shopper.
pub fn buy_retry_delay(retry: u32) -> Option<u32> {
    let index = usize::try_from(retry.checked_sub(1)?).ok()?;
    BUY_RETRY_DELAYS_MS.get(index).copied()
}

/// The press of "Buy" that got no answer, if any, with the key it was sent with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuyKeys {
    unanswered: Option<(CreateOrder, Uuid)>,
}

impl BuyKeys {
    /// The key a press of "Buy" for `order` sends: the unanswered press's key
    /// when this press repeats it (same product, same quantity), else `fresh`.
    pub fn key_for_press(&self, order: &CreateOrder, fresh: Uuid) -> Uuid {
        match &self.unanswered {
            Some((unanswered, key)) if unanswered == order => *key,
            _ => fresh,
        }
    }

    /// Records how the press that sent `order` with `key` ended: kept for a
    /// repeat when no answer arrived, forgotten when the backend answered.
    pub fn record<T>(&mut self, order: &CreateOrder, key: Uuid, outcome: &Result<T, ApiError>) {
        self.unanswered = match outcome {
            Err(err) if err.is_transport_failure() => Some((order.clone(), key)),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::{ErrorBody, ErrorCode};
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn buy(sku: &str) -> CreateOrder {
        CreateOrder {
            sku: sku.into(),
            quantity: 1,
        }
    }

    fn key(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn every_press_gets_a_new_key() {
        let mut keys = BuyKeys::default();
        assert_eq!(keys.key_for_press(&buy("mug"), key(1)), key(1));
        keys.record(&buy("mug"), key(1), &Ok(()));
        assert_eq!(keys.key_for_press(&buy("mug"), key(2)), key(2));
    }

    #[test]
    fn a_press_that_got_no_answer_is_repeated_with_its_key() {
        let mut keys = BuyKeys::default();
        for lost in [
            ApiError::Network("offline".into()),
            ApiError::Http { status: 502 },
            ApiError::Http { status: 504 },
        ] {
            keys.record::<()>(&buy("mug"), key(1), &Err(lost.clone()));
            assert_eq!(keys.key_for_press(&buy("mug"), key(2)), key(1), "{lost:?}");
        }
        // Another product, or another quantity, is another order.
        assert_eq!(keys.key_for_press(&buy("teapot"), key(3)), key(3));
        let two_mugs = CreateOrder {
            quantity: 2,
            ..buy("mug")
        };
        assert_eq!(keys.key_for_press(&two_mugs, key(4)), key(4));
        // Once the repeat is answered, the next press is new.
        keys.record(&buy("mug"), key(1), &Ok(()));
        assert_eq!(keys.key_for_press(&buy("mug"), key(5)), key(5));
    }

    #[test]
    fn an_answer_from_the_backend_settles_the_press() {
        let mut keys = BuyKeys::default();
        keys.record::<()>(&buy("mug"), key(1), &Err(ApiError::Network("x".into())));
        let refused = ApiError::Server {
            status: 404,
            body: ErrorBody::new(ErrorCode::ProductNotFound, "no such product"),
            retry_after_secs: None,
        };
        keys.record::<()>(&buy("mug"), key(1), &Err(refused));
        assert_eq!(keys.key_for_press(&buy("mug"), key(2)), key(2));
    }

    #[test]
    fn re_sends_back_off_then_stop() {
        assert_eq!(buy_retry_delay(0), None);
        assert_eq!(buy_retry_delay(1), Some(250));
        assert_eq!(buy_retry_delay(3), Some(1_000));
        assert_eq!(buy_retry_delay(4), None);
    }
}
