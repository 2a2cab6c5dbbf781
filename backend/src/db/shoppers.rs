//! `shoppers`: people who sign in and pay, each with one account per currency.

use api_types::Currency;
use api_types::api::Account;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// Longest email a shopper can have (`shoppers_email_shape` in the schema).
pub const MAX_EMAIL_LEN: usize = 254;

/// Index that keeps emails unique whatever their case.
pub const EMAIL_UNIQUE: &str = "shoppers_email_key";

/// What sign-in needs of a shopper.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The shopper.
    pub shopper_id: Uuid,
    /// Their email as stored.
    pub email: String,
    /// argon2id PHC string.
    pub password_hash: String,
    /// A demo shopper (usable only in demo mode).
    pub demo: bool,
}

/// A shopper to create.
#[derive(Debug, Clone, Copy)]
pub struct NewShopper<'a> {
    /// Sign-in email.
    pub email: &'a str,
    /// argon2id PHC string.
    pub password_hash: &'a str,
    /// Made by demo mode.
    pub demo: bool,
    /// Opening balance of their account.
    pub balance_cents: i64,
    /// Their account's currency.
    pub currency: Currency,
}

/// Creates a shopper and their account, in the caller's transaction; returns
/// (shopper id, account id).
#[tracing::instrument(name = "db.shoppers.insert", skip(conn, new), fields(email = new.email))]
pub async fn insert_with_account(
    conn: &mut PgConnection,
    new: NewShopper<'_>,
) -> sqlx::Result<(Uuid, Uuid)> {
    let NewShopper {
        email,
        password_hash,
        demo,
        balance_cents,
        currency,
    } = new;
    let shopper_id = Uuid::new_v4();
    let account_id = Uuid::new_v4();
    sqlx::query!(
        "INSERT INTO shoppers (shopper_id, email, password_hash, demo) VALUES ($1, $2, $3, $4)",
        shopper_id,
        email,
        password_hash,
        demo,
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "INSERT INTO accounts (account_id, shopper_id, balance_cents, opening_balance_cents, currency)
         VALUES ($1, $2, $3, $3, $4)",
        account_id,
        shopper_id,
        balance_cents,
        currency.as_str(),
    )
    .execute(&mut *conn)
    .await?;
    Ok((shopper_id, account_id))
}

/// Opens the shopper's account in `currency` with `balance_cents`, unless
/// they already have one in it (then nothing changes).
#[tracing::instrument(name = "db.shoppers.open_account", skip(db))]
pub async fn open_account(
    db: impl PgExecutor<'_>,
    shopper_id: Uuid,
    balance_cents: i64,
    currency: Currency,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO accounts (account_id, shopper_id, balance_cents, opening_balance_cents, currency)
         VALUES ($1, $2, $3, $3, $4)
         ON CONFLICT (shopper_id, currency) WHERE shopper_id IS NOT NULL DO NOTHING",
        Uuid::new_v4(),
        shopper_id,
        balance_cents,
        currency.as_str(),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The shopper with this email, whatever its case.
#[tracing::instrument(name = "db.shoppers.find_by_email", skip(db))]
pub async fn find_by_email(
    db: impl PgExecutor<'_>,
    email: &str,
) -> sqlx::Result<Option<Credentials>> {
    sqlx::query_as!(
        Credentials,
        "SELECT shopper_id, email, password_hash, demo FROM shoppers WHERE lower(email) = lower($1)",
        email,
    )
    .fetch_optional(db)
    .await
}

/// What sign-in finds for an email: the key its failures count under, and
/// the shopper, if any.
#[derive(Debug, Clone)]
pub struct SignInLookup {
    /// The email lower-cased by PostgreSQL: `lower(email)`, the expression
    /// the look-up and the unique index `shoppers_email_key` compare. Every
    /// email that finds a shopper has that shopper's key, whatever its case
    /// (`İ` for `i`, the Kelvin sign for `k`, ...), and an email that finds
    /// nobody gets its key by the same rule, so the key (and the limit counted
    /// under it) tells nothing about whether the email exists.
    pub limit_key: String,
    /// The shopper with this email, whatever its case.
    pub credentials: Option<Credentials>,
}

/// Sign-in's look-up: the shopper with this email, whatever its case, and the
/// key the per-email failure limit counts it under ([`SignInLookup`]), in one
/// statement so both come from the same `lower()`.
#[tracing::instrument(name = "db.shoppers.find_for_sign_in", skip(db))]
pub async fn find_for_sign_in(db: impl PgExecutor<'_>, email: &str) -> sqlx::Result<SignInLookup> {
    let row = sqlx::query!(
        r#"SELECT lower($1::text) AS "limit_key!", s.shopper_id AS "shopper_id?",
                  s.email AS "email?", s.password_hash AS "password_hash?", s.demo AS "demo?"
           FROM (VALUES (1)) AS one (x)
           LEFT JOIN shoppers s ON lower(s.email) = lower($1::text)"#,
        email,
    )
    .fetch_one(db)
    .await?;
    let credentials = match (row.shopper_id, row.email, row.password_hash, row.demo) {
        (Some(shopper_id), Some(email), Some(password_hash), Some(demo)) => Some(Credentials {
            shopper_id,
            email,
            password_hash,
            demo,
        }),
        _ => None,
    };
    Ok(SignInLookup {
        limit_key: row.limit_key,
        credentials,
    })
}

/// A shopper's email; `None` when there is no such shopper.
#[tracing::instrument(name = "db.shoppers.email", skip(db))]
pub async fn email(db: impl PgExecutor<'_>, shopper_id: Uuid) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT email FROM shoppers WHERE shopper_id = $1",
        shopper_id
    )
    .fetch_optional(db)
    .await
}

/// A shopper's accounts, by currency.
#[tracing::instrument(name = "db.shoppers.accounts", skip(db))]
pub async fn accounts(db: impl PgExecutor<'_>, shopper_id: Uuid) -> sqlx::Result<Vec<Account>> {
    sqlx::query_as!(
        Account,
        r#"SELECT account_id, balance_cents, currency AS "currency: Currency"
           FROM accounts WHERE shopper_id = $1 ORDER BY currency"#,
        shopper_id,
    )
    .fetch_all(db)
    .await
}

/// The shopper's account in `currency`, if they have one.
#[tracing::instrument(name = "db.shoppers.account_in", skip(db))]
pub async fn account_in(
    db: impl PgExecutor<'_>,
    shopper_id: Uuid,
    currency: Currency,
) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar!(
        "SELECT account_id FROM accounts WHERE shopper_id = $1 AND currency = $2",
        shopper_id,
        currency.as_str(),
    )
    .fetch_optional(db)
    .await
}
