//! How a test wants its backend: the token lifetime, the platform's delay,
//! its Redis, the platform, and which demo shopper the browser signs in as.

use backend::http::routes::demo::DEMO_SHOPPERS;

/// A demo shopper the backend seeds in sandbox demo mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shopper {
    /// Sign-in email.
    pub email: &'static str,
    /// Sign-in password (public in the demo).
    pub password: &'static str,
    /// 1-based position on the sign-in page (`#demo-shopper-<n>`).
    pub position: usize,
}

/// The first demo shopper, whom tests sign in as by default.
pub const ADA: Shopper = Shopper {
    email: DEMO_SHOPPERS[0].0,
    password: DEMO_SHOPPERS[0].1,
    position: 1,
};
/// The second demo shopper.
pub const BEN: Shopper = Shopper {
    email: DEMO_SHOPPERS[1].0,
    password: DEMO_SHOPPERS[1].1,
    position: 2,
};

/// How a test wants its backend.
#[derive(Debug, Clone)]
pub struct Options {
    /// Request token lifetime.
    pub token_ttl_secs: u64,
    /// Delay of the sandbox platform's callback.
    pub callback_delay_ms: u64,
    /// Redis to use; the shared one when `None`.
    pub redis_url: Option<String>,
    /// Whom the browser signs in as (through `/signin`) before the test starts;
    /// nobody when `None`.
    pub signed_in_as: Option<Shopper>,
    /// Which platform takes the payments.
    pub platform: TestPlatform,
}

/// The platform a browser test pays through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestPlatform {
    /// The sandbox inside the backend (EUR).
    Sandbox,
    /// WeChat Pay API v3, played by a platform-sim process (CNY).
    Wechatpay,
    /// Alipay, played by a platform-sim process (CNY).
    Alipay,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            token_ttl_secs: 900,
            callback_delay_ms: 300,
            redis_url: None,
            signed_in_as: Some(ADA),
            platform: TestPlatform::Sandbox,
        }
    }
}

impl Options {
    /// The defaults with a browser that has not signed in.
    pub fn signed_out() -> Self {
        Self {
            signed_in_as: None,
            ..Self::default()
        }
    }
}
