//! The names of the environment variables the backend reads, in one place:
//! [`crate::config::Config`] reads them, and the tools and tests that start the
//! backend as a process (storm, bench, the fault tests) set them by these names.
//! `.env.example` explains each one.

/// PostgreSQL URL of the role the app serves with; the database is created if
/// missing (and migrated with it when `DATABASE_MIGRATION_URL` is unset).
pub const DATABASE_URL: &str = "DATABASE_URL";
/// PostgreSQL URL of the role that owns the schema and runs the migrations.
pub const DATABASE_MIGRATION_URL: &str = "DATABASE_MIGRATION_URL";
/// Largest number of PostgreSQL connections in the pool.
pub const DATABASE_MAX_CONNECTIONS: &str = "DATABASE_MAX_CONNECTIONS";
/// Redis URL (request tokens only).
pub const REDIS_URL: &str = "REDIS_URL";
/// Prefix of every Redis key the backend writes.
pub const REDIS_KEY_PREFIX: &str = "REDIS_KEY_PREFIX";
/// Redis Sentinel addresses (`host:port,...`); empty: `REDIS_URL` directly.
pub const REDIS_SENTINELS: &str = "REDIS_SENTINELS";
/// The master name the sentinels monitor.
pub const REDIS_MASTER_NAME: &str = "REDIS_MASTER_NAME";
/// Address to listen on.
pub const BIND_ADDR: &str = "BIND_ADDR";
/// A second address serving only `/metrics`, without the admin token.
pub const METRICS_BIND_ADDR: &str = "METRICS_BIND_ADDR";
/// Seconds between SIGTERM and the listener closing (`/readyz` answers 503 meanwhile).
pub const DRAIN_SECS: &str = "DRAIN_SECS";
/// Seconds requests in flight get once the listener has closed.
pub const DRAIN_DEADLINE_SECS: &str = "DRAIN_DEADLINE_SECS";
/// Load balancers whose `X-Forwarded-For` is believed, for per-address rate limits.
pub const TRUSTED_PROXIES: &str = "TRUSTED_PROXIES";
/// Seconds an order may stay unpaid before it is closed.
pub const ORDER_TTL_SECS: &str = "ORDER_TTL_SECS";
/// Seconds a request token stays valid.
pub const TOKEN_TTL_SECS: &str = "TOKEN_TTL_SECS";
/// `sandbox`, `remote`, `wechatpay` or `alipay`: required.
pub const PLATFORM: &str = "PLATFORM";
/// Base URL of a remote platform.
pub const PLATFORM_URL: &str = "PLATFORM_URL";
/// Base URL of the WeChat Pay API.
pub const WECHATPAY_API_URL: &str = "WECHATPAY_API_URL";
/// WeChat Pay merchant id.
pub const WECHATPAY_MCHID: &str = "WECHATPAY_MCHID";
/// WeChat Pay app id.
pub const WECHATPAY_APPID: &str = "WECHATPAY_APPID";
/// PEM file of the WeChat Pay merchant private key.
pub const WECHATPAY_MERCHANT_KEY_FILE: &str = "WECHATPAY_MERCHANT_KEY_FILE";
/// Serial number of the WeChat Pay merchant certificate.
pub const WECHATPAY_MERCHANT_SERIAL: &str = "WECHATPAY_MERCHANT_SERIAL";
/// PEM file of the WeChat Pay platform public key.
pub const WECHATPAY_PLATFORM_PUBLIC_KEY_FILE: &str = "WECHATPAY_PLATFORM_PUBLIC_KEY_FILE";
/// Id (serial) of the WeChat Pay platform public key.
pub const WECHATPAY_PLATFORM_SERIAL: &str = "WECHATPAY_PLATFORM_SERIAL";
/// File holding the WeChat Pay APIv3 key.
pub const WECHATPAY_APIV3_KEY_FILE: &str = "WECHATPAY_APIV3_KEY_FILE";
/// The Alipay gateway URL.
pub const ALIPAY_GATEWAY_URL: &str = "ALIPAY_GATEWAY_URL";
/// The Alipay application id.
pub const ALIPAY_APP_ID: &str = "ALIPAY_APP_ID";
/// PEM file of the Alipay application's private key.
pub const ALIPAY_APP_PRIVATE_KEY_FILE: &str = "ALIPAY_APP_PRIVATE_KEY_FILE";
/// PEM file of the Alipay public key.
pub const ALIPAY_PUBLIC_KEY_FILE: &str = "ALIPAY_PUBLIC_KEY_FILE";
/// `whsec_<base64>` callback secret.
pub const WEBHOOK_SECRET: &str = "WEBHOOK_SECRET";
/// Bearer token of the admin API.
pub const ADMIN_TOKEN: &str = "ADMIN_TOKEN";
/// Bearer key of the merchant API.
pub const MERCHANT_API_KEY: &str = "MERCHANT_API_KEY";
/// The HMAC key merchants' API keys are hashed under (at least 32 characters).
pub const MERCHANT_KEY_SECRET: &str = "MERCHANT_KEY_SECRET";
/// The origin the page is served from (CSRF checks, `pay_url`).
pub const PUBLIC_ORIGIN: &str = "PUBLIC_ORIGIN";
/// The origin payment platforms post their notifications to.
pub const NOTIFY_BASE_URL: &str = "NOTIFY_BASE_URL";
/// `true` behind HTTPS: `Secure` session cookie and HSTS.
pub const COOKIE_SECURE: &str = "COOKIE_SECURE";
/// Idle seconds before a shopper's session ends.
pub const SESSION_IDLE_SECS: &str = "SESSION_IDLE_SECS";
/// Seconds after sign-in before an operator's session ends, however busy.
pub const OPS_SESSION_MAX_SECS: &str = "OPS_SESSION_MAX_SECS";
/// Failed sign-ins per client IP per minute.
pub const RATE_LIMIT_SIGNIN_FAILURES_PER_IP: &str = "RATE_LIMIT_SIGNIN_FAILURES_PER_IP";
/// Failed sign-ins per email per minute.
pub const RATE_LIMIT_SIGNIN_FAILURES_PER_EMAIL: &str = "RATE_LIMIT_SIGNIN_FAILURES_PER_EMAIL";
/// Failed admin or merchant authentications per client IP per minute.
pub const RATE_LIMIT_AUTH_FAILURES_PER_IP: &str = "RATE_LIMIT_AUTH_FAILURES_PER_IP";
/// Orders a shopper may place per minute.
pub const RATE_LIMIT_ORDERS_PER_SHOPPER: &str = "RATE_LIMIT_ORDERS_PER_SHOPPER";
/// Request tokens a shopper may take per minute.
pub const RATE_LIMIT_TOKENS_PER_SHOPPER: &str = "RATE_LIMIT_TOKENS_PER_SHOPPER";
/// Pay requests a shopper may send per minute.
pub const RATE_LIMIT_PAYS_PER_SHOPPER: &str = "RATE_LIMIT_PAYS_PER_SHOPPER";
/// Directory of the built payment page.
pub const STATIC_DIR: &str = "STATIC_DIR";
/// Demo mode.
pub const DEMO: &str = "DEMO";
/// Delay of the in-process sandbox platform's callback, in ms.
pub const SANDBOX_CALLBACK_DELAY_MS: &str = "SANDBOX_CALLBACK_DELAY_MS";
/// `true`: the in-process sandbox decides payments but posts no callbacks.
pub const SANDBOX_DROP_CALLBACKS: &str = "SANDBOX_DROP_CALLBACKS";
/// Seconds after a hand-over before the first query of a payment without a result.
pub const QUERY_AFTER_SECS: &str = "QUERY_AFTER_SECS";
/// Seconds between later queries.
pub const QUERY_EVERY_SECS: &str = "QUERY_EVERY_SECS";
/// Queries after the first before STUCK_PAYMENT.
pub const QUERY_RETRIES: &str = "QUERY_RETRIES";
/// `HH:MM` (UTC): from this time of day on, the daily worker reconciles the previous day's bill.
pub const RECONCILE_AT_UTC: &str = "RECONCILE_AT_UTC";
/// `false`: no daily reconciliation worker in this process.
pub const RECONCILE_DAILY: &str = "RECONCILE_DAILY";
/// Crash points (`name=probability,...`); read only by builds with the `fault-injection` feature.
pub const CRASH_POINTS: &str = "CRASH_POINTS";
/// Seed of the crash-point dice; read only by builds with the `fault-injection` feature.
pub const CRASH_SEED: &str = "CRASH_SEED";
/// Log filter (tracing `EnvFilter` syntax).
pub const RUST_LOG: &str = "RUST_LOG";
/// `text` (default) or `json`: the format of the log lines.
pub const LOG_FORMAT: &str = "LOG_FORMAT";

/// Every variable above: `.env.example` must explain each one (a test checks).
pub const ALL: &[&str] = &[
    DATABASE_URL,
    DATABASE_MIGRATION_URL,
    DATABASE_MAX_CONNECTIONS,
    REDIS_URL,
    REDIS_KEY_PREFIX,
    REDIS_SENTINELS,
    REDIS_MASTER_NAME,
    BIND_ADDR,
    METRICS_BIND_ADDR,
    DRAIN_SECS,
    DRAIN_DEADLINE_SECS,
    TOKEN_TTL_SECS,
    ORDER_TTL_SECS,
    PLATFORM,
    PLATFORM_URL,
    WECHATPAY_API_URL,
    WECHATPAY_MCHID,
    WECHATPAY_APPID,
    WECHATPAY_MERCHANT_KEY_FILE,
    WECHATPAY_MERCHANT_SERIAL,
    WECHATPAY_PLATFORM_PUBLIC_KEY_FILE,
    WECHATPAY_PLATFORM_SERIAL,
    WECHATPAY_APIV3_KEY_FILE,
    ALIPAY_GATEWAY_URL,
    ALIPAY_APP_ID,
    ALIPAY_APP_PRIVATE_KEY_FILE,
    ALIPAY_PUBLIC_KEY_FILE,
    WEBHOOK_SECRET,
    ADMIN_TOKEN,
    MERCHANT_API_KEY,
    MERCHANT_KEY_SECRET,
    PUBLIC_ORIGIN,
    TRUSTED_PROXIES,
    NOTIFY_BASE_URL,
    COOKIE_SECURE,
    SESSION_IDLE_SECS,
    OPS_SESSION_MAX_SECS,
    RATE_LIMIT_SIGNIN_FAILURES_PER_IP,
    RATE_LIMIT_SIGNIN_FAILURES_PER_EMAIL,
    RATE_LIMIT_AUTH_FAILURES_PER_IP,
    RATE_LIMIT_ORDERS_PER_SHOPPER,
    RATE_LIMIT_TOKENS_PER_SHOPPER,
    RATE_LIMIT_PAYS_PER_SHOPPER,
    STATIC_DIR,
    DEMO,
    SANDBOX_CALLBACK_DELAY_MS,
    SANDBOX_DROP_CALLBACKS,
    QUERY_AFTER_SECS,
    QUERY_EVERY_SECS,
    QUERY_RETRIES,
    RECONCILE_AT_UTC,
    RECONCILE_DAILY,
    CRASH_POINTS,
    CRASH_SEED,
    RUST_LOG,
    LOG_FORMAT,
];

#[cfg(test)]
mod tests {
    use super::ALL;

    #[test]
    fn env_example_explains_every_variable_the_backend_reads() {
        let example = include_str!("../../.env.example");
        for name in ALL {
            let set = format!("\n{name}=");
            let commented = format!("\n# {name}=");
            assert!(
                example.contains(&set) || example.contains(&commented),
                ".env.example does not list {name}"
            );
        }
    }
}
