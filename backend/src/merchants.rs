//! Merchants' API keys: made here, shown once, kept only as a keyed hash.
//!
//! A key is `mk_<8 characters>_<43 characters>`: the first part is its
//! visible prefix (for people to tell keys apart: the console and
//! `GET /api/admin/merchants` show it), the rest 256 random bits. The
//! database keeps HMAC-SHA256 of the whole key under `MERCHANT_KEY_SECRET`
//! (docs/SECURITY.md, "Merchant API keys"): a key with 256 bits of entropy
//! needs no slow password hash (no guess can succeed however fast it is
//! tried), and the keyed hash means a copy of the database alone cannot even
//! test a guess. A request's key is looked up by its hash, so no stored value
//! is compared with what the caller sent.
//!
//! `MERCHANT_API_KEY`, when set, is registered at start as a key of the shop
//! itself (the merchant every order made before merchants existed belongs
//! to), with prefix `env_` and 8 hex digits of its hash: a deployment with one
//! merchant keeps working unchanged.

use hmac::{Hmac, Mac};
use rand::Rng;
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;
use uuid::Uuid;

/// The shop itself: it owns the orders shoppers place from the catalogue and
/// every order made before merchants existed (migration `20261209000001`).
pub const SHOP_MERCHANT_ID: Uuid = Uuid::from_u128(1);

/// The HMAC key used when `MERCHANT_KEY_SECRET` is unset: the keys are still
/// 256-bit random values, so their hashes cannot be reversed; only the
/// protection against a stolen database testing guesses is lost.
const UNSET_SECRET: &[u8] = b"checkout merchant api key v1";

/// Characters of a key's visible prefix after `mk_`.
const PREFIX_CHARS: usize = 8;

/// Hashes presented and new keys under the server's secret.
#[derive(Clone)]
pub struct KeyHasher {
    secret: Option<SecretString>,
}

/// The secret never shows in a log line.
impl std::fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyHasher")
            .field("secret_set", &self.secret.is_some())
            .finish()
    }
}

/// A key just made: shown once, then only its prefix and hash remain.
pub struct NewKey {
    /// The whole key, for the one answer that shows it.
    pub key: SecretString,
    /// Its visible prefix, `mk_` and 8 characters.
    pub prefix: String,
    /// Its keyed hash, what the database keeps.
    pub hash: [u8; 32],
}

impl KeyHasher {
    /// Hashes under `secret` (`MERCHANT_KEY_SECRET`), or under a fixed key when unset.
    pub fn new(secret: Option<SecretString>) -> Self {
        Self { secret }
    }

    /// HMAC-SHA256 of `key`.
    pub fn hash(&self, key: &str) -> [u8; 32] {
        let secret = self
            .secret
            .as_ref()
            .map_or(UNSET_SECRET, |secret| secret.expose_secret().as_bytes());
        let mut mac =
            Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
        mac.update(key.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// A new random key with its prefix and hash.
    pub fn generate(&self) -> NewKey {
        const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let mut rng = rand::rng();
        let visible: String = (0..PREFIX_CHARS)
            .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
            .collect();
        let secret: [u8; 32] = rng.random();
        let prefix = format!("mk_{visible}");
        let key = format!(
            "{prefix}_{}",
            base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, secret)
        );
        let hash = self.hash(&key);
        NewKey {
            key: SecretString::from(key),
            prefix,
            hash,
        }
    }

    /// The prefix `MERCHANT_API_KEY` is listed under: `env_` and the first 8
    /// hex digits of its hash (never a part of the key itself).
    pub fn env_prefix(hash: &[u8; 32]) -> String {
        format!("env_{}", &hex::encode(hash)[..PREFIX_CHARS])
    }
}

/// The idempotency scope of a merchant's orders and refunds: each merchant
/// has its own key space. The shop keeps `merchant`, the scope of the one
/// merchant before there were several, so a key it used then still replays.
pub fn idempotency_scope(merchant_id: Uuid) -> String {
    if merchant_id == SHOP_MERCHANT_ID {
        "merchant".to_owned()
    } else {
        format!("merchant:{merchant_id}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_its_prefix_and_256_random_bits_and_hashes_the_same_each_time() {
        let hasher = KeyHasher::new(Some(SecretString::from("s".repeat(32))));
        let new = hasher.generate();
        let key = new.key.expose_secret();
        assert!(
            key.starts_with(&format!("{}_", new.prefix)),
            "{}",
            new.prefix
        );
        assert_eq!(new.prefix.len(), 3 + PREFIX_CHARS);
        assert_eq!(key.len(), 3 + PREFIX_CHARS + 1 + 43);
        assert_eq!(hasher.hash(key), new.hash);
        assert_ne!(hasher.generate().hash, new.hash);
        // Another secret, another hash: a database copied without the secret tests nothing.
        assert_ne!(KeyHasher::new(None).hash(key), new.hash);
    }

    #[test]
    fn neither_the_secret_nor_a_key_shows_in_debug() {
        let hasher = KeyHasher::new(Some(SecretString::from("top-secret-value".repeat(2))));
        let new = hasher.generate();
        let shown = format!("{hasher:?} {:?}", new.key);
        assert!(!shown.contains("top-secret-value"), "{shown}");
        assert!(!shown.contains(new.key.expose_secret()), "{shown}");
    }

    #[test]
    fn each_merchant_has_its_own_idempotency_scope() {
        assert_eq!(idempotency_scope(SHOP_MERCHANT_ID), "merchant");
        let other = Uuid::from_u128(7);
        assert_eq!(idempotency_scope(other), format!("merchant:{other}"));
    }
}
