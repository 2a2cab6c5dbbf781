//! Shoppers' sessions: `tower-sessions` with its PostgreSQL store, so any
//! backend instance serves any shopper and a restart signs nobody out.
//!
//! The cookie is `HttpOnly`, `SameSite=Lax`, `Path=/`, `Secure` with
//! `COOKIE_SECURE=true`; a session ends after `SESSION_IDLE_SECS` without a
//! request (see `keep_alive`), or at sign-out, when its row is deleted. A
//! sign-in of either kind, shopper or operator, starts from an empty session
//! with a new id (`start_afresh`), so a cookie planted before sign-in is
//! worthless after it and no right the session held before carries over.
//!
//! Operators' sessions ([`Operator`]) also end `OPS_SESSION_MAX_SECS` (8 h)
//! after sign-in however busy they are, and as soon as `ADMIN_TOKEN` is no
//! longer the token they were obtained with ([`OperatorSessions`](super::operator::OperatorSessions)).

use super::operator::AdminTokenFingerprint;
use crate::db::warm::WarmConnections;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sqlx::PgPool;
use std::time::Duration;
use tower_sessions::cookie::SameSite;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};
use tower_sessions::{Expiry, Session, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;
use uuid::Uuid;

/// Name of the session cookie.
pub const COOKIE_NAME: &str = "checkout_session";
/// The session's key holding the signed-in shopper's id.
const SHOPPER_KEY: &str = "shopper_id";
/// The session's key marking a demo shopper's session.
const DEMO_KEY: &str = "demo";
/// The session's key holding a signed-in operator's name (`/api/ops/*`).
const OPERATOR_KEY: &str = "operator";
/// The session's key holding the fingerprint of the admin token an operator
/// signed in with ([`AdminTokenFingerprint`]), in hex.
const ADMIN_TOKEN_KEY: &str = "admin_token_fingerprint";
/// The session's key holding when an operator signed in (Unix seconds).
const SIGNED_IN_AT_KEY: &str = "signed_in_at";
/// The session's key holding when it was last saved (Unix seconds).
const SAVED_AT_KEY: &str = "saved_at";
/// A session is saved again once this share of its idle time has passed since
/// it was last saved ([`keep_alive`]).
const RESAVE_FRACTION: u32 = 8;

/// The layer that loads and saves sessions ([`Sessions`], loading over
/// `warm`); expired rows are deleted every 10 minutes. The table
/// (`tower_sessions.session`) is created with the migrations
/// ([`crate::schema`]), so the serving role needs no DDL here.
pub async fn layer(
    db: &PgPool,
    warm: WarmConnections,
    idle: Duration,
    secure: bool,
) -> anyhow::Result<SessionManagerLayer<Sessions>> {
    let store = Sessions::new(db, warm);
    let sweeper = store.store.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(600));
        loop {
            every.tick().await;
            if let Err(err) = sweeper.delete_expired().await {
                tracing::warn!(error = %err, "could not delete expired sessions");
            }
        }
    });
    let idle = tower_sessions::cookie::time::Duration::seconds(
        i64::try_from(idle.as_secs()).unwrap_or(i64::MAX),
    );
    Ok(SessionManagerLayer::new(store)
        .with_name(COOKIE_NAME)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_path("/")
        .with_secure(secure)
        .with_expiry(Expiry::OnInactivity(idle)))
}

/// The SQL of [`Sessions::load`]: the same as the library store's.
const LOAD_SQL: &str =
    r#"select data from "tower_sessions"."session" where id = $1 and expiry_date > $2"#;

/// The session store: `tower-sessions-sqlx-store`'s PostgreSQL store, whose
/// table, encoding and writes it keeps, with one change: the load every
/// signed-in request makes runs on a connection of [`WarmConnections`]. The
/// pool gives each connection back through a second round trip to PostgreSQL
/// (sqlx's ping, [`crate::db::warm`]), as many round trips as the load's one
/// short `SELECT` (docs/BENCHMARKS.md, "What each design choice bought",
/// measures what keeping the connection saved). Creating, saving and deleting
/// a session, rarer, go through the library's store unchanged.
#[derive(Clone, Debug)]
pub struct Sessions {
    store: PostgresStore,
    warm: WarmConnections,
}

impl Sessions {
    /// The store on `db`, loading over `warm` (connections of the same pool).
    pub fn new(db: &PgPool, warm: WarmConnections) -> Self {
        Self {
            store: PostgresStore::new(db.clone()),
            warm,
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for Sessions {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        self.store.create(record).await
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        self.store.save(record).await
    }

    async fn load(&self, session_id: &Id) -> session_store::Result<Option<Record>> {
        let row: Option<(Vec<u8>,)> = self
            .warm
            .run(async |conn| {
                sqlx::query_as(LOAD_SQL)
                    .bind(session_id.to_string())
                    .bind(time::OffsetDateTime::now_utc())
                    .fetch_optional(conn)
                    .await
            })
            .await
            .map_err(|err| session_store::Error::Backend(err.to_string()))?;
        row.map(|(data,)| {
            rmp_serde::from_slice(&data)
                .map_err(|err| session_store::Error::Decode(err.to_string()))
        })
        .transpose()
    }

    async fn delete(&self, session_id: &Id) -> session_store::Result<()> {
        self.store.delete(session_id).await
    }
}

/// The store's backend is PostgreSQL: its failures are an outage (503, the
/// caller retries), not a bug; a session that does not encode or decode is one.
fn store_error(err: tower_sessions::session::Error) -> ApiError {
    use tower_sessions::session::Error;
    use tower_sessions::session_store::Error as StoreError;
    match err {
        Error::Store(StoreError::Backend(message)) => ApiError::SessionStoreUnavailable(message),
        other => ApiError::internal(anyhow::anyhow!("session store: {other}")),
    }
}

/// Keeps a signed-in session alive while it is used.
///
/// The store writes a session's row, with its expiry pushed the idle time
/// ahead, only when the session changed during the request; reading it changes
/// nothing. Saving on every request would add a database write and commit to
/// each one (the pay, the status polls), so the session is marked changed, and
/// saved, only once an eighth of its idle time has passed since it was last
/// saved: an active session never expires, and one left alone ends between
/// `7/8 × idle` and `idle` after its last request. The idle time is the one
/// [`layer`] gave the session.
async fn keep_alive(session: &Session) -> Result<(), ApiError> {
    let Some(Expiry::OnInactivity(idle)) = session.expiry() else {
        return Ok(());
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let saved_at = session
        .get::<i64>(SAVED_AT_KEY)
        .await
        .map_err(store_error)?;
    let resave_after = idle.whole_seconds() / i64::from(RESAVE_FRACTION);
    if saved_at.is_none_or(|saved_at| now.saturating_sub(saved_at) >= resave_after) {
        stamp(session).await?;
    }
    Ok(())
}

/// Starts a sign-in of either kind: every key `session` held (a shopper's,
/// an operator's, the demo mark) is dropped and it gets a new id, its old row
/// deleted. So a cookie planted or copied before the sign-in is worthless after
/// it (no fixation), and signing in as a shopper with an operator's cookie (or
/// the other way round) keeps none of the rights the session had.
async fn start_afresh(session: &Session) -> Result<(), ApiError> {
    session.clear().await;
    session.cycle_id().await.map_err(store_error)
}

/// Makes `session` the shopper's, from an empty session (`start_afresh`).
pub async fn sign_in(session: &Session, shopper_id: Uuid, demo: bool) -> Result<(), ApiError> {
    start_afresh(session).await?;
    session
        .insert(SHOPPER_KEY, shopper_id)
        .await
        .map_err(store_error)?;
    session.insert(DEMO_KEY, demo).await.map_err(store_error)?;
    stamp(session).await
}

/// Records that `session` is being saved now (see [`keep_alive`]).
async fn stamp(session: &Session) -> Result<(), ApiError> {
    session
        .insert(
            SAVED_AT_KEY,
            time::OffsetDateTime::now_utc().unix_timestamp(),
        )
        .await
        .map_err(store_error)
}

/// Makes `session` an operator's, from an empty session (`start_afresh`):
/// the operator's name, the fingerprint of the admin token they signed in with
/// and when. A shopper's session never passes [`Operator`], and an operator's
/// never passes [`SignedIn`].
pub async fn sign_in_operator(
    session: &Session,
    name: &str,
    admin_token: &AdminTokenFingerprint,
) -> Result<(), ApiError> {
    start_afresh(session).await?;
    session
        .insert(OPERATOR_KEY, name)
        .await
        .map_err(store_error)?;
    session
        .insert(ADMIN_TOKEN_KEY, admin_token.to_hex())
        .await
        .map_err(store_error)?;
    session
        .insert(
            SIGNED_IN_AT_KEY,
            time::OffsetDateTime::now_utc().unix_timestamp(),
        )
        .await
        .map_err(store_error)?;
    stamp(session).await
}

/// Ends `session` on the server (its row is deleted) and clears the cookie.
pub async fn sign_out(session: &Session) -> Result<(), ApiError> {
    session.flush().await.map_err(store_error)
}

/// The signed-in shopper; `401 UNAUTHENTICATED` without a live session.
#[derive(Clone)]
pub struct SignedIn {
    /// The shopper's id.
    pub shopper_id: Uuid,
    /// Their session, for signing out.
    pub session: Session,
}

/// The shopper only: a session's id is the cookie's value, a bearer credential
/// that must never reach a log line (spans record their arguments with `Debug`).
impl std::fmt::Debug for SignedIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedIn")
            .field("shopper_id", &self.shopper_id)
            .finish_non_exhaustive()
    }
}

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|(_, text)| ApiError::internal(anyhow::anyhow!("session layer: {text}")))?;
        let shopper_id = session
            .get::<Uuid>(SHOPPER_KEY)
            .await
            .map_err(store_error)?
            .ok_or(ApiError::Unauthenticated)?;
        // A demo shopper's session dies when demo shoppers may no longer sign
        // in (demo mode off, or a platform that moves money): one rule for both.
        let demo = session
            .get::<bool>(DEMO_KEY)
            .await
            .map_err(store_error)?
            .unwrap_or(false);
        if demo && !state.demo_shoppers_allowed {
            return Err(ApiError::Unauthenticated);
        }
        keep_alive(&session).await?;
        Ok(Self {
            shopper_id,
            session,
        })
    }
}

/// The signed-in operator (the console, `/api/ops/*`); `401 UNAUTHENTICATED`
/// without an operator session.
#[derive(Clone)]
pub struct Operator {
    /// The name given at sign-in, kept with every resolution.
    pub name: String,
    /// Their session, for signing out.
    pub session: Session,
}

/// The name only: the session id is a bearer credential.
impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|(_, text)| ApiError::internal(anyhow::anyhow!("session layer: {text}")))?;
        let name = session
            .get::<String>(OPERATOR_KEY)
            .await
            .map_err(store_error)?
            .ok_or(ApiError::Unauthenticated)?;
        let fingerprint = session
            .get::<String>(ADMIN_TOKEN_KEY)
            .await
            .map_err(store_error)?;
        let signed_in_at = session
            .get::<i64>(SIGNED_IN_AT_KEY)
            .await
            .map_err(store_error)?;
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        if !state
            .operator_sessions
            .admits(fingerprint.as_deref(), signed_in_at, now)
        {
            return Err(ApiError::Unauthenticated);
        }
        keep_alive(&session).await?;
        Ok(Self { name, session })
    }
}
