//! A `platform-sim` behind the app: started on its own port, its key set, and
//! what the backend's requests to it must say about themselves.

use super::{TestApp, spawn_app_with};
use backend::config::{Config, PlatformKind};
use callback_signing::CallbackSecret;
use secrecy::SecretString;
use std::time::Duration;

/// A `platform-sim` serving on its own port, signing with `secret`, deciding
/// each payment after `processing_delay`, retrying callbacks every 100 ms.
pub async fn start_platform(
    secret: &CallbackSecret,
    chaos: platform_sim::Chaos,
    processing_delay: Duration,
) -> (platform_sim::Simulator, String) {
    serve_platform_sim(chaos, processing_delay, |config| {
        config.secret = secret.clone();
    })
    .await
}

/// A `platform-sim` on its own port deciding each payment after
/// `processing_delay` and retrying notifications every 100 ms, after `adjust`
/// set the rest (which platform it speaks); it and its base URL.
pub async fn serve_platform_sim(
    chaos: platform_sim::Chaos,
    processing_delay: Duration,
    adjust: impl FnOnce(&mut platform_sim::SimConfig),
) -> (platform_sim::Simulator, String) {
    let mut config = platform_sim::SimConfig {
        schedule: platform_sim::Schedule::Fixed {
            interval: Duration::from_millis(100),
            count: 20,
        },
        processing_delay,
        chaos,
        ..platform_sim::SimConfig::default()
    };
    adjust(&mut config);
    let simulator = platform_sim::Simulator::new(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let router = simulator.router();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (simulator, url)
}

/// A platform that decides payments but posts no notifications of its own:
/// the test posts them.
pub fn silent_platform() -> platform_sim::Chaos {
    platform_sim::Chaos {
        drop_callbacks: true,
        ..platform_sim::Chaos::default()
    }
}

/// One merchant and platform key set per test binary (RSA key generation is
/// the slow part), written to files as `platform-sim keys DIR` writes them.
pub fn platform_keys() -> &'static (platform_protocols::keys::LocalKeys, std::path::PathBuf) {
    static KEYS: std::sync::OnceLock<(platform_protocols::keys::LocalKeys, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "checkout-test-platform-keys-{}",
            std::process::id()
        ));
        let generated = platform_protocols::keys::generate(&dir).expect("a key set is written");
        (generated, dir)
    })
}

/// The `User-Agent` the backend must send on every platform request: the
/// product and its version, then the operating system and architecture.
pub fn our_user_agent() -> String {
    format!(
        "exactly-once-checkout/{} ({}/{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// The requests `simulator` received on paths starting with `prefix` (the
/// backend's calls to the platform), as `METHOD path`, after checking that
/// every one said who sent it ([`our_user_agent`]) and that it reads JSON.
pub fn calls_identifying_us(simulator: &platform_sim::Simulator, prefix: &str) -> Vec<String> {
    let agent = our_user_agent();
    simulator
        .requests()
        .all()
        .into_iter()
        .filter(|request| request.path.starts_with(prefix))
        .map(|request| {
            assert_eq!(
                request.user_agent.as_deref(),
                Some(agent.as_str()),
                "{request:?}"
            );
            assert_eq!(
                request.accept.as_deref(),
                Some("application/json"),
                "{request:?}"
            );
            format!("{} {}", request.method, request.path)
        })
        .collect()
}

/// The app paying through a `platform-sim` over HTTP (`PLATFORM=remote`) with
/// `chaos`, deciding after `processing_delay`; `adjust` changes the rest.
pub async fn spawn_app_paying_through(
    chaos: platform_sim::Chaos,
    processing_delay: Duration,
    adjust: impl FnOnce(&mut Config),
) -> (TestApp, platform_sim::Simulator) {
    let secret = CallbackSecret::generate();
    let (simulator, url) = start_platform(&secret, chaos, processing_delay).await;
    let app = spawn_app_with(|c| {
        c.webhook_secret = Some(SecretString::from(secret.expose()));
        c.platform = Some(PlatformKind::Remote);
        c.platform_url = Some(url);
        adjust(c);
    })
    .await;
    (app, simulator)
}
