//! How a simulator behaves: [`SimConfig`] for in-process use, [`SimArgs`] for
//! the command line and environment (the binary and any host that flattens it).

use crate::chaos::{Chaos, Redeliver};
use crate::outcome::OutcomeRule;
use crate::schedule::{Schedule, parse_duration};
use callback_signing::{CallbackSecret, SecretError};
use clap::builder::BoolishValueParser;
use platform_protocols::keys::{ApiV3Key, KeyError, LocalKeys, PrivateKey, PublicKey};
use platform_protocols::wechatpay::{MerchantKey, PlatformSigner};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything a [`Simulator`](crate::Simulator) needs. `SimConfig::default()` is a
/// well-behaved platform with a fresh random secret and real-time delays.
#[derive(Clone, PartialEq)]
pub struct SimConfig {
    /// Standard Webhooks secret: the receiver verifies callbacks with the same one.
    pub secret: CallbackSecret,
    /// When unacknowledged callbacks are retried.
    pub schedule: Schedule,
    /// Multiplies every wait (processing, retries, chaos delays; not the request
    /// timeout nor the query latency, which time the merchant's own requests):
    /// 0.001 runs a day of retries in under a minute and a half. Finite and not negative.
    pub time_scale: f64,
    /// How long a payment or refund stays `PROCESSING` before its outcome is decided and its callback sent.
    pub processing_delay: Duration,
    /// How long one delivery attempt may take before it counts as failed and is retried.
    pub request_timeout: Duration,
    /// Which payments and refunds fail.
    pub outcome: OutcomeRule,
    /// The misbehaviours applied to payments and refunds created from now on (changeable at runtime).
    pub chaos: Chaos,
    /// When set, the simulator also speaks WeChat Pay API v3 (`/v3/...`) for this merchant.
    pub wechatpay: Option<WechatPayConfig>,
    /// When set, the simulator also speaks the Alipay open platform gateway
    /// (`POST /gateway.do`) for this application.
    pub alipay: Option<AlipayConfig>,
}

/// The one application the simulator's Alipay side serves, and the platform's own
/// key: requests are verified with the application's (merchant's) public key,
/// answers and notifications signed with the platform's private key.
#[derive(Clone)]
pub struct AlipayConfig {
    /// The `app_id` requests must carry.
    pub app_id: String,
    /// Verifies the application's RSA2 request signatures.
    pub merchant_public: PublicKey,
    /// Signs answers and notifications (the merchant verifies with the platform public key).
    pub platform_private: PrivateKey,
    /// How long after a trade's `TRADE_SUCCESS` it finishes (`TRADE_FINISHED`,
    /// notified, no refunds any more), scaled by the time scale like every wait.
    pub trade_finished_after: Duration,
}

/// The default of [`AlipayConfig::trade_finished_after`].
pub const DEFAULT_TRADE_FINISHED_AFTER: Duration = Duration::from_secs(2);

impl AlipayConfig {
    /// The configuration for `app_id` from a key set written by `platform-sim keys DIR`.
    pub fn from_keys(app_id: &str, keys: &LocalKeys) -> Self {
        Self {
            app_id: app_id.to_owned(),
            merchant_public: keys.merchant_public.clone(),
            platform_private: keys.platform_private.clone(),
            trade_finished_after: DEFAULT_TRADE_FINISHED_AFTER,
        }
    }

    /// Reads a key set from `dir` (see [`AlipayConfig::from_keys`]).
    pub fn load(app_id: &str, dir: &Path) -> Result<Self, KeyError> {
        Ok(Self::from_keys(app_id, &LocalKeys::load(dir)?))
    }
}

impl PartialEq for AlipayConfig {
    // Keys compare by their public halves.
    fn eq(&self, other: &Self) -> bool {
        self.app_id == other.app_id
            && self.merchant_public == other.merchant_public
            && self.platform_private.public_key() == other.platform_private.public_key()
            && self.trade_finished_after == other.trade_finished_after
    }
}

impl fmt::Debug for AlipayConfig {
    // By hand so no key reaches a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlipayConfig")
            .field("app_id", &self.app_id)
            .field("merchant_public", &self.merchant_public.fingerprint())
            .field("trade_finished_after", &self.trade_finished_after)
            .finish_non_exhaustive()
    }
}

/// The one merchant the simulator's WeChat Pay side serves, and the platform's own
/// keys: requests are verified with the merchant's public key, answers and
/// notifications signed with the platform's private key, notification resources
/// encrypted with the APIv3 key.
#[derive(Clone)]
pub struct WechatPayConfig {
    /// The merchant id (`mchid`) requests must be signed for.
    pub mchid: String,
    /// The app id bound to the merchant.
    pub appid: String,
    /// Verifies the merchant's `Authorization` headers (its key and serial).
    pub merchant: MerchantKey,
    /// Signs answers and notifications (`Wechatpay-Serial` is its serial).
    pub platform_signer: PlatformSigner,
    /// Encrypts notification resources.
    pub apiv3_key: ApiV3Key,
}

impl WechatPayConfig {
    /// The configuration for `mchid` and `appid` from a key set written by
    /// `platform-sim keys DIR` (`platform_protocols::keys::LocalKeys`).
    pub fn from_keys(mchid: &str, appid: &str, keys: &LocalKeys) -> Self {
        Self {
            mchid: mchid.to_owned(),
            appid: appid.to_owned(),
            merchant: MerchantKey {
                mchid: mchid.to_owned(),
                serial_no: keys.merchant_serial_no.clone(),
                public_key: keys.merchant_public.clone(),
            },
            platform_signer: PlatformSigner {
                serial: keys.platform_serial_no.clone(),
                key: keys.platform_private.clone(),
            },
            apiv3_key: keys.apiv3_key.clone(),
        }
    }

    /// Reads a key set from `dir` (see [`WechatPayConfig::from_keys`]).
    pub fn load(mchid: &str, appid: &str, dir: &Path) -> Result<Self, KeyError> {
        Ok(Self::from_keys(mchid, appid, &LocalKeys::load(dir)?))
    }
}

impl PartialEq for WechatPayConfig {
    // Keys compare by their public halves and serials; the APIv3 key is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.mchid == other.mchid
            && self.appid == other.appid
            && self.merchant.serial_no == other.merchant.serial_no
            && self.merchant.public_key == other.merchant.public_key
            && self.platform_signer.serial == other.platform_signer.serial
            && self.platform_signer.key.public_key() == other.platform_signer.key.public_key()
    }
}

impl fmt::Debug for WechatPayConfig {
    // By hand so no key reaches a log line (the key types redact themselves too).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WechatPayConfig")
            .field("mchid", &self.mchid)
            .field("appid", &self.appid)
            .field("merchant_serial_no", &self.merchant.serial_no)
            .field("platform_serial_no", &self.platform_signer.serial)
            .finish_non_exhaustive()
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            secret: CallbackSecret::generate(),
            schedule: Schedule::Standard,
            time_scale: 1.0,
            processing_delay: Duration::from_millis(500),
            request_timeout: Duration::from_secs(10),
            outcome: OutcomeRule::default(),
            chaos: Chaos::default(),
            wechatpay: None,
            alipay: None,
        }
    }
}

impl fmt::Debug for SimConfig {
    // By hand so the secret never reaches a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimConfig")
            .field("secret", &self.secret)
            .field("schedule", &self.schedule)
            .field("time_scale", &self.time_scale)
            .field("processing_delay", &self.processing_delay)
            .field("request_timeout", &self.request_timeout)
            .field("outcome", &self.outcome)
            .field("chaos", &self.chaos)
            .field("wechatpay", &self.wechatpay)
            .field("alipay", &self.alipay)
            .finish()
    }
}

/// A configuration the simulator cannot run with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The secret is not a usable `whsec_<base64>` key.
    #[error("WEBHOOK_SECRET: {0}")]
    Secret(#[from] SecretError),
    /// The time scale is negative, infinite or NaN.
    #[error("the time scale must be a finite number, 0 or more; got {0}")]
    TimeScale(f64),
    /// The WeChat Pay keys could not be loaded.
    #[error("WeChat Pay keys: {0}")]
    WechatPayKeys(String),
    /// WeChat Pay was asked for without a merchant id or app id.
    #[error("--wechatpay-keys needs --wechatpay-mchid and --wechatpay-appid")]
    WechatPayIds,
    /// The Alipay keys could not be loaded.
    #[error("Alipay keys: {0}")]
    AlipayKeys(String),
    /// Alipay was asked for without an app id.
    #[error("--alipay-keys needs --alipay-app-id")]
    AlipayAppId,
    /// The HTTP client for deliveries could not be built.
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
}

/// The simulator's flags and environment variables, without the bind address and secret
/// (the host decides those). `#[command(flatten)]` it into a `clap::Parser`.
///
/// Switches also read `1`/`0`, `yes`/`no`, `on`/`off` from the environment, as shells write them.
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// Retry schedule: wechat, alipay, standard, or `fixed:<interval>x<count>` (e.g. `fixed:500msx10`).
    #[arg(long, env = "SIM_SCHEDULE", default_value = "standard")]
    pub schedule: Schedule,

    /// Multiplies every wait but the request timeout and query latency; 0.001 compresses a day of retries into about 90 seconds.
    #[arg(long, env = "SIM_TIME_SCALE", default_value_t = 1.0)]
    pub time_scale: f64,

    /// How long a payment or refund is PROCESSING before its callback is sent (e.g. 500ms, 2s).
    #[arg(long, env = "SIM_PROCESSING_DELAY", default_value = "500ms", value_parser = parse_duration)]
    pub processing_delay: Duration,

    /// Per-attempt timeout of a callback delivery; a timed-out attempt is retried.
    #[arg(long, env = "SIM_REQUEST_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Payments and refunds whose amount in minor units ends in these two digits fail.
    #[arg(long, env = "SIM_FAIL_CENTS_SUFFIX", default_value_t = 13,
          value_parser = clap::value_parser!(u8).range(0..=99))]
    pub fail_cents_suffix: u8,

    /// Every payment and refund fails.
    #[arg(long, env = "SIM_ALWAYS_FAIL", value_parser = BoolishValueParser::new())]
    pub always_fail: bool,

    /// Chaos: send each callback this many times at once (same callback id).
    #[arg(long, env = "SIM_CONCURRENT_COPIES", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrent_copies: u32,

    /// Chaos: also send each callback over a second path this much later (e.g. 1s).
    #[arg(long, env = "SIM_SECOND_PATH_DELAY", value_parser = parse_duration)]
    pub second_path_delay: Option<Duration>,

    /// Chaos: before a success, send a failure (payment.failed, refund.failed) with its own callback id.
    #[arg(long, env = "SIM_REORDER", value_parser = BoolishValueParser::new())]
    pub reorder: bool,

    /// Chaos: after a success, send a second success with a new callback id.
    #[arg(long, env = "SIM_SECOND_SUCCESS", value_parser = BoolishValueParser::new())]
    pub second_success: bool,

    /// Chaos: after a 2xx, send the same callback again, `<interval>x<count>` (e.g. `7sx1`).
    #[arg(long, env = "SIM_REDELIVER_AFTER_SUCCESS")]
    pub redeliver_after_success: Option<Redeliver>,

    /// Chaos: accept each new payment or refund but answer its first creation request with 503 (the answer "lost").
    #[arg(long, env = "SIM_LOSE_CREATE_ANSWER", value_parser = BoolishValueParser::new())]
    pub lose_create_answer: bool,

    /// Chaos: decide outcomes but never send a callback (the merchant must query).
    #[arg(long, env = "SIM_DROP_CALLBACKS", value_parser = BoolishValueParser::new())]
    pub drop_callbacks: bool,

    /// Chaos: keep payments and refunds PROCESSING this long instead of the processing delay
    /// (scaled by the time scale; e.g. 1h: until the merchant closes them).
    #[arg(long, env = "SIM_HOLD_PROCESSING", value_parser = parse_duration)]
    pub hold_processing: Option<Duration>,

    /// Chaos: a close of a PROCESSING payment finds it just paid: it succeeds and the close gets 409.
    #[arg(long, env = "SIM_SUCCEED_ON_CLOSE", value_parser = BoolishValueParser::new())]
    pub succeed_on_close: bool,

    /// Chaos: every query and close waits this long before answering (real time, not scaled; e.g. 200ms).
    #[arg(long, env = "SIM_QUERY_LATENCY", value_parser = parse_duration)]
    pub query_latency: Option<Duration>,

    /// Chaos: leave every payment's and refund's row out of the daily bill (`GET /v1/bills/{date}`).
    #[arg(long, env = "SIM_BILL_OMIT", value_parser = BoolishValueParser::new())]
    pub bill_omit: bool,

    /// Chaos: list every payment and refund on the daily bill with its amount changed by this many minor units.
    #[arg(
        long,
        env = "SIM_BILL_AMOUNT_DELTA_CENTS",
        default_value_t = 0,
        allow_hyphen_values = true
    )]
    pub bill_amount_delta_cents: i64,

    /// Also speak WeChat Pay API v3, with the key set `platform-sim keys DIR` wrote into this directory.
    #[arg(long, env = "SIM_WECHATPAY_KEYS")]
    pub wechatpay_keys: Option<PathBuf>,

    /// The WeChat Pay merchant id requests must be signed for (with --wechatpay-keys).
    #[arg(long, env = "SIM_WECHATPAY_MCHID")]
    pub wechatpay_mchid: Option<String>,

    /// The WeChat Pay app id of the merchant (with --wechatpay-keys).
    #[arg(long, env = "SIM_WECHATPAY_APPID")]
    pub wechatpay_appid: Option<String>,

    /// Also speak the Alipay open platform gateway (`POST /gateway.do`, RSA2), with the key set `platform-sim keys DIR` wrote into this directory.
    #[arg(long, env = "SIM_ALIPAY_KEYS")]
    pub alipay_keys: Option<PathBuf>,

    /// The Alipay `app_id` requests must carry (with --alipay-keys).
    #[arg(long, env = "SIM_ALIPAY_APP_ID")]
    pub alipay_app_id: Option<String>,

    /// How long after TRADE_SUCCESS an Alipay trade finishes: TRADE_FINISHED is notified and refunds are refused (scaled by the time scale; e.g. 2s, 1h).
    #[arg(long, env = "SIM_ALIPAY_FINISHED_AFTER", default_value = "2s", value_parser = parse_duration)]
    pub alipay_finished_after: Duration,
}

impl SimArgs {
    /// The configuration these arguments describe, signing with `secret`, with
    /// the WeChat Pay side loaded from `--wechatpay-keys` and the Alipay side
    /// from `--alipay-keys` when they are given.
    pub fn into_config_with_keys(self, secret: CallbackSecret) -> Result<SimConfig, ConfigError> {
        let wechatpay = match &self.wechatpay_keys {
            None => None,
            Some(dir) => {
                let (Some(mchid), Some(appid)) = (&self.wechatpay_mchid, &self.wechatpay_appid)
                else {
                    return Err(ConfigError::WechatPayIds);
                };
                Some(
                    WechatPayConfig::load(mchid, appid, dir)
                        .map_err(|err| ConfigError::WechatPayKeys(err.to_string()))?,
                )
            }
        };
        let alipay = match &self.alipay_keys {
            None => None,
            Some(dir) => {
                let app_id = self
                    .alipay_app_id
                    .as_ref()
                    .ok_or(ConfigError::AlipayAppId)?;
                let mut config = AlipayConfig::load(app_id, dir)
                    .map_err(|err| ConfigError::AlipayKeys(err.to_string()))?;
                config.trade_finished_after = self.alipay_finished_after;
                Some(config)
            }
        };
        Ok(SimConfig {
            wechatpay,
            alipay,
            ..self.into_config(secret)
        })
    }

    /// The configuration these arguments describe, signing with `secret`
    /// (without WeChat Pay and Alipay: see [`SimArgs::into_config_with_keys`]).
    pub fn into_config(self, secret: CallbackSecret) -> SimConfig {
        let outcome = if self.always_fail {
            OutcomeRule::AlwaysFail
        } else {
            OutcomeRule::FailCentsSuffix(self.fail_cents_suffix)
        };
        SimConfig {
            secret,
            schedule: self.schedule,
            time_scale: self.time_scale,
            processing_delay: self.processing_delay,
            request_timeout: self.request_timeout,
            outcome,
            chaos: Chaos {
                concurrent_copies: self.concurrent_copies,
                second_path_delay: self.second_path_delay,
                reorder: self.reorder,
                second_success: self.second_success,
                redeliver_after_success: self.redeliver_after_success,
                lose_create_answer: self.lose_create_answer,
                drop_callbacks: self.drop_callbacks,
                hold_processing: self.hold_processing,
                succeed_on_close: self.succeed_on_close,
                query_latency: self.query_latency,
                bill_omit: self.bill_omit,
                bill_amount_delta_cents: self.bill_amount_delta_cents,
            },
            wechatpay: None,
            alipay: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn parse(args: &[&str]) -> SimConfig {
        let cli = Cli::try_parse_from(std::iter::once("platform-sim").chain(args.iter().copied()))
            .unwrap_or_else(|err| panic!("{args:?} should parse: {err}"));
        cli.sim.into_config(CallbackSecret::generate())
    }

    #[test]
    fn flags_build_the_configuration() {
        let config = parse(&[
            "--schedule",
            "fixed:500msx10",
            "--time-scale",
            "0.001",
            "--processing-delay",
            "2s",
            "--fail-cents-suffix",
            "99",
            "--concurrent-copies",
            "3",
            "--second-path-delay",
            "1s",
            "--reorder",
            "--second-success",
            "--redeliver-after-success",
            "7sx1",
        ]);
        assert_eq!(config.schedule.to_string(), "fixed:500msx10");
        assert_eq!(config.time_scale, 0.001);
        assert_eq!(config.processing_delay, Duration::from_secs(2));
        assert_eq!(config.outcome, OutcomeRule::FailCentsSuffix(99));
        assert_eq!(config.chaos.concurrent_copies, 3);
        assert_eq!(config.chaos.second_path_delay, Some(Duration::from_secs(1)));
        assert!(config.chaos.reorder && config.chaos.second_success);
        assert_eq!(
            config.chaos.redeliver_after_success,
            Some(Redeliver {
                count: 1,
                interval: Duration::from_secs(7)
            })
        );
    }

    #[test]
    fn query_and_close_flags_build_the_chaos_knobs() {
        let config = parse(&[
            "--drop-callbacks",
            "--hold-processing",
            "1h",
            "--succeed-on-close",
            "--query-latency",
            "200ms",
        ]);
        assert!(config.chaos.drop_callbacks);
        assert_eq!(
            config.chaos.hold_processing,
            Some(Duration::from_secs(3600))
        );
        assert!(config.chaos.succeed_on_close);
        assert_eq!(config.chaos.query_latency, Some(Duration::from_millis(200)));

        let plain = parse(&[]).chaos;
        assert_eq!(plain, Chaos::default());
    }

    #[test]
    fn bill_flags_build_the_bill_knobs() {
        let config = parse(&["--bill-omit", "--bill-amount-delta-cents", "-100"]);
        assert!(config.chaos.bill_omit);
        assert_eq!(config.chaos.bill_amount_delta_cents, -100);
    }

    /// A key set written into a temporary directory, for the `--*-keys` flags.
    struct KeyDir {
        dir: tempfile::TempDir,
        keys: LocalKeys,
    }

    impl KeyDir {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let keys = crate::keys::write_local_keys(dir.path())
                .expect("keys written")
                .0;
            Self { dir, keys }
        }

        /// `flag DIR` and `extra`, parsed.
        fn args(&self, flag: &str, extra: &[&str]) -> SimArgs {
            let path = self.dir.path().to_str().expect("a UTF-8 path");
            let argv = ["platform-sim", flag, path]
                .into_iter()
                .chain(extra.iter().copied());
            Cli::try_parse_from(argv).expect("parses").sim
        }
    }

    #[test]
    fn wechatpay_flags_load_the_key_set_and_need_both_ids() {
        let key_dir = KeyDir::new();
        let keys = &key_dir.keys;
        let args = |extra: &[&str]| key_dir.args("--wechatpay-keys", extra);

        let config = args(&[
            "--wechatpay-mchid",
            "1900009191",
            "--wechatpay-appid",
            "wx1",
        ])
        .into_config_with_keys(CallbackSecret::generate())
        .expect("loads");
        let missing = args(&["--wechatpay-mchid", "1900009191"])
            .into_config_with_keys(CallbackSecret::generate());

        let wechatpay = config.wechatpay.expect("WeChat Pay is on");
        assert_eq!(wechatpay.mchid, "1900009191");
        assert_eq!(wechatpay.appid, "wx1");
        assert_eq!(wechatpay.merchant.serial_no, keys.merchant_serial_no);
        assert_eq!(wechatpay.merchant.public_key, keys.merchant_public);
        assert_eq!(wechatpay.platform_signer.serial, keys.platform_serial_no);
        assert!(matches!(missing, Err(ConfigError::WechatPayIds)));
        assert_eq!(parse(&[]).wechatpay, None);
    }

    #[test]
    fn alipay_flags_load_the_key_set_and_need_the_app_id() {
        let key_dir = KeyDir::new();
        let keys = &key_dir.keys;
        let args = |extra: &[&str]| key_dir.args("--alipay-keys", extra);

        let config = args(&[
            "--alipay-app-id",
            "2014072300007148",
            "--alipay-finished-after",
            "1h",
        ])
        .into_config_with_keys(CallbackSecret::generate())
        .expect("loads");
        let missing = args(&[]).into_config_with_keys(CallbackSecret::generate());

        let alipay = config.alipay.expect("Alipay is on");
        assert_eq!(alipay.app_id, "2014072300007148");
        assert_eq!(alipay.merchant_public, keys.merchant_public);
        assert_eq!(alipay.platform_private.public_key(), keys.platform_public);
        assert_eq!(alipay.trade_finished_after, Duration::from_secs(3600));
        assert!(matches!(missing, Err(ConfigError::AlipayAppId)));
        assert_eq!(parse(&[]).alipay, None);
    }

    #[test]
    fn always_fail_overrides_the_suffix_rule() {
        assert_eq!(parse(&["--always-fail"]).outcome, OutcomeRule::AlwaysFail);
    }

    #[test]
    fn out_of_range_flags_are_refused() {
        for args in [
            ["--fail-cents-suffix", "100"],
            ["--concurrent-copies", "0"],
            ["--schedule", "hourly"],
            ["--hold-processing", "forever"],
            ["--query-latency", "200"],
        ] {
            let argv = std::iter::once("platform-sim").chain(args);
            assert!(Cli::try_parse_from(argv).is_err(), "{args:?}");
        }
    }
}
