//! Pay: a consumed request token becomes the order's one payment attempt, and
//! a wallet payment's money is held, in one transaction (or one statement).
//!
//! The route (`http::routes::pay`) takes the token out of Redis first
//! ([`crate::infra::tokens`]); here the winner of the token inserts the attempt
//! (UNIQUE request token, UNIQUE order) with the answer it gives and, when the
//! wallet pays, holds the amount on the shopper's account (a payment through
//! the platform needs no money of ours, and holds nothing). The common case is one statement
//! ([`attempts::start_in_one`], `sql/pay/start_attempt.sql`); anything else
//! goes to [`start_attempt_in_tx`], which says exactly why not, or joins the
//! attempt a concurrent submit made. `tests/api/pay_one_statement.rs` feeds
//! both paths the same cases and compares what they write.

use crate::db::warm::WarmConnections;
use crate::db::{self, attempts};
use crate::error::ApiError;
use crate::infra::tokens::TokenBinding;
use api_types::api::PayAccepted;
use api_types::{OrderStatus, PaymentMethod};
use axum::http::StatusCode;
use sqlx::PgPool;
use uuid::Uuid;

/// Whether an order can take a payment now: PENDING and not past its expiry
/// (409 `ORDER_NOT_PAYABLE` otherwise). Asked when a token is issued and again
/// under the order's lock when the pay decides.
pub fn ensure_payable(
    status: OrderStatus,
    expires_at: time::OffsetDateTime,
) -> Result<(), ApiError> {
    if status != OrderStatus::Pending {
        return Err(ApiError::OrderNotPayable(status));
    }
    if expires_at <= time::OffsetDateTime::now_utc() {
        return Err(ApiError::OrderExpired);
    }
    Ok(())
}

/// What a pay's token turned into: the order's new attempt, or the one a
/// concurrent submit (with another token) made first.
pub enum Started {
    /// This submit made the order's attempt (and, for the wallet, holds the amount).
    New(attempts::AttemptRow),
    /// The order already had an attempt: this submit joins it.
    Joined(attempts::AttemptRow),
}

/// Turns a consumed token into the order's one payment attempt, paid by
/// `method`: in one statement when the order is payable as the token says
/// ([`attempts::start_in_one`]), else in the transaction that says why not.
pub async fn start_attempt(
    db: &PgPool,
    warm: &WarmConnections,
    token: Uuid,
    binding: &TokenBinding,
    method: PaymentMethod,
) -> Result<Started, ApiError> {
    let payment_id = Uuid::new_v4();
    let answer = PayAccepted {
        order_no: binding.order_no.clone(),
        payment_id,
        status: OrderStatus::Pending,
        method,
    };
    let body = serde_json::to_value(&answer).map_err(ApiError::internal)?;
    let new = attempts::NewAttempt {
        payment_id,
        request_token: token,
        order_no: &binding.order_no,
        amount_cents: binding.amount_cents,
        currency: binding.currency,
        method,
        response_status: i16::try_from(StatusCode::ACCEPTED.as_u16()).unwrap_or(202),
        response_body: &body,
    };
    // On a connection the stash keeps for the next statement: through the
    // pool, each pay paid for sqlx's ping when the connection went back.
    let started = warm
        .run(async |conn| attempts::start_in_one(conn, new, time::OffsetDateTime::now_utc()).await)
        .await?;
    if let Some(attempt) = started {
        return Ok(Started::New(attempt));
    }
    start_attempt_in_tx(db, new).await
}

/// The general transaction of [`start_attempt`]: every check in its own step,
/// each refusal with its own error.
///
/// Its SQL twin is pay's fast path, `backend/sql/pay/start_attempt.sql`, which
/// starts an attempt only where every check here passes (each of its
/// predicates names the check it mirrors); `backend/tests/api/pay_one_statement.rs`
/// feeds both the same cases and compares what they write.
pub async fn start_attempt_in_tx(
    db: &PgPool,
    new: attempts::NewAttempt<'_>,
) -> Result<Started, ApiError> {
    let mut tx = db.begin().await?;
    // The order lock serialises attempts for one order; the UNIQUE constraints are the floor beneath it.
    let order = db::orders::lock_with_account(&mut *tx, new.order_no)
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    ensure_payable(order.status, order.expires_at)?;
    if order.amount_cents != new.amount_cents || order.currency != new.currency {
        return Err(ApiError::TokenInvalid(
            "the order changed since the token was issued",
        ));
    }
    if let Some(existing) = attempts::find_by_order(&mut *tx, &order.order_no).await? {
        return Ok(Started::Joined(existing));
    }
    let wallet = new.method == PaymentMethod::Wallet;
    // Judged against what is available: money held for this shopper's other
    // payments in flight cannot be promised again. The platform's money is not ours to judge.
    let available_cents = order.balance_cents - order.held_cents;
    if wallet && available_cents < order.amount_cents {
        return Err(ApiError::InsufficientFunds {
            available_cents,
            amount_cents: order.amount_cents,
        });
    }
    let attempt = attempts::insert(&mut *tx, new).await.map_err(|err| {
        if db::is_unique_violation(&err, attempts::TOKEN_UNIQUE)
            || db::is_unique_violation(&err, attempts::ORDER_UNIQUE)
        {
            // Unreachable under the order lock; the constraint still says no.
            ApiError::TokenInvalid("a concurrent submit for this order is in flight")
        } else {
            err.into()
        }
    })?;
    // The hold, in the transaction that made the attempt: the pay that wins holds the wallet's money.
    if wallet {
        if !db::accounts::hold(&mut *tx, order.account_id, order.amount_cents).await? {
            return Err(ApiError::InsufficientFunds {
                available_cents,
                amount_cents: order.amount_cents,
            });
        }
        // The hold in the books: pending, from the wallet to the merchant.
        db::books::hold(
            &mut tx,
            attempt.payment_id,
            order.account_id,
            &order.order_no,
            order.amount_cents,
            order.currency,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(Started::New(attempt))
}
