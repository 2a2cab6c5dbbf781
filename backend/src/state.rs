//! The state every handler shares: one pointer to the shared handles.

use crate::http::limits::Limits;
use crate::infra::tokens::TokenStore;
use crate::platform::Platform;
use api_types::api::DemoShopper;
use callback_signing::CallbackSecret;
use secrecy::SecretString;
use sqlx::PgPool;
use std::ops::Deref;
use std::sync::Arc;

/// The state of every handler and middleware: one pointer to [`Handles`].
/// axum clones the state for every extractor and middleware of every request;
/// behind one `Arc` that is one reference count, not one per handle (cloning
/// and dropping the handles one by one was 5 % of the backend's CPU per
/// callback in the benchmark's profile).
#[derive(Clone)]
pub struct AppState(Arc<Handles>);

impl AppState {
    /// The state holding `handles`.
    pub fn new(handles: Handles) -> Self {
        Self(Arc::new(handles))
    }
}

impl Deref for AppState {
    type Target = Handles;

    fn deref(&self) -> &Handles {
        &self.0
    }
}

/// Shared handles, read through [`AppState`].
pub struct Handles {
    /// PostgreSQL: the guarantee.
    pub db: PgPool,
    /// Connections of `db` the callback statement keeps between callbacks.
    pub warm: crate::db::warm::WarmConnections,
    /// Redis request tokens: the fast helper.
    pub tokens: TokenStore,
    /// Verifies callback signatures.
    pub webhook: CallbackSecret,
    /// Bearer token of the admin API; `None` switches it off.
    pub admin_token: Option<Arc<SecretString>>,
    /// What an operator session must match: the admin token's fingerprint and
    /// its absolute lifetime.
    pub operator_sessions: crate::http::auth::operator::OperatorSessions,
    /// Hashes merchants' API keys (`MERCHANT_KEY_SECRET`).
    pub merchant_keys: crate::merchants::KeyHasher,
    /// The demo's partner shop, in demo mode where no money moves.
    pub demo_partner: Option<Arc<DemoPartner>>,
    /// The payment platform.
    pub platform: Platform,
    /// Demo shoppers may sign in: demo mode is on and no money moves
    /// ([`crate::http::routes::demo::shoppers_allowed`], the rule that makes them).
    pub demo_shoppers_allowed: bool,
    /// The demo shoppers' sign-in details (empty unless `demo_shoppers_allowed`).
    pub demo_shoppers: Arc<Vec<DemoShopper>>,
    /// Rate limits.
    pub limits: Limits,
    /// The origin the page is served from (`pay_url`s start with it).
    pub public_origin: Arc<str>,
    /// Seconds a new order stays payable.
    pub order_ttl_secs: u64,
    /// Load balancers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: crate::http::extract::TrustedProxies,
    /// Serving or draining (`/readyz`).
    pub shutdown: crate::infra::shutdown::Shutdown,
    /// Callback ids known processed, and the group-commit log of duplicates.
    pub seen: crate::duplicates::SeenCallbacks,
    /// The record of accepted hand-overs (group commit).
    pub submissions: crate::platform::dispatcher::Submissions,
    /// The record of issued request tokens (group commit).
    pub token_records: crate::db::orders::TokenRecords,
    /// What `/healthz` last found of PostgreSQL and Redis (logs changes).
    pub health_log: crate::infra::health::HealthLog,
}

/// The demo's partner shop (`http::routes::partner`): a second merchant whose
/// server is played by this backend, with its key and where it calls the API.
pub struct DemoPartner {
    /// Its API key, made at start and kept only here.
    pub key: SecretString,
    /// This backend, as the partner's server calls it (`http://host:port`).
    pub api: String,
    /// Where the payment page sends its shoppers back (`PUBLIC_ORIGIN`).
    pub public_origin: String,
    /// The partner server's HTTP client, made once (its connections reused).
    pub http: reqwest::Client,
}
