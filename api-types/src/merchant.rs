//! Merchants: their accounts and API keys (`/api/admin/merchants`, the
//! operator's), and what a merchant reads of its own orders and money
//! (`/api/merchant/*`, Bearer the merchant's key). Amounts are integer minor
//! units; timestamps RFC 3339.

use crate::api::{Order, Refund};
use crate::money::Currency;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// `POST /api/admin/merchants`: a merchant account.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateMerchant {
    /// What shoppers see ("Return to {name}"); 1 to 100 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 100))]
    pub name: String,
    /// The origins a return URL may lead to, e.g. `https://shop.example`:
    /// `https`, or `http` on a loopback host; no path, query or user.
    #[serde(default)]
    pub return_origins: Vec<String>,
}

/// `201` to `POST /api/admin/merchants`: the merchant and its first key,
/// shown this once (only a keyed hash of it is kept).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MerchantCreated {
    /// The merchant's id.
    pub merchant_id: Uuid,
    /// Its name.
    pub name: String,
    /// Its API key: `Authorization: Bearer <api_key>` on `/api/merchant/*`.
    pub api_key: String,
    /// The key's visible prefix (`mk_` and 8 characters), to tell keys apart.
    pub key_prefix: String,
}

/// The key never shows in a log line or a panic message.
impl std::fmt::Debug for MerchantCreated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MerchantCreated")
            .field("merchant_id", &self.merchant_id)
            .field("name", &self.name)
            .field("key_prefix", &self.key_prefix)
            .finish_non_exhaustive()
    }
}

/// `POST /api/admin/merchants/{merchant_id}/keys`: a new key; the keys in use
/// stay valid for `expire_old_after_secs` more seconds (rotation without downtime).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RotateKey {
    /// How long the keys in use keep working: 0 (refused at once) to 604800 (7 days).
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 604_800))]
    pub expire_old_after_secs: u32,
}

/// `201` to `POST /api/admin/merchants/{merchant_id}/keys`: the new key, shown this once.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyCreated {
    /// The merchant.
    pub merchant_id: Uuid,
    /// The new API key.
    pub api_key: String,
    /// Its visible prefix.
    pub key_prefix: String,
    /// When the keys in use before it stop working.
    #[serde(with = "time::serde::rfc3339")]
    pub old_keys_expire_at: OffsetDateTime,
}

/// The key never shows in a log line or a panic message.
impl std::fmt::Debug for KeyCreated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCreated")
            .field("merchant_id", &self.merchant_id)
            .field("key_prefix", &self.key_prefix)
            .field("old_keys_expire_at", &self.old_keys_expire_at)
            .finish_non_exhaustive()
    }
}

/// One merchant in `GET /api/admin/merchants`: never a key, only prefixes.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merchant {
    /// The merchant's id.
    pub merchant_id: Uuid,
    /// Its name.
    pub name: String,
    /// Where its return URLs may lead.
    pub return_origins: Vec<String>,
    /// When it was made.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Its keys, oldest first, revoked and expired ones included.
    pub keys: Vec<MerchantKey>,
}

/// What is known of a key: never the key.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MerchantKey {
    /// Its visible prefix: `mk_` and 8 characters (`env_` for `MERCHANT_API_KEY`).
    pub prefix: String,
    /// `admin` (made through this API) or `env` (`MERCHANT_API_KEY`).
    pub source: String,
    /// When it was made.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it stops (stopped) working after a rotation; null: no end.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// When it was revoked; null: not revoked.
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    /// When it was last used, at most a minute behind; null: never.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    /// Whether it authenticates now.
    pub active: bool,
}

/// An order as its merchant reads it: the shopper's view, the merchant's own
/// reference, and the refunds.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MerchantOrder {
    /// The order as the shopper sees it.
    #[serde(flatten)]
    pub order: Order,
    /// The merchant's own id for the order, if it gave one.
    pub merchant_reference: Option<String>,
    /// Its refunds, oldest first.
    pub refunds: Vec<Refund>,
}

/// `GET /api/merchant/orders`: a page of the merchant's orders, newest first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MerchantOrderList {
    /// Up to `limit` orders.
    pub data: Vec<MerchantOrder>,
    /// Whether older orders follow: ask again with `starting_after` the last one's `order_no`.
    pub has_more: bool,
}

/// `GET /api/merchant/balance`: what the checkout owes the merchant, per
/// currency, read from its account in the books.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MerchantBalance {
    /// One line per currency the merchant has sold in, by currency.
    pub balances: Vec<CurrencyBalance>,
}

/// The merchant's account in one currency.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrencyBalance {
    /// The currency.
    pub currency: Currency,
    /// Credits less debits: what the checkout owes the merchant.
    pub balance_cents: i64,
    /// Everything credited: charges of its orders (and balances moved in).
    pub credited_cents: i64,
    /// Everything debited: refunds of its orders.
    pub debited_cents: i64,
}

/// `GET /api/merchant/balance/entries`: a page of the entries of the
/// merchant's account, newest first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceEntries {
    /// Up to `limit` entries.
    pub data: Vec<BalanceEntry>,
    /// Whether older entries follow: ask again with `starting_after` the last one's `entry_id`.
    pub has_more: bool,
}

/// One posted entry of the merchant's account.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceEntry {
    /// The transfer's id, its idempotency key: `charge:<callback id>`,
    /// `refund:<refund no>`, `moved:...`.
    pub entry_id: String,
    /// `CHARGE`, `REFUND` or `MOVED`.
    pub kind: String,
    /// Signed, in minor units: positive credits the merchant, negative debits it.
    pub amount_cents: i64,
    /// The currency.
    pub currency: Currency,
    /// The order it is about (null for a balance moved in).
    pub order_no: Option<String>,
    /// The refund it is, for a `REFUND`.
    pub refund_no: Option<String>,
    /// When it was posted.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}
