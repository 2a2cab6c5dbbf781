//! The state every handler shares: one cheap-to-clone struct.

use crate::platform::Platform;
use crate::tokens::TokenStore;
use callback_signing::CallbackSecret;
use secrecy::SecretString;
use sqlx::PgPool;
use std::sync::Arc;
use uuid::Uuid;

/// Shared handles. Cloning copies pointers only.
#[derive(Clone)]
pub struct AppState {
    /// PostgreSQL: the guarantee.
    pub db: PgPool,
    /// Redis request tokens: the fast helper.
    pub tokens: TokenStore,
    /// Verifies callback signatures.
    pub webhook: CallbackSecret,
    /// Bearer token of the admin API; `None` switches it off.
    pub admin_token: Option<Arc<SecretString>>,
    /// The payment platform.
    pub platform: Platform,
    /// The demo account, when demo mode is on.
    pub demo_account: Option<Uuid>,
}
