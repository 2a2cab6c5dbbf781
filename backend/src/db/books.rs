//! `transfers`: the double-entry books. Every movement of money debits one
//! ledger account and credits another, under an id that is its idempotency key
//! (a second post of one id is refused by the primary key), in the transaction
//! that makes the movement (migration `20261208000002_double_entry_books.sql`
//! names the accounts and why each exists).
//!
//! A wallet's ledger account is its `accounts` row, whose running balance the
//! callers keep beside these entries (`db::accounts`); the merchant, clearing
//! and suspense accounts are hot and have no row to update: their balances are
//! read from the entries.

use api_types::merchant::{BalanceEntry, CurrencyBalance};
use api_types::ops::LedgerBalance;
use api_types::{Currency, LedgerAccountKind};
use sqlx::PgConnection;
use uuid::Uuid;

/// What a charge debits: the shopper's wallet (posting the hold `hold_of`
/// made at pay, if one is in place) or the platform's clearing account.
#[derive(Debug, Clone, Copy)]
pub enum Payer {
    /// The wallet (the `accounts` row) pays.
    Wallet {
        /// The wallet.
        account_id: Uuid,
        /// The payment whose hold this charge posts (`hold:<payment id>`), if held.
        hold_of: Option<Uuid>,
    },
    /// The platform took the shopper's own money: clearing pays the merchant.
    Platform,
}

/// Posts the charge of a payment: `charge:<callback id>`, from the payer to the merchant.
#[tracing::instrument(name = "db.books.charge", skip(tx))]
pub async fn charge(
    tx: &mut PgConnection,
    callback_id: &str,
    order_no: &str,
    amount_cents: i64,
    currency: Currency,
    payer: Payer,
) -> sqlx::Result<()> {
    let (wallet, pending_id) = match payer {
        Payer::Wallet {
            account_id,
            hold_of,
        } => (Some(account_id), hold_of.map(|id| format!("hold:{id}"))),
        Payer::Platform => (None, None),
    };
    sqlx::query!(
        "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency,
                                kind, pending_id, order_no)
         VALUES ('charge:' || $1, coalesce($2, ledger_account('CLEARING', 'platform', $4)),
                 ledger_account('MERCHANT', (SELECT merchant_id::text FROM orders WHERE order_no = $6), $4),
                 $3, $4, 'CHARGE', $5, $6)",
        callback_id,
        wallet,
        amount_cents,
        currency.as_str(),
        pending_id,
        order_no,
    )
    .execute(tx)
    .await?;
    Ok(())
}

/// Posts the hold of a wallet payment: `hold:<payment id>`, pending, from the
/// wallet to the merchant; its charge posts it, a failure or close voids it.
#[tracing::instrument(name = "db.books.hold", skip(tx))]
pub async fn hold(
    tx: &mut PgConnection,
    payment_id: Uuid,
    account_id: Uuid,
    order_no: &str,
    amount_cents: i64,
    currency: Currency,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency,
                                kind, order_no)
         VALUES ('hold:' || $1, $2, ledger_account('MERCHANT', (SELECT merchant_id::text FROM orders WHERE order_no = $5), $4),
                 $3, $4, 'HOLD', $5)",
        payment_id.to_string(),
        account_id,
        amount_cents,
        currency.as_str(),
        order_no,
    )
    .execute(tx)
    .await?;
    Ok(())
}

/// Voids the hold of payment `payment_id` (`void:<payment id>`, its amount
/// and accounts). Returns false when the payment has no hold.
#[tracing::instrument(name = "db.books.void", skip(tx))]
pub async fn void(tx: &mut PgConnection, payment_id: Uuid) -> sqlx::Result<bool> {
    let voided = sqlx::query!(
        "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency,
                                kind, pending_id, order_no)
         SELECT 'void:' || $1, debit_account_id, credit_account_id, amount_cents, currency,
                'VOID', transfer_id, order_no
         FROM transfers WHERE transfer_id = 'hold:' || $1",
        payment_id.to_string(),
    )
    .execute(tx)
    .await?;
    Ok(voided.rows_affected() == 1)
}

/// Posts a refund the platform made: `refund:<refund no>`, from the merchant
/// back to the wallet that paid (`wallet`), or to clearing for a platform payment.
#[tracing::instrument(name = "db.books.refund", skip(tx))]
pub async fn refund(
    tx: &mut PgConnection,
    refund_no: &str,
    order_no: &str,
    amount_cents: i64,
    currency: Currency,
    wallet: Option<Uuid>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency,
                                kind, order_no)
         VALUES ('refund:' || $1, ledger_account('MERCHANT', (SELECT merchant_id::text FROM orders WHERE order_no = $2), $4),
                 coalesce($5, ledger_account('CLEARING', 'platform', $4)), $3, $4, 'REFUND', $2)",
        refund_no,
        order_no,
        amount_cents,
        currency.as_str(),
        wallet,
    )
    .execute(tx)
    .await?;
    Ok(())
}

/// Which way money moves through suspense (money we hold that is not ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suspense {
    /// A platform took money we could not book, to be given back by the
    /// automatic refund: `unbooked:<refund no>`, clearing to suspense.
    Unbooked,
    /// The automatic refund gave it back: `refund:<refund no>`, suspense to clearing.
    GivenBack,
}

/// Moves the amount of automatic refund `refund_no` into or out of suspense.
#[tracing::instrument(name = "db.books.suspense", skip(tx))]
pub async fn suspense(
    tx: &mut PgConnection,
    way: Suspense,
    refund_no: &str,
    order_no: &str,
    amount_cents: i64,
    currency: Currency,
) -> sqlx::Result<()> {
    let (prefix, kind) = match way {
        Suspense::Unbooked => ("unbooked:", "UNBOOKED"),
        Suspense::GivenBack => ("refund:", "GIVEN_BACK"),
    };
    sqlx::query!(
        "WITH sides AS (
             SELECT ledger_account('CLEARING', 'platform', $5) AS clearing,
                    ledger_account('SUSPENSE', 'checkout', $5) AS suspense
         )
         INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency,
                                kind, order_no)
         SELECT $1 || $3, CASE WHEN $2 = 'UNBOOKED' THEN clearing ELSE suspense END,
                CASE WHEN $2 = 'UNBOOKED' THEN suspense ELSE clearing END, $4, $5, $2, $6
         FROM sides",
        prefix,
        kind,
        refund_no,
        amount_cents,
        currency.as_str(),
        order_no,
    )
    .execute(tx)
    .await?;
    Ok(())
}

/// Every ledger account's balance from `ledger_balances`, the wallets summed
/// per currency (one line each, owner `shoppers`), a merchant's account by its
/// merchant's name: what the console shows.
#[tracing::instrument(name = "db.books.balances", skip(db))]
pub async fn balances(db: impl sqlx::PgExecutor<'_>) -> sqlx::Result<Vec<LedgerBalance>> {
    sqlx::query_as!(
        LedgerBalance,
        r#"SELECT kind AS "kind!: LedgerAccountKind",
                  CASE WHEN kind = 'WALLET' THEN 'shoppers'
                       WHEN kind = 'MERCHANT' THEN coalesce((SELECT m.name FROM merchants m WHERE m.merchant_id::text = owner), owner)
                       ELSE owner END AS "owner!",
                  currency AS "currency!: Currency", count(*) AS "accounts!",
                  sum(debits_posted)::bigint AS "debits_posted_cents!",
                  sum(credits_posted)::bigint AS "credits_posted_cents!",
                  sum(debits_pending)::bigint AS "debits_pending_cents!",
                  sum(balance_cents)::bigint AS "balance_cents!"
           FROM ledger_balances
           GROUP BY 1, 2, 3
           ORDER BY 3, array_position(ARRAY['MERCHANT', 'CLEARING', 'SUSPENSE', 'FUNDING', 'WALLET'], kind), 2"#
    )
    .fetch_all(db)
    .await
}

/// A merchant's account in each currency it has one in, from `ledger_balances`.
#[tracing::instrument(name = "db.books.merchant_balances", skip(db))]
pub async fn merchant_balances(
    db: impl sqlx::PgExecutor<'_>,
    merchant_id: Uuid,
) -> sqlx::Result<Vec<CurrencyBalance>> {
    sqlx::query_as!(
        CurrencyBalance,
        r#"SELECT currency AS "currency!: Currency", balance_cents AS "balance_cents!",
                  credits_posted AS "credited_cents!", debits_posted AS "debited_cents!"
           FROM ledger_balances WHERE kind = 'MERCHANT' AND owner = $1::uuid::text
           ORDER BY currency"#,
        merchant_id,
    )
    .fetch_all(db)
    .await
}

/// Up to `limit` posted entries of a merchant's accounts, newest first
/// (posting time, then transfer id, descending), older than the entry
/// `starting_after` when given. `None`: that entry is not one of the merchant's.
#[tracing::instrument(name = "db.books.merchant_entries", skip(db))]
pub async fn merchant_entries(
    db: &sqlx::PgPool,
    merchant_id: Uuid,
    starting_after: Option<&str>,
    limit: i64,
) -> sqlx::Result<Option<Vec<BalanceEntry>>> {
    let cursor = match starting_after {
        None => None,
        Some(entry_id) => {
            let found = sqlx::query!(
                r#"SELECT t.created_at, t.transfer_id FROM transfers t JOIN ledger_accounts a
                        ON a.ledger_account_id IN (t.debit_account_id, t.credit_account_id)
                   WHERE t.transfer_id = $1 AND a.kind = 'MERCHANT' AND a.owner = $2::uuid::text
                     AND t.kind NOT IN ('HOLD', 'VOID')"#,
                entry_id,
                merchant_id,
            )
            .fetch_optional(db)
            .await?;
            match found {
                Some(row) => Some((row.created_at, row.transfer_id)),
                None => return Ok(None),
            }
        }
    };
    let (before_at, before_id) = cursor.map_or((None, None), |(at, id)| (Some(at), Some(id)));
    let rows = sqlx::query!(
        r#"WITH mine AS (
               SELECT ledger_account_id FROM ledger_accounts WHERE kind = 'MERCHANT' AND owner = $1::uuid::text
           )
           SELECT t.transfer_id, t.kind, t.currency AS "currency: Currency", t.order_no, t.created_at,
                  (CASE WHEN t.credit_account_id IN (SELECT ledger_account_id FROM mine)
                        THEN t.amount_cents ELSE -t.amount_cents END) AS "amount_cents!"
           FROM transfers t
           WHERE (t.credit_account_id IN (SELECT ledger_account_id FROM mine)
                  OR t.debit_account_id IN (SELECT ledger_account_id FROM mine))
             AND t.kind NOT IN ('HOLD', 'VOID')
             AND ($2::timestamptz IS NULL OR (t.created_at, t.transfer_id) < ($2, $3::text))
           ORDER BY t.created_at DESC, t.transfer_id DESC
           LIMIT $4"#,
        merchant_id,
        before_at,
        before_id,
        limit,
    )
    .fetch_all(db)
    .await?;
    Ok(Some(
        rows.into_iter()
            .map(|row| BalanceEntry {
                refund_no: row.transfer_id.strip_prefix("refund:").map(str::to_owned),
                entry_id: row.transfer_id,
                kind: row.kind,
                amount_cents: row.amount_cents,
                currency: row.currency,
                order_no: row.order_no,
                created_at: row.created_at,
            })
            .collect(),
    ))
}
