//! `/api/session` (sign in, sign out) and `/api/me`.

use crate::db::shoppers;
use crate::error::ApiError;
use crate::http::auth::session::SignedIn;
use crate::http::auth::{passwords, session};
use crate::http::extract::{AppJson, ClientIp};
use crate::http::openapi::ShopperErrors;
use crate::state::AppState;
use api_types::api::{Me, SessionInfo, SignIn};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use secrecy::SecretString;
use tower_sessions::Session;

/// `POST /api/session` -> 200 and a new session cookie; `401 INVALID_CREDENTIALS`
/// for an unknown email and for a wrong password alike (same answer, same work).
#[utoipa::path(post, path = "/session", tag = "shopper", request_body = SignIn,
    responses((status = 200, description = "Signed in; the session cookie is set", body = SessionInfo),
        (status = 401, description = "INVALID_CREDENTIALS: unknown email or wrong password", body = api_types::ErrorBody),
        ShopperErrors))]
pub async fn sign_in(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    session: Session,
    AppJson(body): AppJson<SignIn>,
) -> Result<Json<SessionInfo>, ApiError> {
    state.limits.signin_ip.check(&client)?;
    // The per-email limit counts under the key the look-up itself gives
    // (PostgreSQL's lower(), `shoppers::SignInLookup`): every spelling that
    // finds a shopper counts against that shopper's one limit, and an email
    // that finds nobody is keyed by the same rule, so the limit does not tell
    // whether it exists. An email no shopper can have (control characters,
    // which PostgreSQL text cannot even hold in the case of U+0000) is not
    // looked up, is its own key, and gets the same work and answer.
    let lookup = body.email.trim();
    let (email_key, found) =
        if lookup.chars().any(char::is_control) || lookup.len() > shoppers::MAX_EMAIL_LEN {
            (lookup.to_owned(), None)
        } else {
            let found = shoppers::find_for_sign_in(&state.db, lookup).await?;
            (found.limit_key, found.credentials)
        };
    state.limits.signin_email.check(&email_key)?;
    let stored = found.as_ref().map(|c| c.password_hash.clone());
    // Password checks run a few at a time (`passwords::slot`). Failures
    // recorded while this one waited may have blocked its address or email:
    // ask the limits again, so a queued flood is refused without checking.
    let slot = passwords::slot().await?;
    state.limits.signin_ip.check(&client)?;
    state.limits.signin_email.check(&email_key)?;
    let password = SecretString::from(body.password);
    let verified = passwords::verify(slot, password, stored).await?;
    match found {
        // A demo shopper's password is public: usable only while the rule that
        // makes demo shoppers holds (demo mode on, no money moving).
        Some(credentials) if verified && (!credentials.demo || state.demo_shoppers_allowed) => {
            session::sign_in(&session, credentials.shopper_id, credentials.demo).await?;
            tracing::info!(shopper_id = %credentials.shopper_id, "shopper signed in");
            Ok(Json(SessionInfo {
                shopper_id: credentials.shopper_id,
                email: credentials.email,
            }))
        }
        _ => {
            tracing::warn!(%client, "sign-in failed");
            state.limits.signin_ip.record_failure(&client)?;
            state.limits.signin_email.record_failure(&email_key)?;
            Err(ApiError::InvalidCredentials)
        }
    }
}

/// `DELETE /api/session` -> 204; the session is deleted on the server, so its
/// cookie is worthless even if it was copied.
#[utoipa::path(delete, path = "/session", tag = "shopper", security(("session" = [])),
    responses((status = 204, description = "Signed out; the session is deleted on the server"), ShopperErrors))]
pub async fn sign_out(signed_in: SignedIn) -> Result<StatusCode, ApiError> {
    session::sign_out(&signed_in.session).await?;
    tracing::info!(shopper_id = %signed_in.shopper_id, "shopper signed out");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/me` -> the signed-in shopper and their accounts.
#[utoipa::path(get, path = "/me", tag = "shopper", security(("session" = [])),
    responses((status = 200, description = "The signed-in shopper and their accounts", body = Me), ShopperErrors))]
pub async fn me(State(state): State<AppState>, signed_in: SignedIn) -> Result<Json<Me>, ApiError> {
    let email = shoppers::email(&state.db, signed_in.shopper_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let accounts = shoppers::accounts(&state.db, signed_in.shopper_id).await?;
    Ok(Json(Me {
        shopper_id: signed_in.shopper_id,
        email,
        accounts,
    }))
}
