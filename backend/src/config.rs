//! Configuration from the environment (every variable is explained in `.env.example`).

use clap::Parser;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything the backend needs to start. `Config::default()` equals the documented defaults.
#[derive(Debug, Clone, Parser)]
#[command(name = "backend", about = "The exactly-once checkout backend", version)]
pub struct Config {
    /// PostgreSQL; the database is created if missing and migrated at start.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/checkout"
    )]
    pub database_url: String,

    /// Redis, used as the request-token store only.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,

    /// Prefix of every Redis key we write (tests give each run its own).
    #[arg(long, env = "REDIS_KEY_PREFIX", default_value = "checkout:")]
    pub redis_key_prefix: String,

    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "BIND_ADDR", default_value = "127.0.0.1:3000")]
    pub bind_addr: SocketAddr,

    /// How long a request token stays valid, in seconds.
    #[arg(long, env = "TOKEN_TTL_SECS", default_value_t = 900)]
    pub token_ttl_secs: u64,

    /// Standard Webhooks secret (`whsec_` + base64) callbacks are signed with.
    /// When unset a random one is made for this process (development only).
    #[arg(long, env = "WEBHOOK_SECRET")]
    pub webhook_secret: Option<String>,

    /// Bearer token for `/api/admin/*`; the admin API answers 404 when unset.
    #[arg(long, env = "ADMIN_TOKEN")]
    pub admin_token: Option<String>,

    /// Directory of the built payment page (`trunk build --release` writes `dist/`).
    #[arg(long, env = "STATIC_DIR")]
    pub static_dir: Option<PathBuf>,

    /// Demo mode: make a demo account with a starting balance and serve `GET /api/demo`.
    #[arg(long, env = "DEMO", default_value_t = false)]
    pub demo: bool,

    /// The payment platform (e.g. `http://127.0.0.1:4000` for `platform-sim`).
    /// Unset: the same simulator runs inside this process.
    #[arg(long, env = "PLATFORM_URL")]
    pub platform_url: Option<String>,

    /// How long the in-process sandbox platform waits before delivering a callback, in ms.
    #[arg(long, env = "SANDBOX_CALLBACK_DELAY_MS", default_value_t = 500)]
    pub sandbox_callback_delay_ms: u64,

    /// Fault injection for tests only: `name=probability,...` (see `faults.rs`). Never set in production.
    #[arg(long, env = "CRASH_POINTS")]
    pub crash_points: Option<String>,

    /// Seed of the crash-point dice, so a failing fault run can be reproduced.
    #[arg(long, env = "CRASH_SEED", default_value_t = 0)]
    pub crash_seed: u64,

    /// Largest number of PostgreSQL connections.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 20)]
    pub database_max_connections: u32,
}

impl Default for Config {
    fn default() -> Self {
        // Parsing no arguments yields the documented defaults without reading the environment.
        Self {
            database_url: "postgres://postgres@127.0.0.1:5432/checkout".into(),
            redis_url: "redis://127.0.0.1:6379".into(),
            redis_key_prefix: "checkout:".into(),
            bind_addr: SocketAddr::from(([127, 0, 0, 1], 3000)),
            token_ttl_secs: 900,
            webhook_secret: None,
            admin_token: None,
            static_dir: None,
            demo: false,
            sandbox_callback_delay_ms: 500,
            platform_url: None,
            database_max_connections: 20,
            crash_points: None,
            crash_seed: 0,
        }
    }
}
