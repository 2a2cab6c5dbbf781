//! `merchants` and `merchant_keys`: who sells, and the keyed hashes of their
//! API keys (never a key: `crate::merchants` says how keys are made and hashed).

use crate::merchants::{KeyHasher, SHOP_MERCHANT_ID};
use api_types::merchant::{Merchant, MerchantKey};
use sqlx::{PgExecutor, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

/// Who a valid key belongs to: what a merchant route acts for.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The merchant.
    pub merchant_id: Uuid,
    /// Its name.
    pub name: String,
    /// The prefix of the key used (for the logs).
    pub key_prefix: String,
    /// Where its return URLs may lead.
    pub return_origins: Vec<String>,
}

/// The merchant whose key hashes to `hash`, if that key is neither revoked
/// nor expired; notes the key's use, at most once a minute per key (so
/// `last_used_at` is at most a minute behind).
#[tracing::instrument(name = "db.merchants.authenticate", skip_all)]
pub async fn authenticate(
    db: impl PgExecutor<'_>,
    hash: &[u8; 32],
) -> sqlx::Result<Option<Caller>> {
    sqlx::query_as!(
        Caller,
        r#"WITH valid AS (
               SELECT k.prefix, k.merchant_id, k.last_used_at FROM merchant_keys k
               WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
           ), touched AS (
               UPDATE merchant_keys k SET last_used_at = now()
               FROM valid v
               WHERE k.prefix = v.prefix
                 AND (v.last_used_at IS NULL OR v.last_used_at < now() - interval '1 minute')
           )
           SELECT m.merchant_id, m.name, v.prefix AS key_prefix, m.return_origins
           FROM valid v JOIN merchants m ON m.merchant_id = v.merchant_id"#,
        &hash[..],
    )
    .fetch_optional(db)
    .await
}

/// Makes the merchant `merchant_id` unless it exists (a merchant this
/// backend makes itself, such as the demo's partner shop; no key).
#[tracing::instrument(name = "db.merchants.ensure", skip(db))]
pub async fn ensure(
    db: impl PgExecutor<'_>,
    merchant_id: Uuid,
    name: &str,
    return_origins: &[String],
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO merchants (merchant_id, name, return_origins) VALUES ($1, $2, $3)
         ON CONFLICT (merchant_id) DO NOTHING",
        merchant_id,
        name,
        return_origins,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Makes a merchant with its first key, in one transaction.
#[tracing::instrument(name = "db.merchants.create", skip(db, key_hash))]
pub async fn create(
    db: &PgPool,
    merchant_id: Uuid,
    name: &str,
    return_origins: &[String],
    key_prefix: &str,
    key_hash: &[u8; 32],
) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query!(
        "INSERT INTO merchants (merchant_id, name, return_origins) VALUES ($1, $2, $3)",
        merchant_id,
        name,
        return_origins,
    )
    .execute(&mut *tx)
    .await?;
    insert_key(&mut *tx, merchant_id, key_prefix, key_hash, "admin").await?;
    tx.commit().await
}

async fn insert_key(
    db: impl PgExecutor<'_>,
    merchant_id: Uuid,
    prefix: &str,
    hash: &[u8; 32],
    source: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO merchant_keys (prefix, merchant_id, key_hash, source) VALUES ($1, $2, $3, $4)",
        prefix,
        merchant_id,
        &hash[..],
        source,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// A new key for `merchant_id`; every key of it still working stops at
/// `old_expire_at` (or keeps an earlier end). `false`: no such merchant.
#[tracing::instrument(name = "db.merchants.rotate", skip(db, key_hash))]
pub async fn rotate(
    db: &PgPool,
    merchant_id: Uuid,
    key_prefix: &str,
    key_hash: &[u8; 32],
    old_expire_at: OffsetDateTime,
) -> sqlx::Result<bool> {
    let mut tx = db.begin().await?;
    // Two rotations of one merchant run one after the other (an advisory lock:
    // the serving role may not lock the merchant's row, which it may not update).
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('merchant keys ' || $1::uuid::text, 0))",
        merchant_id
    )
    .execute(&mut *tx)
    .await?;
    let exists = sqlx::query_scalar!(
        "SELECT merchant_id FROM merchants WHERE merchant_id = $1",
        merchant_id
    )
    .fetch_optional(&mut *tx)
    .await?
    .is_some();
    if !exists {
        return Ok(false);
    }
    sqlx::query!(
        "UPDATE merchant_keys SET expires_at = least(coalesce(expires_at, $2), $2)
         WHERE merchant_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())",
        merchant_id,
        old_expire_at,
    )
    .execute(&mut *tx)
    .await?;
    insert_key(&mut *tx, merchant_id, key_prefix, key_hash, "admin").await?;
    tx.commit().await?;
    Ok(true)
}

/// Revokes the key `prefix` of `merchant_id` at once. `false`: no such key of
/// that merchant (revoking a revoked key again changes nothing and is `true`).
#[tracing::instrument(name = "db.merchants.revoke", skip(db))]
pub async fn revoke(
    db: impl PgExecutor<'_>,
    merchant_id: Uuid,
    prefix: &str,
) -> sqlx::Result<bool> {
    let found = sqlx::query_scalar!(
        r#"WITH revoked AS (
               UPDATE merchant_keys SET revoked_at = now()
               WHERE merchant_id = $1 AND prefix = $2 AND revoked_at IS NULL
               RETURNING prefix
           )
           SELECT EXISTS (SELECT FROM merchant_keys WHERE merchant_id = $1 AND prefix = $2) AS "found!""#,
        merchant_id,
        prefix,
    )
    .fetch_one(db)
    .await?;
    Ok(found)
}

/// Every merchant with its keys (prefixes and dates, never a key), oldest first.
#[tracing::instrument(name = "db.merchants.list", skip(db))]
pub async fn list(db: &PgPool) -> sqlx::Result<Vec<Merchant>> {
    let merchants = sqlx::query!(
        "SELECT merchant_id, name, return_origins, created_at FROM merchants ORDER BY created_at, merchant_id"
    )
    .fetch_all(db)
    .await?;
    let keys = sqlx::query!(
        r#"SELECT merchant_id, prefix, source, created_at, expires_at, revoked_at, last_used_at,
                  (revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())) AS "active!"
           FROM merchant_keys ORDER BY created_at, prefix"#
    )
    .fetch_all(db)
    .await?;
    Ok(merchants
        .into_iter()
        .map(|m| Merchant {
            keys: keys
                .iter()
                .filter(|k| k.merchant_id == m.merchant_id)
                .map(|k| MerchantKey {
                    prefix: k.prefix.clone(),
                    source: k.source.clone(),
                    created_at: k.created_at,
                    expires_at: k.expires_at,
                    revoked_at: k.revoked_at,
                    last_used_at: k.last_used_at,
                    active: k.active,
                })
                .collect(),
            merchant_id: m.merchant_id,
            name: m.name,
            return_origins: m.return_origins,
            created_at: m.created_at,
        })
        .collect())
}

/// Registers `MERCHANT_API_KEY`'s hash as a key of the shop (once: a key
/// revoked through the API stays revoked), and revokes every other key that
/// came from the environment: a changed or removed `MERCHANT_API_KEY` stops
/// working at the next start.
#[tracing::instrument(name = "db.merchants.register_env_key", skip_all)]
pub async fn register_env_key(db: &PgPool, hash: Option<[u8; 32]>) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query!(
        "UPDATE merchant_keys SET revoked_at = now()
         WHERE source = 'env' AND revoked_at IS NULL AND key_hash IS DISTINCT FROM $1",
        hash.as_ref().map(|hash| &hash[..]),
    )
    .execute(&mut *tx)
    .await?;
    if let Some(hash) = hash {
        sqlx::query!(
            "INSERT INTO merchant_keys (prefix, merchant_id, key_hash, source) VALUES ($1, $2, $3, 'env')
             ON CONFLICT DO NOTHING",
            KeyHasher::env_prefix(&hash),
            SHOP_MERCHANT_ID,
            &hash[..],
        )
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}
