//! WeChat Pay or Alipay for a browser test, played by a `platform-sim`
//! process with a key set of its own, and the backend settings that point at it.

use super::TestPlatform;
use backend::config::{Config, PlatformKind};
use std::process::{Command, Stdio};
use uuid::Uuid;

/// The WeChat Pay merchant id and app id of the tests.
const WECHATPAY_IDS: (&str, &str) = ("1900009191", "wxd678efh567hg6787");
/// The Alipay app id of the tests.
const ALIPAY_APP_ID: &str = "2021000000000001";

/// A platform-sim process speaking `platform`'s protocol with a fresh key set
/// written by `platform-sim keys`, paying each payment after `delay_ms`; and
/// the backend settings that point at it.
pub(super) async fn start_platform_sim(
    platform: TestPlatform,
    delay_ms: u64,
    config: &mut Config,
) -> testkit::BackendProcess {
    let binary = testkit::platform_sim_binary().expect("the platform-sim binary");
    let run = Uuid::new_v4().simple().to_string();
    let dir = testkit::target_dir().join(format!("e2e/keys-{run}"));
    let written = Command::new(&binary)
        .arg("keys")
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .expect("platform-sim keys runs");
    assert!(written.success(), "platform-sim keys {}", dir.display());
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|err| panic!("{name}: {err}"))
            .trim()
            .to_owned()
    };
    let mut args = vec![
        "--processing-delay".to_owned(),
        format!("{delay_ms}ms"),
        "--schedule".to_owned(),
        "fixed:200msx50".to_owned(),
    ];
    match platform {
        TestPlatform::Sandbox => unreachable!("the sandbox runs inside the backend"),
        TestPlatform::Wechatpay => {
            let (mchid, appid) = WECHATPAY_IDS;
            args.extend(
                [
                    "--wechatpay-keys",
                    &dir.display().to_string(),
                    "--wechatpay-mchid",
                    mchid,
                    "--wechatpay-appid",
                    appid,
                ]
                .map(str::to_owned),
            );
            config.platform = Some(PlatformKind::Wechatpay);
            config.wechatpay = backend::config::WechatPayConfig {
                wechatpay_api_url: String::new(),
                wechatpay_mchid: Some(mchid.into()),
                wechatpay_appid: Some(appid.into()),
                wechatpay_merchant_key_file: Some(dir.join("merchant_private_key.pem")),
                wechatpay_merchant_serial: Some(read("merchant_serial_no.txt")),
                wechatpay_platform_public_key_file: Some(dir.join("platform_public_key.pem")),
                wechatpay_platform_serial: Some(read("platform_serial_no.txt")),
                wechatpay_apiv3_key_file: Some(dir.join("wechatpay_apiv3_key.txt")),
            };
        }
        TestPlatform::Alipay => {
            args.extend(
                [
                    "--alipay-keys",
                    &dir.display().to_string(),
                    "--alipay-app-id",
                    ALIPAY_APP_ID,
                ]
                .map(str::to_owned),
            );
            config.platform = Some(PlatformKind::Alipay);
            config.alipay = backend::config::AlipayConfig {
                alipay_gateway_url: String::new(),
                alipay_app_id: Some(ALIPAY_APP_ID.into()),
                alipay_app_private_key_file: Some(dir.join("merchant_private_key.pem")),
                alipay_public_key_file: Some(dir.join("platform_public_key.pem")),
            };
        }
    }
    let secret = format!("whsec_{}", "c2ltdWxhdG9yLXNlY3JldC1vZi0zMi1ieXRlcyEhISE=");
    let sim = testkit::BackendProcess::start_as(
        &binary,
        "SIM_BIND_ADDR",
        args,
        vec![("WEBHOOK_SECRET".into(), secret)],
        testkit::target_dir().join(format!("e2e/platform-sim-{run}.log")),
    )
    .await
    .expect("platform-sim starts");
    config.wechatpay.wechatpay_api_url = sim.url();
    config.alipay.alipay_gateway_url = format!("{}/gateway.do", sim.url());
    sim
}
