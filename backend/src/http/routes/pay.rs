//! `POST /api/orders/{order_no}/pay`: "Pay now".
//!
//! The idempotency key of a submit is its request token:
//! 1. take the token out of Redis if it is bound to this order (a guarded `GETDEL`,
//!    [`crate::infra::tokens`]): exactly one concurrent submit gets its binding, and a
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

use crate::db::{self, attempts};
use crate::error::ApiError;
use crate::http::auth::session::SignedIn;
use crate::http::extract::{AppJson, OrderNoPath};
use crate::http::openapi::ShopperErrors;
use crate::idempotency::REPLAYED_HEADER;
use crate::infra::faults;
use crate::infra::tokens::{Consumed, TokenBinding, TokenFingerprint};
use crate::pay::{self, Started};
use crate::platform;
use crate::state::AppState;
use api_types::api::{PayAccepted, PayRequest};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use checkout_rules::order_no::OrderNo;
use std::time::Duration;
use uuid::Uuid;

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
        (status = 422, description = "INSUFFICIENT_FUNDS (a wallet payment beyond the available balance), or PAYMENT_METHOD_UNAVAILABLE (a method `GET /api/platform` does not list; the token is not used up)", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn pay(
    State(state): State<AppState>,
    signed_in: SignedIn,
    OrderNoPath(order_no): OrderNoPath,
    AppJson(body): AppJson<PayRequest>,
) -> Result<Response, ApiError> {
    let shopper_id = signed_in.shopper_id;
    state.limits.pays.check(&shopper_id)?;
    // Before the token is touched: a method not offered changes nothing.
    let kind = state.platform.kind();
    let method = kind.payment_method(body.method).ok_or_else(|| {
        let offered: Vec<&str> = kind.payment_methods().iter().map(|m| m.as_str()).collect();
        ApiError::PaymentMethodUnavailable {
            asked: body.method.unwrap_or(api_types::PaymentMethod::Wallet),
            offered: offered.join(", "),
        }
    })?;
    let token = body.request_token;
    let binding = match take_token(&state, token, &order_no, shopper_id).await? {
        Taken::Binding(binding) => binding,
        Taken::Answered(answer) => return Ok(answer),
    };
    faults::crash_point("pay.after_getdel");

    match pay::start_attempt(&state.db, &state.warm, token, &binding, method).await {
        Ok(Started::New(attempt)) => {
            faults::crash_point("pay.after_commit");
            record_payment_id(attempt.payment_id);
            tracing::info!(%order_no, payment_id = %attempt.payment_id, method = %attempt.method, "payment attempt created");
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
                crate::infra::metrics::hand_over_deferred();
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
                crate::infra::metrics::token_consumed();
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
