//! Configuration from the environment (every variable is explained in `.env.example`).
//!
//! [`Config`] is what clap reads; [`Config::settle`] turns it into the choices
//! the backend starts with, refusing the combinations that would take money
//! wrongly: no `PLATFORM` at all, the sandbox in a build without it, a remote
//! platform without its URL or without a strong `WEBHOOK_SECRET`.

use crate::env;
use crate::infra::redis::{RedisTarget, SentinelAddr};
use api_types::PaymentMethod;
use callback_signing::{CallbackSecret, SecretError};
use checkout_rules::query_schedule::QuerySchedule;
use clap::Parser;
use secrecy::SecretString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Which payment platform takes the payments. Chosen explicitly: a deploy that
/// forgets it must not start, rather than silently simulate payments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlatformKind {
    /// The simulator, inside this process: payments are decided by rules (amounts
    /// ending in 13 minor units fail), no money moves. Development and demos only.
    Sandbox,
    /// A platform reached over HTTP at `PLATFORM_URL` speaking the checkout's own
    /// protocol with Standard Webhooks callbacks (`platform-sim` on its own, or a generic one).
    Remote,
    /// WeChat Pay API v3 (Native payments), at `WECHATPAY_API_URL`.
    Wechatpay,
    /// Alipay open platform (face-to-face QR payments), at `ALIPAY_GATEWAY_URL`.
    Alipay,
}

impl PlatformKind {
    /// The name used in `PLATFORM`, logs and `GET /api/platform`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sandbox => "sandbox",
            Self::Remote => "remote",
            Self::Wechatpay => "wechatpay",
            Self::Alipay => "alipay",
        }
    }

    /// Whether the shopper pays by scanning the platform's QR code.
    pub const fn pays_by_qr_code(self) -> bool {
        matches!(self, Self::Wechatpay | Self::Alipay)
    }

    /// The payment methods a pay may name, the default first. The sandbox
    /// offers the wallet (the demo's stored value, the default) and its
    /// simulated platform; a real platform takes the money from the shopper's
    /// own account with it, so no wallet of ours is involved.
    pub const fn payment_methods(self) -> &'static [PaymentMethod] {
        match self {
            Self::Sandbox => &[PaymentMethod::Wallet, PaymentMethod::Platform],
            Self::Remote | Self::Wechatpay | Self::Alipay => &[PaymentMethod::Platform],
        }
    }

    /// The method a pay asking for `asked` (or nothing) uses: the default when
    /// it names none, `None` when it names one this platform does not offer.
    pub fn payment_method(self, asked: Option<PaymentMethod>) -> Option<PaymentMethod> {
        let offered = self.payment_methods();
        match asked {
            None => offered.first().copied(),
            Some(method) => offered.contains(&method).then_some(method),
        }
    }
}

/// Everything the backend needs to start. `Config::default()` equals the
/// documented defaults, with no platform chosen.
/// A service's URL (`DATABASE_URL`, `REDIS_URL`), which may carry a password:
/// `Debug` and `Display` show it with the password masked (`***`); only
/// [`ServiceUrl::expose`] gives the URL itself, to connect with.
#[derive(Clone, PartialEq, Eq)]
pub struct ServiceUrl(String);

impl ServiceUrl {
    /// The URL itself, password included.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for ServiceUrl {
    fn from(url: String) -> Self {
        Self(url)
    }
}

impl From<&str> for ServiceUrl {
    fn from(url: &str) -> Self {
        Self(url.to_owned())
    }
}

impl std::str::FromStr for ServiceUrl {
    type Err = std::convert::Infallible;
    fn from_str(url: &str) -> Result<Self, Self::Err> {
        Ok(Self::from(url))
    }
}

impl std::fmt::Display for ServiceUrl {
    /// `scheme://user:***@host/...` when there is a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = &self.0;
        let masked = url.split_once("://").and_then(|(scheme, rest)| {
            let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(authority_end);
            let (userinfo, host) = authority.rsplit_once('@')?;
            let user = userinfo.split_once(':').map(|(user, _)| user)?;
            Some(format!("{scheme}://{user}:***@{host}{tail}"))
        });
        f.write_str(masked.as_deref().unwrap_or(url))
    }
}

impl std::fmt::Debug for ServiceUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[derive(Debug, Clone, Parser)]
#[command(name = "backend", about = "The exactly-once checkout backend", version)]
pub struct Config {
    /// PostgreSQL, as the role the app serves with. Without DATABASE_MIGRATION_URL
    /// the database is also created if missing and migrated at start with it.
    #[arg(
        long,
        env = env::DATABASE_URL,
        default_value = "postgres://postgres@127.0.0.1:5432/checkout",
        hide_env_values = true,
        global = true
    )]
    pub database_url: ServiceUrl,

    /// PostgreSQL as the role that owns the schema: when set, creating the
    /// database and the migrations use it (over one short-lived connection), and
    /// the role in DATABASE_URL only reads and writes rows (docs/SECURITY.md).
    #[arg(
        long,
        env = env::DATABASE_MIGRATION_URL,
        hide_env_values = true,
        global = true,
        value_parser = secret
    )]
    pub database_migration_url: Option<SecretString>,

    /// Redis, used as the request-token store only.
    #[arg(long, env = env::REDIS_URL, default_value = "redis://127.0.0.1:6379", hide_env_values = true)]
    pub redis_url: ServiceUrl,

    /// Prefix of every Redis key we write (tests give each run its own).
    #[arg(long, env = env::REDIS_KEY_PREFIX, default_value = "checkout:")]
    pub redis_key_prefix: String,

    /// Redis Sentinel addresses, `host:port` separated by commas: when set, the
    /// primary is the one these sentinels name for REDIS_MASTER_NAME (followed
    /// across failovers), and REDIS_URL gives only its username, password and
    /// database. Empty: REDIS_URL is the one Redis.
    #[arg(long, env = env::REDIS_SENTINELS, default_value = "")]
    pub redis_sentinels: String,

    /// The name the sentinels monitor the Redis primary under (with REDIS_SENTINELS).
    #[arg(long, env = env::REDIS_MASTER_NAME, default_value = "checkout")]
    pub redis_master_name: String,

    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = env::BIND_ADDR, default_value = "127.0.0.1:3000")]
    pub bind_addr: SocketAddr,

    /// A second address serving only `GET /metrics`, without the admin token,
    /// for a scraper on a private network. Unset: `/metrics` is served on the
    /// main address, to the admin token only.
    #[arg(long, env = env::METRICS_BIND_ADDR)]
    pub metrics_bind_addr: Option<SocketAddr>,

    /// Seconds between SIGTERM and the listener closing: `/readyz` answers 503
    /// meanwhile, so the load balancer's health checks take the instance out
    /// before it stops accepting. A second SIGTERM or SIGINT cuts it short.
    #[arg(long, env = env::DRAIN_SECS, default_value_t = 5)]
    pub drain_secs: u64,

    /// Seconds requests in flight (and workers' last rounds) get once the
    /// listener has closed; whatever still runs then is cut, and the process exits 0.
    #[arg(long, env = env::DRAIN_DEADLINE_SECS, default_value_t = 20)]
    pub drain_deadline_secs: u64,

    /// How long a request token stays valid, in seconds.
    #[arg(long, env = env::TOKEN_TTL_SECS, default_value_t = 900)]
    pub token_ttl_secs: u64,

    /// How long an order may stay unpaid, in seconds: after that it is CLOSED
    /// (if nobody started paying it) and can never be paid.
    #[arg(long, env = env::ORDER_TTL_SECS, default_value_t = 1_800)]
    pub order_ttl_secs: u64,

    /// The payment platform: `sandbox` (in-process simulator, no money moves),
    /// `remote` (our protocol at PLATFORM_URL), `wechatpay` (WeChat Pay API v3,
    /// WECHATPAY_*) or `alipay` (Alipay open platform, ALIPAY_*). Required.
    #[arg(long, env = env::PLATFORM, value_enum)]
    pub platform: Option<PlatformKind>,

    /// Base URL of the remote payment platform (e.g. `http://127.0.0.1:4000` for `platform-sim`).
    #[arg(long, env = env::PLATFORM_URL)]
    pub platform_url: Option<String>,

    /// Standard Webhooks secret (`whsec_` + base64 of at least 24 bytes) the
    /// platform signs callbacks with. Required with PLATFORM=remote; the sandbox
    /// makes a random one when unset.
    #[arg(long, env = env::WEBHOOK_SECRET, hide_env_values = true, value_parser = secret)]
    pub webhook_secret: Option<SecretString>,

    /// Bearer token for `/api/admin/*`; the admin API answers 404 when unset.
    #[arg(long, env = env::ADMIN_TOKEN, hide_env_values = true, value_parser = secret)]
    pub admin_token: Option<SecretString>,

    /// A key of the shop's own merchant account (`/api/merchant/*`), at least 32
    /// characters: registered at start, so a deployment made before merchants
    /// had keys of their own keeps working. Unset: that key stops working;
    /// merchants made with `POST /api/admin/merchants` have their own keys.
    #[arg(long, env = env::MERCHANT_API_KEY, hide_env_values = true, value_parser = secret)]
    pub merchant_api_key: Option<SecretString>,

    /// The HMAC key merchants' API keys are stored hashed under, at least 32
    /// characters, the same on every instance (changing it invalidates every
    /// key). Unset: a fixed key (docs/SECURITY.md says what that gives up).
    #[arg(long, env = env::MERCHANT_KEY_SECRET, hide_env_values = true, value_parser = secret)]
    pub merchant_key_secret: Option<SecretString>,

    /// The origin shoppers' browsers load the page from (`scheme://host[:port]`):
    /// state-changing requests from any other site are refused (CSRF), and
    /// merchant orders' `pay_url`s start with it.
    #[arg(long, env = env::PUBLIC_ORIGIN, default_value = "http://127.0.0.1:3000")]
    pub public_origin: String,

    /// Load balancers whose `X-Forwarded-For` is believed (comma-separated IP
    /// addresses, e.g. HAProxy's `127.0.0.1`): a request from one of them is
    /// counted, for the per-address rate limits, against the address it
    /// appended. Empty: the TCP peer is the client, whatever the header says.
    #[arg(long, env = env::TRUSTED_PROXIES, value_delimiter = ',', num_args = 0..)]
    pub trusted_proxies: Vec<std::net::IpAddr>,

    /// The origin (`scheme://host[:port]`) the payment platform posts its
    /// notifications to, as the platform reaches this backend: a public
    /// HTTPS origin for a real platform, the load balancer's behind one.
    /// Default: the address this process listens on.
    #[arg(long, env = env::NOTIFY_BASE_URL)]
    pub notify_base_url: Option<String>,

    /// Mark the session cookie `Secure` and send HSTS: set it whenever the page is served over HTTPS.
    #[arg(long, env = env::COOKIE_SECURE, default_value_t = false)]
    pub cookie_secure: bool,

    /// A shopper's session ends after this many seconds without a request.
    #[arg(long, env = env::SESSION_IDLE_SECS, default_value_t = 43_200)]
    pub session_idle_secs: u64,

    /// An operator's console session ends this many seconds after sign-in,
    /// however busy (and, like any session, after SESSION_IDLE_SECS idle).
    #[arg(long, env = env::OPS_SESSION_MAX_SECS, default_value_t = 28_800)]
    pub ops_session_max_secs: u64,

    /// Rate limits (0 switches one off); see `crate::http::limits` for what each counts.
    #[command(flatten)]
    pub limits: crate::http::limits::LimitsConfig,

    /// WeChat Pay API v3 settings (PLATFORM=wechatpay).
    #[command(flatten)]
    pub wechatpay: WechatPayConfig,

    /// Alipay open platform settings (PLATFORM=alipay).
    #[command(flatten)]
    pub alipay: AlipayConfig,

    /// Directory of the built payment page (`trunk build --release` writes `dist/`).
    #[arg(long, env = env::STATIC_DIR)]
    pub static_dir: Option<PathBuf>,

    /// Demo mode: seed the catalogue and, with PLATFORM=sandbox, two demo shoppers
    /// whose credentials the sign-in page shows.
    #[arg(long, env = env::DEMO, default_value_t = false)]
    pub demo: bool,

    /// How long the in-process sandbox platform waits before delivering a callback, in ms.
    #[arg(long, env = env::SANDBOX_CALLBACK_DELAY_MS, default_value_t = 500)]
    pub sandbox_callback_delay_ms: u64,

    /// Make the in-process sandbox decide payments but never post their
    /// callbacks, as a platform whose notifications are lost: the active query
    /// alone settles them (to try it; see QUERY_AFTER_SECS).
    #[arg(long, env = env::SANDBOX_DROP_CALLBACKS, default_value_t = false)]
    pub sandbox_drop_callbacks: bool,

    /// Seconds after a hand-over before the platform is first asked about a
    /// payment that has no result yet.
    #[arg(long, env = env::QUERY_AFTER_SECS, default_value_t = 60)]
    pub query_after_secs: u64,

    /// Seconds between later queries of a payment without a result.
    #[arg(long, env = env::QUERY_EVERY_SECS, default_value_t = 300)]
    pub query_every_secs: u64,

    /// Queries after the first without a result before the payment is flagged
    /// STUCK_PAYMENT for a person (the queries go on).
    #[arg(long, env = env::QUERY_RETRIES, default_value_t = 5)]
    pub query_retries: u32,

    /// Largest number of PostgreSQL connections.
    #[arg(long, env = env::DATABASE_MAX_CONNECTIONS, default_value_t = 20)]
    pub database_max_connections: u32,

    /// Time of day (`HH:MM`, UTC) from which the daily worker reconciles the
    /// previous day's bill (once; see `backend reconcile`).
    #[arg(long, env = env::RECONCILE_AT_UTC, default_value = "10:00",
        value_parser = checkout_rules::reconcile::parse_time_of_day)]
    pub reconcile_at_utc: time::Time,

    /// Run the daily reconciliation worker in this process (never with the sandbox).
    #[arg(long, env = env::RECONCILE_DAILY, default_value_t = true,
        action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub reconcile_daily: bool,

    /// What to do instead of serving.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// A one-shot job instead of serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Subcommand)]
pub enum Command {
    /// Create the database if missing, apply the migrations and create the
    /// session table, with DATABASE_MIGRATION_URL (else DATABASE_URL); print what
    /// was done and exit. For deploys that migrate in a step of their own.
    Migrate,
    /// Download the platform's bill of one UTC day (PLATFORM=remote) and compare
    /// it with the ledger in DATABASE_URL; print a summary per class and every
    /// mismatch (each also an anomaly). Again for the same day: nothing new is
    /// stored. Exit 0 when reconciled (mismatches or not), 1 when it could not be.
    Reconcile {
        /// The day, `YYYY-MM-DD` (UTC); it must be over.
        #[arg(long, value_parser = checkout_rules::reconcile::parse_date)]
        date: time::Date,
    },
}

fn secret(text: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::from(text.to_owned()))
}

impl Config {
    /// How the instance drains on SIGTERM.
    pub fn drain_timing(&self) -> crate::infra::shutdown::DrainTiming {
        crate::infra::shutdown::DrainTiming {
            drain: Duration::from_secs(self.drain_secs),
            deadline: Duration::from_secs(self.drain_deadline_secs),
        }
    }

    /// Where the request-token store finds Redis: `REDIS_URL` directly, or
    /// through `REDIS_SENTINELS` (refused unless each is `host:port`).
    pub fn redis_target(&self) -> Result<RedisTarget, ConfigError> {
        let sentinels = SentinelAddr::parse_list(&self.redis_sentinels)
            .map_err(ConfigError::BadRedisSentinels)?;
        if sentinels.is_empty() {
            return Ok(RedisTarget::Direct {
                url: self.redis_url.expose().to_owned(),
            });
        }
        let master_name = self.redis_master_name.trim();
        if master_name.is_empty() {
            return Err(ConfigError::NoRedisMasterName);
        }
        Ok(RedisTarget::Sentinel {
            sentinels,
            master_name: master_name.to_owned(),
            url: self.redis_url.expose().to_owned(),
        })
    }

    /// When the platform is asked about payments without a result.
    pub fn query_schedule(&self) -> QuerySchedule {
        QuerySchedule {
            after: Duration::from_secs(self.query_after_secs),
            every: Duration::from_secs(self.query_every_secs),
            retries: self.query_retries,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        // Parsing no arguments yields the documented defaults without reading the environment.
        Self {
            database_url: "postgres://postgres@127.0.0.1:5432/checkout".into(),
            database_migration_url: None,
            redis_url: "redis://127.0.0.1:6379".into(),
            redis_key_prefix: "checkout:".into(),
            redis_sentinels: String::new(),
            redis_master_name: "checkout".into(),
            bind_addr: SocketAddr::from(([127, 0, 0, 1], 3000)),
            metrics_bind_addr: None,
            drain_secs: 5,
            drain_deadline_secs: 20,
            token_ttl_secs: 900,
            order_ttl_secs: 1_800,
            platform: None,
            platform_url: None,
            webhook_secret: None,
            admin_token: None,
            merchant_api_key: None,
            merchant_key_secret: None,
            public_origin: "http://127.0.0.1:3000".into(),
            trusted_proxies: Vec::new(),
            notify_base_url: None,
            cookie_secure: false,
            session_idle_secs: 43_200,
            ops_session_max_secs: 28_800,
            limits: crate::http::limits::LimitsConfig::default(),
            wechatpay: WechatPayConfig::default(),
            alipay: AlipayConfig::default(),
            static_dir: None,
            demo: false,
            sandbox_callback_delay_ms: 500,
            sandbox_drop_callbacks: false,
            query_after_secs: 60,
            query_every_secs: 300,
            query_retries: 5,
            database_max_connections: 20,
            reconcile_at_utc: time::macros::time!(10:00),
            reconcile_daily: true,
            command: None,
        }
    }
}

/// The platform the backend will hand payments to, settled from the configuration.
#[derive(Debug, Clone)]
pub enum PlatformChoice {
    /// The in-process simulator (only in builds with the `sandbox` feature).
    Sandbox {
        /// How long the simulator takes to decide a payment.
        callback_delay: Duration,
        /// Decide payments but post no callbacks.
        drop_callbacks: bool,
    },
    /// A platform over HTTP.
    Remote {
        /// Its base URL.
        url: String,
    },
    /// WeChat Pay API v3, its keys loaded.
    Wechatpay(Box<WechatPaySettings>),
    /// The Alipay open platform, its keys loaded.
    Alipay(Box<AlipaySettings>),
}

impl PlatformChoice {
    /// True when no real money can move: the in-process sandbox, or a
    /// platform API on this machine's loopback (platform-sim standing in for
    /// WeChat Pay, Alipay or a remote platform). Only then are demo shoppers with
    /// public passwords made.
    pub fn is_simulated(&self) -> bool {
        let loopback = |url: &str| {
            let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
            let host = rest.split(['/', '?']).next().unwrap_or_default();
            let host = host.rsplit_once(':').map_or(host, |(host, _)| host);
            matches!(host, "127.0.0.1" | "localhost" | "[::1]")
        };
        match self {
            Self::Sandbox { .. } => true,
            Self::Remote { url } => loopback(url),
            Self::Wechatpay(settings) => loopback(&settings.api_url),
            Self::Alipay(settings) => loopback(&settings.gateway_url),
        }
    }

    /// The kind, for logs and the page.
    pub fn kind(&self) -> PlatformKind {
        match self {
            Self::Sandbox { .. } => PlatformKind::Sandbox,
            Self::Remote { .. } => PlatformKind::Remote,
            Self::Wechatpay(_) => PlatformKind::Wechatpay,
            Self::Alipay(_) => PlatformKind::Alipay,
        }
    }
}

/// What the backend starts with once the configuration has been checked.
#[derive(Debug, Clone)]
pub struct Settled {
    /// Where payments go.
    pub platform: PlatformChoice,
    /// The callback secret, and whether it was generated for this process.
    pub webhook_secret: CallbackSecret,
    /// True when no `WEBHOOK_SECRET` was given and the sandbox made one.
    pub secret_generated: bool,
    /// Where the request-token store finds Redis.
    pub redis: RedisTarget,
}

/// A configuration the backend refuses to start with. Each message is one line
/// that says what to set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No platform chosen.
    #[error(
        "PLATFORM is not set: set PLATFORM=sandbox for the in-process sandbox platform \
         (development and demos; no money moves), PLATFORM=wechatpay or PLATFORM=alipay with their \
         WECHATPAY_* or ALIPAY_* settings (docs/PLATFORMS.md), or PLATFORM=remote with \
         PLATFORM_URL=<platform base URL> and WEBHOOK_SECRET"
    )]
    NoPlatform,
    /// The sandbox asked of a build that does not contain it.
    #[error(
        "PLATFORM=sandbox, but this backend was built without the sandbox platform \
         (build with `--features sandbox`, or set PLATFORM=remote)"
    )]
    SandboxNotBuilt,
    /// A remote platform without its address.
    #[error(
        "PLATFORM=remote needs PLATFORM_URL (the platform's base URL, e.g. http://127.0.0.1:4000)"
    )]
    NoPlatformUrl,
    /// Outside the sandbox, callbacks must be checked against a real shared secret.
    #[error(
        "WEBHOOK_SECRET is not set: PLATFORM=remote needs the secret the platform signs callbacks \
         with (whsec_ + base64 of at least 24 bytes)"
    )]
    NoWebhookSecret,
    /// The secret given is not usable.
    #[error("WEBHOOK_SECRET is not usable: {0}")]
    BadWebhookSecret(SecretError),
    /// An admin token short enough to guess (an empty one, as a compose file
    /// makes from an unset variable, above all).
    #[error(
        "ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_CHARS} characters (it has {0}); \
         unset it to switch the admin API off, or make one with: head -c 24 /dev/urandom | base64"
    )]
    ShortAdminToken(usize),
    /// A merchant key short enough to guess.
    #[error(
        "MERCHANT_API_KEY must be at least {MIN_ADMIN_TOKEN_CHARS} characters (it has {0}); \
         unset it to switch the merchant API off, or make one with: head -c 24 /dev/urandom | base64"
    )]
    ShortMerchantKey(usize),
    /// A merchant key secret short enough to guess.
    #[error(
        "MERCHANT_KEY_SECRET must be at least {MIN_ADMIN_TOKEN_CHARS} characters (it has {0}); \
         make one with: head -c 32 /dev/urandom | base64"
    )]
    ShortMerchantKeySecret(usize),
    /// The public origin is not `scheme://host[:port]`.
    #[error(
        "PUBLIC_ORIGIN must be the origin the page is served from, scheme://host[:port] with \
         nothing after it (e.g. https://pay.example.com), not {0:?}"
    )]
    BadPublicOrigin(String),
    /// A WeChat Pay setting is missing or its key file is unusable.
    #[error("PLATFORM=wechatpay: {0}")]
    Wechatpay(String),
    /// An Alipay setting is missing or its key file is unusable.
    #[error("PLATFORM=alipay: {0}")]
    Alipay(String),
    /// `NOTIFY_BASE_URL` is not a bare `scheme://host[:port]`.
    #[error(
        "NOTIFY_BASE_URL must be an origin such as https://pay.example.com (no path), got {0:?}"
    )]
    BadNotifyBaseUrl(String),
    /// An address in `REDIS_SENTINELS` is not `host:port`.
    #[error(
        "REDIS_SENTINELS must be sentinel addresses host:port separated by commas \
         (e.g. 127.0.0.1:26379,127.0.0.1:26380): {0}"
    )]
    BadRedisSentinels(String),
    /// Sentinels without the name of the master they monitor.
    #[error("REDIS_MASTER_NAME is empty: with REDIS_SENTINELS it names the monitored master")]
    NoRedisMasterName,
}

/// The fewest characters an admin token may have.
pub const MIN_ADMIN_TOKEN_CHARS: usize = 32;

impl Config {
    /// Checks the combination and settles the platform and the callback secret.
    /// Runs before anything is connected, so a wrong deploy fails at once.
    pub fn settle(&self) -> Result<Settled, ConfigError> {
        use secrecy::ExposeSecret;
        if let Some(token) = &self.admin_token {
            let chars = token.expose_secret().chars().count();
            if chars < MIN_ADMIN_TOKEN_CHARS {
                return Err(ConfigError::ShortAdminToken(chars));
            }
        }
        if let Some(key) = &self.merchant_api_key {
            let chars = key.expose_secret().chars().count();
            if chars < MIN_ADMIN_TOKEN_CHARS {
                return Err(ConfigError::ShortMerchantKey(chars));
            }
        }
        if let Some(secret) = &self.merchant_key_secret {
            let chars = secret.expose_secret().chars().count();
            if chars < MIN_ADMIN_TOKEN_CHARS {
                return Err(ConfigError::ShortMerchantKeySecret(chars));
            }
        }
        if !is_origin(&self.public_origin) {
            return Err(ConfigError::BadPublicOrigin(self.public_origin.clone()));
        }
        if let Some(base) = self
            .notify_base_url
            .as_ref()
            .filter(|base| !is_origin(base))
        {
            return Err(ConfigError::BadNotifyBaseUrl(base.clone()));
        }
        let redis = self.redis_target()?;
        let given = self
            .webhook_secret
            .as_ref()
            .map(|text| CallbackSecret::parse(text.expose_secret()))
            .transpose()
            .map_err(ConfigError::BadWebhookSecret)?;
        let platform = match self.platform.ok_or(ConfigError::NoPlatform)? {
            PlatformKind::Sandbox if !cfg!(feature = "sandbox") => {
                return Err(ConfigError::SandboxNotBuilt);
            }
            PlatformKind::Sandbox => PlatformChoice::Sandbox {
                callback_delay: Duration::from_millis(self.sandbox_callback_delay_ms),
                drop_callbacks: self.sandbox_drop_callbacks,
            },
            PlatformKind::Remote => {
                let url = self
                    .platform_url
                    .clone()
                    .filter(|url| !url.trim().is_empty())
                    .ok_or(ConfigError::NoPlatformUrl)?;
                if given.is_none() {
                    return Err(ConfigError::NoWebhookSecret);
                }
                PlatformChoice::Remote { url }
            }
            PlatformKind::Wechatpay => PlatformChoice::Wechatpay(Box::new(
                self.wechatpay.load().map_err(ConfigError::Wechatpay)?,
            )),
            PlatformKind::Alipay => {
                PlatformChoice::Alipay(Box::new(self.alipay.load().map_err(ConfigError::Alipay)?))
            }
        };
        let secret_generated = given.is_none();
        Ok(Settled {
            platform,
            webhook_secret: given.unwrap_or_else(CallbackSecret::generate),
            secret_generated,
            redis,
        })
    }
}

/// WeChat Pay API v3: the merchant's ids, where its keys are, and where the
/// platform is. Read only with PLATFORM=wechatpay; `.env.example` and
/// docs/PLATFORMS.md say where each value comes from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WechatPayConfig {
    /// Base URL of the WeChat Pay API (platform-sim's address to run against it).
    #[arg(long, env = env::WECHATPAY_API_URL, default_value = WECHATPAY_API_URL_DEFAULT)]
    pub wechatpay_api_url: String,
    /// The merchant id (商户号, `mchid`).
    #[arg(long, env = env::WECHATPAY_MCHID)]
    pub wechatpay_mchid: Option<String>,
    /// The app id bound to the merchant (`appid`).
    #[arg(long, env = env::WECHATPAY_APPID)]
    pub wechatpay_appid: Option<String>,
    /// PEM file of the merchant API certificate's private key (`apiclient_key.pem`).
    #[arg(long, env = env::WECHATPAY_MERCHANT_KEY_FILE)]
    pub wechatpay_merchant_key_file: Option<PathBuf>,
    /// Serial number of the merchant API certificate.
    #[arg(long, env = env::WECHATPAY_MERCHANT_SERIAL)]
    pub wechatpay_merchant_serial: Option<String>,
    /// PEM file of the WeChat Pay platform public key (微信支付公钥).
    #[arg(long, env = env::WECHATPAY_PLATFORM_PUBLIC_KEY_FILE)]
    pub wechatpay_platform_public_key_file: Option<PathBuf>,
    /// The id (serial) of that platform public key, as sent in `Wechatpay-Serial`.
    #[arg(long, env = env::WECHATPAY_PLATFORM_SERIAL)]
    pub wechatpay_platform_serial: Option<String>,
    /// File holding the 32-character APIv3 key that decrypts notifications.
    #[arg(long, env = env::WECHATPAY_APIV3_KEY_FILE)]
    pub wechatpay_apiv3_key_file: Option<PathBuf>,
}

/// The real WeChat Pay API.
pub const WECHATPAY_API_URL_DEFAULT: &str = "https://api.mch.weixin.qq.com";

/// WeChat Pay settings with their keys loaded.
#[derive(Clone)]
pub struct WechatPaySettings {
    /// Base URL of the API, without a trailing `/`.
    pub api_url: String,
    /// The app id.
    pub appid: String,
    /// Signs our requests (holds the merchant id and serial).
    pub merchant: platform_protocols::wechatpay::MerchantSigner,
    /// Verifies the platform's answers and notifications.
    pub platform: platform_protocols::wechatpay::PlatformKey,
    /// Decrypts notification resources.
    pub apiv3_key: platform_protocols::ApiV3Key,
}

impl std::fmt::Debug for WechatPaySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        f.debug_struct("WechatPaySettings")
            .field("api_url", &self.api_url)
            .field("appid", &self.appid)
            .field("mchid", &self.merchant.mchid)
            .field("merchant_serial", &self.merchant.serial_no)
            .field("platform_serial", &self.platform.serial)
            .finish_non_exhaustive()
    }
}

impl WechatPayConfig {
    /// Checks every setting and loads the keys; the error names the variable to fix.
    pub fn load(&self) -> Result<WechatPaySettings, String> {
        use platform_protocols::keys::{PrivateKey, PublicKey, check_serial};
        fn required<'a, T>(value: &'a Option<T>, name: &str) -> Result<&'a T, String> {
            value.as_ref().ok_or_else(|| format!("{name} is not set"))
        }
        let text = |value: &Option<String>, name: &str| {
            required(value, name)
                .map(|v| v.trim().to_owned())
                .and_then(|v| {
                    if v.is_empty() {
                        Err(format!("{name} is empty"))
                    } else {
                        Ok(v)
                    }
                })
        };
        let mchid = text(&self.wechatpay_mchid, env::WECHATPAY_MCHID)?;
        let appid = text(&self.wechatpay_appid, env::WECHATPAY_APPID)?;
        let merchant_serial = text(
            &self.wechatpay_merchant_serial,
            env::WECHATPAY_MERCHANT_SERIAL,
        )?;
        check_serial(&merchant_serial)
            .map_err(|err| format!("{}: {err}", env::WECHATPAY_MERCHANT_SERIAL))?;
        let platform_serial = text(
            &self.wechatpay_platform_serial,
            env::WECHATPAY_PLATFORM_SERIAL,
        )?;
        check_serial(&platform_serial)
            .map_err(|err| format!("{}: {err}", env::WECHATPAY_PLATFORM_SERIAL))?;
        let key_file = required(
            &self.wechatpay_merchant_key_file,
            env::WECHATPAY_MERCHANT_KEY_FILE,
        )?;
        let merchant_key = PrivateKey::from_pem_file(key_file).map_err(|err| {
            format!(
                "{} ({}): {err}",
                env::WECHATPAY_MERCHANT_KEY_FILE,
                key_file.display()
            )
        })?;
        let public_file = required(
            &self.wechatpay_platform_public_key_file,
            env::WECHATPAY_PLATFORM_PUBLIC_KEY_FILE,
        )?;
        let platform_key = PublicKey::from_pem_file(public_file).map_err(|err| {
            format!(
                "{} ({}): {err}",
                env::WECHATPAY_PLATFORM_PUBLIC_KEY_FILE,
                public_file.display()
            )
        })?;
        let apiv3_file = required(
            &self.wechatpay_apiv3_key_file,
            env::WECHATPAY_APIV3_KEY_FILE,
        )?;
        let apiv3_key = platform_protocols::ApiV3Key::from_file(apiv3_file).map_err(|err| {
            format!(
                "{} ({}): {err}",
                env::WECHATPAY_APIV3_KEY_FILE,
                apiv3_file.display()
            )
        })?;
        let api_url = self
            .wechatpay_api_url
            .trim()
            .trim_end_matches('/')
            .to_owned();
        if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
            return Err(format!(
                "{} must be an http(s) URL, not {api_url:?}",
                env::WECHATPAY_API_URL
            ));
        }
        Ok(WechatPaySettings {
            api_url,
            appid,
            merchant: platform_protocols::wechatpay::MerchantSigner {
                mchid,
                serial_no: merchant_serial,
                key: merchant_key,
            },
            platform: platform_protocols::wechatpay::PlatformKey {
                serial: platform_serial,
                public_key: platform_key,
            },
            apiv3_key,
        })
    }
}

/// The Alipay open platform: the application, where its keys are, and where
/// the gateway is. Read only with PLATFORM=alipay; `.env.example` says where
/// each value comes from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AlipayConfig {
    /// The gateway URL (platform-sim's `http://HOST:PORT/gateway.do` to run against it).
    #[arg(long, env = env::ALIPAY_GATEWAY_URL, default_value = ALIPAY_GATEWAY_URL_DEFAULT)]
    pub alipay_gateway_url: String,
    /// The application id (`app_id`) of the merchant's Alipay application.
    #[arg(long, env = env::ALIPAY_APP_ID)]
    pub alipay_app_id: Option<String>,
    /// PEM file of the application's private key (应用私钥): signs every request.
    #[arg(long, env = env::ALIPAY_APP_PRIVATE_KEY_FILE)]
    pub alipay_app_private_key_file: Option<PathBuf>,
    /// PEM file of the Alipay public key (支付宝公钥): verifies every answer and notification.
    #[arg(long, env = env::ALIPAY_PUBLIC_KEY_FILE)]
    pub alipay_public_key_file: Option<PathBuf>,
}

/// The real Alipay gateway.
pub const ALIPAY_GATEWAY_URL_DEFAULT: &str = "https://openapi.alipay.com/gateway.do";

/// Alipay settings with their keys loaded.
#[derive(Clone)]
pub struct AlipaySettings {
    /// The gateway URL, as given (without a trailing `/`).
    pub gateway_url: String,
    /// The application id: requests carry it, answers and notifications must.
    pub app_id: String,
    /// Signs our requests (RSA2).
    pub app_private_key: platform_protocols::keys::PrivateKey,
    /// Verifies Alipay's answers and notifications.
    pub alipay_public_key: platform_protocols::keys::PublicKey,
}

impl std::fmt::Debug for AlipaySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys: the public one by its fingerprint only.
        f.debug_struct("AlipaySettings")
            .field("gateway_url", &self.gateway_url)
            .field("app_id", &self.app_id)
            .field("alipay_public_key", &self.alipay_public_key.fingerprint())
            .finish_non_exhaustive()
    }
}

impl AlipayConfig {
    /// Checks every setting and loads the keys; the error names the variable to fix.
    pub fn load(&self) -> Result<AlipaySettings, String> {
        use platform_protocols::keys::{PrivateKey, PublicKey};
        let app_id = self
            .alipay_app_id
            .as_deref()
            .ok_or_else(|| format!("{} is not set", env::ALIPAY_APP_ID))?
            .trim()
            .to_owned();
        if app_id.is_empty() {
            return Err(format!("{} is empty", env::ALIPAY_APP_ID));
        }
        let key_file = self
            .alipay_app_private_key_file
            .as_ref()
            .ok_or_else(|| format!("{} is not set", env::ALIPAY_APP_PRIVATE_KEY_FILE))?;
        let app_private_key = PrivateKey::from_pem_file(key_file).map_err(|err| {
            format!(
                "{} ({}): {err}",
                env::ALIPAY_APP_PRIVATE_KEY_FILE,
                key_file.display()
            )
        })?;
        let public_file = self
            .alipay_public_key_file
            .as_ref()
            .ok_or_else(|| format!("{} is not set", env::ALIPAY_PUBLIC_KEY_FILE))?;
        let alipay_public_key = PublicKey::from_pem_file(public_file).map_err(|err| {
            format!(
                "{} ({}): {err}",
                env::ALIPAY_PUBLIC_KEY_FILE,
                public_file.display()
            )
        })?;
        let gateway_url = self
            .alipay_gateway_url
            .trim()
            .trim_end_matches('/')
            .to_owned();
        if !(gateway_url.starts_with("https://") || gateway_url.starts_with("http://")) {
            return Err(format!(
                "{} must be an http(s) URL, not {gateway_url:?}",
                env::ALIPAY_GATEWAY_URL
            ));
        }
        Ok(AlipaySettings {
            gateway_url,
            app_id,
            app_private_key,
            alipay_public_key,
        })
    }
}

/// `scheme://host[:port]` exactly, as browsers send it in `Origin`.
fn is_origin(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_origin_must_be_an_origin() {
        for good in [
            "http://127.0.0.1:3000",
            "https://pay.example.com",
            "http://[::1]:8080",
        ] {
            assert!(is_origin(good), "{good}");
        }
        for bad in [
            "",
            "127.0.0.1:3000",
            "https://pay.example.com/",
            "https://a.b/c",
            "ftp://x",
            "https://",
        ] {
            assert!(!is_origin(bad), "{bad}");
            let config = Config {
                platform: Some(PlatformKind::Remote),
                platform_url: Some("http://127.0.0.1:4000".into()),
                webhook_secret: Some(strong_secret()),
                public_origin: bad.into(),
                ..Config::default()
            };
            assert_eq!(
                config.settle().err(),
                Some(ConfigError::BadPublicOrigin(bad.into()))
            );
        }
    }

    #[test]
    fn the_notify_base_url_must_be_an_origin_when_given() {
        let with = |base: Option<&str>| Config {
            platform: Some(PlatformKind::Remote),
            platform_url: Some("http://127.0.0.1:4000".into()),
            webhook_secret: Some(strong_secret()),
            notify_base_url: base.map(str::to_owned),
            ..Config::default()
        };
        assert!(with(None).settle().is_ok());
        assert!(with(Some("https://pay.example.com")).settle().is_ok());
        assert_eq!(
            with(Some("https://pay.example.com/api")).settle().err(),
            Some(ConfigError::BadNotifyBaseUrl(
                "https://pay.example.com/api".into()
            ))
        );
    }

    #[test]
    fn a_short_merchant_key_is_refused() {
        let config = Config {
            platform: Some(PlatformKind::Remote),
            platform_url: Some("http://127.0.0.1:4000".into()),
            webhook_secret: Some(strong_secret()),
            merchant_api_key: Some(SecretString::from("")),
            ..Config::default()
        };
        assert_eq!(
            config.settle().err(),
            Some(ConfigError::ShortMerchantKey(0))
        );
    }

    fn strong_secret() -> SecretString {
        SecretString::from(CallbackSecret::generate().expose().to_owned())
    }

    #[test]
    fn no_platform_is_refused_with_what_to_set() {
        let err = Config::default().settle().err();
        assert_eq!(err, Some(ConfigError::NoPlatform));
        let text = ConfigError::NoPlatform.to_string();
        for choice in ["sandbox", "remote", "wechatpay", "alipay"] {
            assert!(text.contains(&format!("PLATFORM={choice}")), "{text}");
        }
        assert!(!text.contains('\n'), "one line: {text}");
    }

    #[test]
    fn remote_needs_a_url_and_a_secret() {
        let mut config = Config {
            platform: Some(PlatformKind::Remote),
            ..Config::default()
        };
        assert_eq!(config.settle().err(), Some(ConfigError::NoPlatformUrl));
        config.platform_url = Some("http://127.0.0.1:4000".into());
        assert_eq!(config.settle().err(), Some(ConfigError::NoWebhookSecret));
        config.webhook_secret = Some(strong_secret());
        let settled = config.settle().expect("settles");
        assert_eq!(settled.platform.kind(), PlatformKind::Remote);
        assert!(!settled.secret_generated);
    }

    #[test]
    fn a_short_or_empty_secret_is_refused_for_every_platform() {
        for platform in [PlatformKind::Sandbox, PlatformKind::Remote] {
            for text in ["whsec_", "whsec_AAAA"] {
                let config = Config {
                    platform: Some(platform),
                    platform_url: Some("http://127.0.0.1:4000".into()),
                    webhook_secret: Some(SecretString::from(text)),
                    ..Config::default()
                };
                assert!(
                    matches!(config.settle(), Err(ConfigError::BadWebhookSecret(_))),
                    "{platform:?} {text}"
                );
            }
        }
    }

    #[cfg(feature = "sandbox")]
    #[test]
    fn the_sandbox_makes_a_secret_when_none_is_given() {
        let config = Config {
            platform: Some(PlatformKind::Sandbox),
            ..Config::default()
        };
        let settled = config.settle().expect("settles");
        assert!(settled.secret_generated);
        assert_eq!(settled.platform.kind(), PlatformKind::Sandbox);
    }

    #[cfg(not(feature = "sandbox"))]
    #[test]
    fn the_sandbox_is_refused_by_a_build_without_it() {
        let config = Config {
            platform: Some(PlatformKind::Sandbox),
            ..Config::default()
        };
        assert_eq!(config.settle().err(), Some(ConfigError::SandboxNotBuilt));
    }

    #[test]
    fn an_empty_or_short_admin_token_is_refused() {
        for token in ["", "change-me", &"x".repeat(MIN_ADMIN_TOKEN_CHARS - 1)] {
            let config = Config {
                platform: Some(PlatformKind::Remote),
                platform_url: Some("http://127.0.0.1:4000".into()),
                webhook_secret: Some(strong_secret()),
                admin_token: Some(SecretString::from(token)),
                ..Config::default()
            };
            assert_eq!(
                config.settle().err(),
                Some(ConfigError::ShortAdminToken(token.chars().count())),
                "{token:?}"
            );
        }
    }

    #[test]
    fn secrets_never_show_in_debug() {
        let secret = strong_secret();
        let config = Config {
            webhook_secret: Some(secret.clone()),
            admin_token: Some(SecretString::from("admin-token-value-that-is-long-enough")),
            database_migration_url: Some(SecretString::from(
                "postgres://checkout_owner:owner-password@127.0.0.1/checkout",
            )),
            ..Config::default()
        };
        let config = Config {
            database_url: "postgres://checkout_app:app-password@127.0.0.1/checkout".into(),
            redis_url: "redis://tokens:redis-password@127.0.0.1:6379/2".into(),
            ..config
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("app-password"), "{shown}");
        assert!(!shown.contains("redis-password"), "{shown}");
        assert!(
            shown.contains("postgres://checkout_app:***@127.0.0.1/checkout"),
            "{shown}"
        );
        assert!(
            shown.contains("redis://tokens:***@127.0.0.1:6379/2"),
            "{shown}"
        );
        assert_eq!(
            config.database_url.expose(),
            "postgres://checkout_app:app-password@127.0.0.1/checkout"
        );
        use secrecy::ExposeSecret;
        assert!(!shown.contains(&secret.expose_secret()[6..]));
        assert!(!shown.contains("admin-token-value"));
        assert!(!shown.contains("owner-password"));
    }

    #[test]
    fn redis_sentinels_are_host_port_pairs_and_unparsable_ones_are_refused() {
        let with = |sentinels: &str| Config {
            platform: Some(PlatformKind::Remote),
            platform_url: Some("http://127.0.0.1:4000".into()),
            webhook_secret: Some(strong_secret()),
            redis_url: "redis://app:redis-password@ignored:6379/2".into(),
            redis_sentinels: sentinels.into(),
            ..Config::default()
        };
        for direct in ["", " ", ","] {
            assert!(
                matches!(
                    with(direct).settle().map(|s| s.redis),
                    Ok(RedisTarget::Direct { .. })
                ),
                "{direct:?}"
            );
        }
        let settled = with("127.0.0.1:26379, sentinel-b:26380,[::1]:26381")
            .settle()
            .expect("settles");
        let RedisTarget::Sentinel {
            sentinels,
            master_name,
            ..
        } = &settled.redis
        else {
            panic!("sentinel mode: {:?}", settled.redis);
        };
        let shown: Vec<String> = sentinels.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["127.0.0.1:26379", "sentinel-b:26380", "[::1]:26381"]
        );
        assert_eq!(master_name, "checkout");
        let debug = format!("{:?}", settled.redis);
        assert!(!debug.contains("redis-password"), "{debug}");
        assert!(debug.contains("127.0.0.1:26379"), "{debug}");

        for tls_url in [
            "rediss://app:redis-password@ignored:6380/2",
            "REDISS://app:redis-password@ignored:6380/2",
            "valkeys://app:redis-password@ignored:6380/2",
        ] {
            let tls_through_sentinels = Config {
                redis_url: tls_url.into(),
                ..with("127.0.0.1:26379")
            };
            // The URL goes to the store as given: its scheme asks for TLS to
            // the sentinels and to the primary (tokens::SentinelPrimary).
            match tls_through_sentinels.settle().map(|s| s.redis) {
                Ok(RedisTarget::Sentinel { url, .. }) => assert_eq!(url, tls_url),
                other => panic!("{tls_url}: {other:?}"),
            }
        }
        assert!(
            matches!(
                Config {
                    redis_url: "rediss://app:redis-password@primary:6380/2".into(),
                    ..with("")
                }
                .settle()
                .map(|s| s.redis),
                Ok(RedisTarget::Direct { .. })
            ),
            "rediss:// directly is Redis over TLS"
        );

        for bad in [
            "127.0.0.1",
            "127.0.0.1:",
            "127.0.0.1:0",
            "127.0.0.1:70000",
            ":26379",
            "redis://127.0.0.1:26379",
            "127.0.0.1:26379,nonsense",
            "::1:26379",
        ] {
            let err = with(bad).settle().err();
            assert!(
                matches!(err, Some(ConfigError::BadRedisSentinels(_))),
                "{bad:?}: {err:?}"
            );
            let text = err.map(|err| err.to_string()).unwrap_or_default();
            assert!(text.contains("REDIS_SENTINELS"), "{text}");
        }
        let nameless = Config {
            redis_master_name: " ".into(),
            ..with("127.0.0.1:26379")
        };
        assert_eq!(
            nameless.settle().err(),
            Some(ConfigError::NoRedisMasterName)
        );
    }

    #[test]
    fn migrate_is_a_subcommand_that_reads_the_database_urls() {
        let config = Config::try_parse_from([
            "backend",
            "migrate",
            "--database-migration-url",
            "postgres://owner@db/checkout",
        ])
        .expect("parses");
        assert_eq!(config.command, Some(Command::Migrate));
        use secrecy::ExposeSecret;
        assert_eq!(
            config
                .database_migration_url
                .as_ref()
                .map(ExposeSecret::expose_secret),
            Some("postgres://owner@db/checkout")
        );
        assert_eq!(
            Config::try_parse_from(["backend"]).expect("parses").command,
            None
        );
    }

    #[test]
    fn every_clap_setting_reads_a_listed_variable() {
        use clap::CommandFactory;
        let command = Config::command();
        for argument in command.get_arguments() {
            if let Some(variable) = argument.get_env() {
                let variable = variable.to_string_lossy();
                assert!(
                    crate::env::ALL.contains(&variable.as_ref()),
                    "{variable} is read by Config but missing from env::ALL"
                );
            }
        }
    }
}
