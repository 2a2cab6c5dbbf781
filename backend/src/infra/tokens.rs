//! The request-token store, in Redis: a fast helper, never the guarantee.
//!
//! A token is issued with `SET key value EX ttl NX` and consumed with a guarded
//! `GETDEL`: one Lua script that takes the binding only if it names the order
//! being paid. Of any number of concurrent submits for that order exactly one
//! gets the binding back; a submit for another order leaves the token, and its
//! TTL, untouched, so the shopper's own submit still works.
//!
//! Taking a token leaves an *in-flight marker* in its place (the binding
//! behind `inflight:`, for [`IN_FLIGHT_TTL`]): between the take and the
//! commit of the attempt there is no row to replay yet, and a concurrent
//! submit of the same token (a page re-sending after a network drop) must not
//! be told the token is invalid while the first one is charging. It sees
//! [`Consumed::InFlight`] and waits for the attempt (`routes::pay`). The
//! winner leaves the marker to expire once the attempt is committed, puts the
//! token back on a failure of ours ([`TokenStore::restore`]), and removes it
//! when the order refused the payment ([`TokenStore::release`]).
//!
//! If Redis loses the key (flush, restart, failover) a later submit merely fails
//! with `TOKEN_INVALID` or is replayed from `payment_attempts`: the database's
//! unique constraints, not Redis, keep a token from paying twice.
//!
//! A token is a bearer capability (whoever holds it can pay), so no log line or
//! span carries one: they carry its [`TokenFingerprint`] instead.
//!
//! Commands reach Redis through [`Redis`]: one node, or the primary Redis
//! Sentinel names.

use crate::infra::redis::{Redis, RedisTarget};
use api_types::Currency;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::time::Duration;
use time::OffsetDateTime;
use uuid::Uuid;

/// What logs say instead of a request token: the first 8 hex digits of the
/// SHA-256 of its hyphenated text (`printf %s <token> | sha256sum | cut -c1-8`).
/// Enough to follow one token through the lines of one incident; useless for paying.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenFingerprint([u8; 4]);

impl TokenFingerprint {
    /// The fingerprint of `token`.
    pub fn of(token: Uuid) -> Self {
        let digest = Sha256::digest(token.as_hyphenated().to_string().as_bytes());
        Self([digest[0], digest[1], digest[2], digest[3]])
    }
}

impl fmt::Display for TokenFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for TokenFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What a token is bound to: it pays this order, for this amount, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBinding {
    /// The order the token was issued for.
    pub order_no: String,
    /// The shopper it was issued to (nil for a token issued before shoppers
    /// existed, which no shopper can use).
    #[serde(default)]
    pub shopper_id: Uuid,
    /// The order's amount when the token was issued.
    pub amount_cents: i64,
    /// The order's currency.
    pub currency: Currency,
}

/// How long the in-flight marker of a taken token lives: longer than a pay's
/// transaction can take (its connection wait is bounded at 10 s), so that a
/// concurrent submit of the same token waits for the attempt instead of being
/// told the token is invalid. When the process that took the token dies before
/// its commit, the token answers `PAY_IN_PROGRESS` for this long and then
/// `TOKEN_INVALID`, and the page takes a fresh one.
pub const IN_FLIGHT_TTL: Duration = Duration::from_secs(30);

/// `GETDEL`, guarded by the order and the shopper, that leaves an in-flight
/// marker: `KEYS[1]` the token's key, `ARGV[1]` the order being paid, `ARGV[2]`
/// the shopper paying, `ARGV[3]` the marker's lifetime in milliseconds. Returns
/// nil when there is no such key; `{0, binding}` when it is bound to another
/// order or shopper (left as it was); `{1, binding}` when it was bound to that
/// order and shopper and is now taken (replaced by the marker); `{2, binding}`
/// when it was taken before and its marker is still there. A script runs
/// atomically, so the comparison and the take cannot interleave with another
/// submit. The binding is never re-encoded (Lua's cjson would round large amounts).
const CONSUME_SCRIPT: &str = r"
local value = redis.call('GET', KEYS[1])
if not value then
    return false
end
local taken_before = string.sub(value, 1, 9) == 'inflight:'
local text = value
if taken_before then
    text = string.sub(value, 10)
end
local binding = cjson.decode(text)
if binding['order_no'] ~= ARGV[1] or binding['shopper_id'] ~= ARGV[2] then
    return {0, text}
end
if taken_before then
    return {2, text}
end
redis.call('SET', KEYS[1], 'inflight:' .. text, 'PX', ARGV[3])
return {1, text}
";

/// Removes a token's in-flight marker, and only that: `KEYS[1]` the token's key.
const RELEASE_SCRIPT: &str = r"
local value = redis.call('GET', KEYS[1])
if value and string.sub(value, 1, 9) == 'inflight:' then
    redis.call('DEL', KEYS[1])
end
return 1
";

/// What [`TokenStore::consume`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consumed {
    /// The token was bound to the order and is now used up: this caller is its one winner.
    Taken(TokenBinding),
    /// The token is bound to another order or another shopper; it was left in
    /// the store, still usable by its owner.
    OtherOrder(TokenBinding),
    /// The token was bound to this order and shopper and another submit took
    /// it; that submit's attempt may not be committed yet.
    InFlight(TokenBinding),
    /// No such token: unknown, expired, already used, or lost by Redis.
    Missing,
}

/// Issues and consumes one-time request tokens.
#[derive(Clone)]
pub struct TokenStore {
    conn: Redis,
    prefix: String,
    ttl: Duration,
}

impl TokenStore {
    /// Prepares the store without connecting: the backend starts even while
    /// Redis (or every sentinel) is down.
    pub fn new(target: &RedisTarget, prefix: &str, ttl: Duration) -> redis::RedisResult<Self> {
        Ok(Self {
            conn: Redis::new(target)?,
            prefix: prefix.to_owned(),
            ttl,
        })
    }

    fn key(&self, token: Uuid) -> String {
        format!("{}token:{}", self.prefix, token.as_hyphenated())
    }

    /// Stores a new random token bound to `binding`; returns it with its expiry time.
    #[tracing::instrument(name = "tokens.issue", skip(self), fields(order_no = %binding.order_no))]
    pub async fn issue(
        &self,
        binding: &TokenBinding,
    ) -> redis::RedisResult<(Uuid, OffsetDateTime)> {
        let token = Uuid::new_v4();
        if !self.set_if_absent(token, binding).await? {
            // A v4 collision inside the TTL is not expected in practice; refuse rather than overwrite.
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "request token already exists",
            )));
        }
        let ttl = time::Duration::seconds(i64::try_from(self.ttl_secs()).unwrap_or(i64::MAX));
        Ok((token, OffsetDateTime::now_utc() + ttl))
    }

    /// Takes the token out of the store if it is bound to `order_no` and
    /// `shopper_id`, in one atomic script: [`Consumed::Taken`] for exactly one caller.
    #[tracing::instrument(name = "tokens.consume", skip(self, token), fields(token_fp = %TokenFingerprint::of(token)))]
    pub async fn consume(
        &self,
        token: Uuid,
        order_no: &str,
        shopper_id: Uuid,
    ) -> redis::RedisResult<Consumed> {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(CONSUME_SCRIPT)
            .arg(1)
            .arg(self.key(token))
            .arg(order_no)
            .arg(shopper_id.as_hyphenated().to_string())
            .arg(u64::try_from(IN_FLIGHT_TTL.as_millis()).unwrap_or(u64::MAX));
        let raw: Option<(i64, String)> = self.run(&cmd).await?;
        let Some((found, text)) = raw else {
            return Ok(Consumed::Missing);
        };
        let binding: TokenBinding = serde_json::from_str(&text).map_err(json_error)?;
        Ok(match found {
            1 => Consumed::Taken(binding),
            2 => Consumed::InFlight(binding),
            _ => Consumed::OtherOrder(binding),
        })
    }

    /// Puts a taken token back in place of its in-flight marker after a
    /// failure on our side, so the shopper's retry with the same token (and a
    /// concurrent submit waiting on the marker) is not refused for our fault.
    #[tracing::instrument(name = "tokens.restore", skip(self, token, binding), fields(token_fp = %TokenFingerprint::of(token)))]
    pub async fn restore(&self, token: Uuid, binding: &TokenBinding) -> redis::RedisResult<()> {
        // Unconditional: only the submit that took the token writes its key again.
        let value = serde_json::to_string(binding).map_err(json_error)?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(token))
            .arg(value)
            .arg("EX")
            .arg(self.ttl_secs());
        let _: Option<String> = self.run(&cmd).await?;
        Ok(())
    }

    /// Removes a taken token's in-flight marker when the order refused the
    /// payment (no attempt will be committed): a concurrent submit of the
    /// token stops waiting and is answered at once.
    #[tracing::instrument(name = "tokens.release", skip(self, token), fields(token_fp = %TokenFingerprint::of(token)))]
    pub async fn release(&self, token: Uuid) -> redis::RedisResult<()> {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(RELEASE_SCRIPT).arg(1).arg(self.key(token));
        let _: i64 = self.run(&cmd).await?;
        Ok(())
    }

    fn ttl_secs(&self) -> u64 {
        self.ttl.as_secs().max(1)
    }

    /// `SET key binding EX ttl NX`: true when stored, false when the key existed.
    async fn set_if_absent(&self, token: Uuid, binding: &TokenBinding) -> redis::RedisResult<bool> {
        let value = serde_json::to_string(binding).map_err(json_error)?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(token))
            .arg(value)
            .arg("EX")
            .arg(self.ttl_secs())
            .arg("NX");
        let stored: Option<String> = self.run(&cmd).await?;
        Ok(stored.is_some())
    }

    /// `PING`, for the health check.
    pub async fn ping(&self) -> redis::RedisResult<()> {
        let _: String = self.run(&redis::cmd("PING")).await?;
        Ok(())
    }

    async fn run<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        self.conn.run(cmd).await
    }
}

fn json_error(err: serde_json::Error) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Parse,
        "request token value is not valid JSON",
        err.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::TokenFingerprint;
    use uuid::Uuid;

    #[test]
    fn a_fingerprint_is_the_first_8_hex_digits_of_the_sha256_of_the_hyphenated_token() {
        let token: Uuid = "6f1c1a9e-3b0e-4d5c-9a52-1f2e3d4c5b6a"
            .parse()
            .expect("a uuid");

        // printf %s 6f1c1a9e-3b0e-4d5c-9a52-1f2e3d4c5b6a | sha256sum | cut -c1-8
        assert_eq!(TokenFingerprint::of(token).to_string(), "5033b4c2");
        assert_eq!(format!("{:?}", TokenFingerprint::of(token)), "5033b4c2");
    }
}
