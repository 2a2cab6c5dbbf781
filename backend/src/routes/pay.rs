//! `POST /api/orders/{order_no}/pay`: "Pay now".
//!
//! The idempotency key of a submit is its request token:
//! 1. take the token out of Redis if it is bound to this order (a guarded `GETDEL`,
//!    [`crate::tokens`]): exactly one concurrent submit gets its binding, and a
//!    token presented on another order is refused without being used up;
//! 2. the winner inserts the payment attempt (UNIQUE request token, UNIQUE order)
//!    with the answer it gives, in one transaction, and answers 202;
//! 3. the attempt is handed to the platform after commit.
//!
//! Every later use of the token, even after Redis lost everything, finds the
//! attempt row and gets the winner's answer replayed with `Idempotent-Replayed: true`.
//! A use *concurrent* with the winner (a double click, a page re-sending after
//! a network drop) finds the token's in-flight marker instead of a row: it
//! waits up to [`IN_FLIGHT_WAIT`] for the winner's attempt and replays it, or
//! answers `409 PAY_IN_PROGRESS` with `Retry-After`, after which the same
//! token replays. It is never told the token is invalid while the winner charges.

use crate::auth::session::SignedIn;
use crate::db::{self, attempts};
use crate::error::ApiError;
use crate::extract::{AppJson, OrderNoPath};
use crate::faults;
use crate::openapi::ShopperErrors;
use crate::platform;
use crate::state::AppState;
use crate::tokens::{Consumed, TokenBinding, TokenFingerprint};
use api_types::OrderStatus;
use api_types::api::{PayAccepted, PayRequest};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use checkout_rules::order_no::OrderNo;
use std::time::Duration;
use uuid::Uuid;

/// Header marking an answer as the replay of an earlier one.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// How long a submit whose token another submit is using waits for that
/// submit's attempt before answering `409 PAY_IN_PROGRESS`.
pub const IN_FLIGHT_WAIT: Duration = Duration::from_secs(3);

/// How often a waiting submit looks for the attempt.
const IN_FLIGHT_POLL: Duration = Duration::from_millis(20);

/// `POST /api/orders/{order_no}/pay`: the one winner of the token records the attempt; every
/// other use of the token replays the stored answer (see the module doc).
#[tracing::instrument(name = "pay", skip(state, body, order_no),
    fields(order_no = %order_no, token_fp = %TokenFingerprint::of(body.request_token),
           payment_id = tracing::field::Empty))]
#[utoipa::path(post, path = "/orders/{order_no}/pay", tag = "shopper", security(("session" = [])), request_body = PayRequest,
    params(("order_no" = String, Path, description = "The order number")),
    responses((status = 202, description = "The payment attempt (replays carry Idempotent-Replayed: true)", body = PayAccepted),
        (status = 409, description = "TOKEN_INVALID, ORDER_NOT_PAYABLE, or PAY_IN_PROGRESS (another submit of this token is still being recorded; retry after Retry-After with the same token)", body = api_types::ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn pay(
    State(state): State<AppState>,
    signed_in: SignedIn,
    OrderNoPath(order_no): OrderNoPath,
    AppJson(body): AppJson<PayRequest>,
) -> Result<Response, ApiError> {
    let shopper_id = signed_in.shopper_id;
    state.limits.pays.check(&shopper_id)?;
    let token = body.request_token;
    let binding = match take_token(&state, token, &order_no, shopper_id).await? {
        Taken::Binding(binding) => binding,
        Taken::Answered(answer) => return Ok(answer),
    };
    faults::crash_point("pay.after_getdel");

    match start_attempt(&state, token, &binding).await {
        Ok(Started::New(attempt)) => {
            faults::crash_point("pay.after_commit");
            record_payment_id(attempt.payment_id);
            tracing::info!(%order_no, payment_id = %attempt.payment_id, "payment attempt created");
            let answer = stored_answer(&attempt, false);
            // At most HAND_OVERS_IN_FLIGHT_MAX at once: with every slot taken
            // (a stalled platform), the committed attempt waits for the
            // dispatcher instead of adding one more connection and task.
            let payment_id = attempt.payment_id;
            if !platform::dispatcher::spawn_dispatch(
                &state.db,
                &state.platform,
                &state.submissions,
                attempt,
                tracing::Span::current(),
            ) {
                crate::metrics::hand_over_deferred();
                tracing::info!(%order_no, %payment_id,
                    "hand-overs in flight at the limit: this one is left to the dispatcher");
            }
            Ok(answer)
        }
        Ok(Started::Joined(attempt)) => {
            record_payment_id(attempt.payment_id);
            tracing::info!(%order_no, payment_id = %attempt.payment_id, "order already has a payment attempt; joined it");
            Ok(stored_answer(&attempt, true))
        }
        Err(err) => {
            if err.status_and_code().0.is_server_error() {
                // Our fault, not the shopper's: give the token back so the same retry works.
                if let Err(restore) = state.tokens.restore(token, &binding).await {
                    tracing::warn!(error = %restore, "could not restore the request token");
                }
            } else if let Err(release) = state.tokens.release(token).await {
                // The order refused: no attempt will come, so nobody should wait for one.
                // A submit still waiting answers PAY_IN_PROGRESS, then TOKEN_INVALID.
                tracing::warn!(error = %release, "could not release the request token's in-flight marker");
            }
            Err(err)
        }
    }
}

/// What taking the token ended with: the binding (this submit is the
/// token's winner), or an answer already (a replay, or a refusal).
enum Taken {
    Binding(TokenBinding),
    Answered(Response),
}

/// Takes the token for this order and shopper, or answers without it: the
/// replay of the attempt the token (or the order) has, or why not. While
/// another submit holds the token in flight, waits for its attempt (see the
/// module doc).
async fn take_token(
    state: &AppState,
    token: Uuid,
    order_no: &OrderNo,
    shopper_id: Uuid,
) -> Result<Taken, ApiError> {
    let order_no = order_no.as_str();
    let deadline = tokio::time::Instant::now() + IN_FLIGHT_WAIT;
    let mut waited = false;
    loop {
        // Somebody else's order is a missing order, and their token is never
        // touched: the guarded GETDEL takes a token only when its binding names
        // this order and this shopper, and a token is bound only to an order its
        // shopper owns, so a token taken proves ownership; every other answer
        // checks ownership before it says anything about the token.
        match state.tokens.consume(token, order_no, shopper_id).await {
            Ok(Consumed::Taken(binding)) => {
                crate::metrics::token_consumed();
                if waited {
                    tracing::info!(%order_no, "the submit holding this token gave it back; this one takes it");
                }
                return Ok(Taken::Binding(binding));
            }
            Ok(Consumed::OtherOrder(binding)) => {
                ensure_owned(state, order_no, shopper_id).await?;
                // Left in the store: the shopper's own submit on its order still works.
                tracing::warn!(bound_to = %binding.order_no, %order_no, "token presented for another order or by another shopper");
                return Err(ApiError::TokenInvalid(
                    "request token was issued for another order",
                ));
            }
            Ok(Consumed::InFlight(binding)) => {
                // The binding names this order and this shopper, so the order's
                // attempt (made by this token, or joined by it) is theirs to see.
                if let Some(attempt) = attempts::find_by_order(&state.db, &binding.order_no).await?
                {
                    record_payment_id(attempt.payment_id);
                    tracing::info!(%order_no, payment_id = %attempt.payment_id,
                        "replaying the attempt of a concurrent submit of the same token");
                    return Ok(Taken::Answered(stored_answer(&attempt, true)));
                }
                if tokio::time::Instant::now() >= deadline {
                    tracing::info!(%order_no, "another submit of this token is still being recorded");
                    return Err(ApiError::PayInProgress);
                }
                if !waited {
                    tracing::info!(%order_no, "another submit of this token is being recorded; waiting for its attempt");
                    waited = true;
                }
                tokio::time::sleep(IN_FLIGHT_POLL).await;
            }
            Ok(Consumed::Missing) => {
                ensure_owned(state, order_no, shopper_id).await?;
                return replay_or(
                    state,
                    token,
                    order_no,
                    ApiError::TokenInvalid(
                        "request token is unknown, expired or already used; get a new one and retry",
                    ),
                )
                .await
                .map(Taken::Answered);
            }
            Err(err) => {
                ensure_owned(state, order_no, shopper_id).await?;
                return replay_or(state, token, order_no, ApiError::TokenStoreUnavailable(err))
                    .await
                    .map(Taken::Answered);
            }
        }
    }
}

/// 404 unless the shopper owns the order.
async fn ensure_owned(state: &AppState, order_no: &str, shopper_id: Uuid) -> Result<(), ApiError> {
    match db::orders::find_owned(&state.db, order_no, shopper_id).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::OrderNotFound),
    }
}

/// Records the attempt's payment id on the current (`pay`) span: the lines
/// logged after it, the hand-over's included, name it.
fn record_payment_id(payment_id: Uuid) {
    tracing::Span::current().record("payment_id", tracing::field::display(payment_id));
}

/// A token that Redis does not (or cannot) give us: answer from the database if
/// the token already made an attempt, otherwise with `error`.
async fn replay_or(
    state: &AppState,
    token: Uuid,
    order_no: &str,
    error: ApiError,
) -> Result<Response, ApiError> {
    match attempts::find_by_token(&state.db, token).await? {
        Some(attempt) if attempt.order_no == order_no => {
            record_payment_id(attempt.payment_id);
            tracing::info!(%order_no, payment_id = %attempt.payment_id, "replaying the answer of an earlier submit");
            Ok(stored_answer(&attempt, true))
        }
        Some(_) => Err(ApiError::TokenInvalid(
            "request token was issued for another order",
        )),
        None => Err(error),
    }
}

enum Started {
    New(attempts::AttemptRow),
    Joined(attempts::AttemptRow),
}

/// Turns a consumed token into the order's one payment attempt: in one
/// statement when the order is payable as the token says
/// ([`attempts::start_in_one`]), else in the transaction that says why not.
async fn start_attempt(
    state: &AppState,
    token: Uuid,
    binding: &TokenBinding,
) -> Result<Started, ApiError> {
    let payment_id = Uuid::new_v4();
    let answer = PayAccepted {
        order_no: binding.order_no.clone(),
        payment_id,
        status: OrderStatus::Pending,
    };
    let body = serde_json::to_value(&answer).map_err(ApiError::internal)?;
    let new = attempts::NewAttempt {
        payment_id,
        request_token: token,
        order_no: &binding.order_no,
        amount_cents: binding.amount_cents,
        currency: binding.currency,
        response_status: i16::try_from(StatusCode::ACCEPTED.as_u16()).unwrap_or(202),
        response_body: &body,
    };
    // On a connection the stash keeps for the next statement: through the
    // pool, each pay paid for sqlx's ping when the connection went back.
    let started = state
        .warm
        .run(async |conn| attempts::start_in_one(conn, new, time::OffsetDateTime::now_utc()).await)
        .await?;
    if let Some(attempt) = started {
        return Ok(Started::New(attempt));
    }
    start_attempt_in_tx(state, new).await
}

/// The general transaction of [`start_attempt`]: every check in its own step,
/// each refusal with its own error.
async fn start_attempt_in_tx(
    state: &AppState,
    new: attempts::NewAttempt<'_>,
) -> Result<Started, ApiError> {
    let mut tx = state.db.begin().await?;
    // The order lock serialises attempts for one order; the UNIQUE constraints are the floor beneath it.
    let order = db::orders::lock_with_account(&mut *tx, new.order_no)
        .await?
        .ok_or(ApiError::OrderNotFound)?;
    crate::routes::orders::ensure_payable(order.status, order.expires_at)?;
    if order.amount_cents != new.amount_cents || order.currency != new.currency {
        return Err(ApiError::TokenInvalid(
            "the order changed since the token was issued",
        ));
    }
    if let Some(existing) = attempts::find_by_order(&mut *tx, &order.order_no).await? {
        return Ok(Started::Joined(existing));
    }
    // Judged against what is available: money held for this shopper's other
    // payments in flight cannot be promised again.
    let available_cents = order.balance_cents - order.held_cents;
    if available_cents < order.amount_cents {
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
    // The hold, in the transaction that made the attempt: the pay that wins holds the money.
    if !db::accounts::hold(&mut *tx, order.account_id, order.amount_cents).await? {
        return Err(ApiError::InsufficientFunds {
            available_cents,
            amount_cents: order.amount_cents,
        });
    }
    tx.commit().await?;
    Ok(Started::New(attempt))
}

fn stored_answer(attempt: &attempts::AttemptRow, replayed: bool) -> Response {
    let status = u16::try_from(attempt.response_status)
        .ok()
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or(StatusCode::ACCEPTED);
    let mut response = (status, Json(attempt.response_body.clone())).into_response();
    if replayed {
        response
            .headers_mut()
            .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    }
    response
}
