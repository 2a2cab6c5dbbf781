//! Headless Chromium behind its own chromedriver, and the chromedriver
//! commands beyond WebDriver that the tests use: DevTools (to record the
//! Content-Security-Policy violations every document reports, through a
//! `securitypolicyviolation` listener installed before the page's own scripts
//! run) and network emulation (offline, slow).

use super::processes::GroupChild;
use super::{TestApp, free_port, processes::wait_for_port, workspace_root};
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use uuid::Uuid;

/// Runs in every document before its own scripts (Chromium's
/// `Page.addScriptToEvaluateOnNewDocument`, which the page's CSP does not
/// govern): collects the CSP violations the document reports.
const RECORD_CSP_VIOLATIONS: &str = "window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push({
    directive: e.effectiveDirective, blocked: e.blockedURI,
    source: e.sourceFile, line: e.lineNumber, sample: e.sample,
  });
});";

/// Headless Chromium behind its own chromedriver, with a fresh profile.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: GroupChild,
    profile: PathBuf,
}

impl Browser {
    pub(super) async fn start() -> Self {
        let chromedriver =
            std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let chromium = std::env::var("CHROME_BIN").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = free_port();
        let driver = GroupChild::spawn(
            Command::new(&chromedriver)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .unwrap_or_else(|err| {
            panic!("cannot start {chromedriver} ({err}): run scripts/install-frontend-tools.sh")
        });
        wait_for_port(port, "chromedriver");

        // A reused profile can serve a stale .wasm: every session gets a new one.
        let profile = std::env::temp_dir().join(format!("e2e-chromium-{}", Uuid::new_v4()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object literal")
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("chromedriver opens a Chromium session");
        client
            .issue_cmd(Cdp {
                cmd: "Page.addScriptToEvaluateOnNewDocument",
                params: json!({ "source": RECORD_CSP_VIOLATIONS }),
            })
            .await
            .expect("chromedriver runs a DevTools command");
        Self {
            client,
            driver,
            profile,
        }
    }

    pub(super) async fn close(self) {
        let Self {
            client,
            mut driver,
            profile,
        } = self;
        let _ = client.close().await;
        driver.kill();
        let _ = std::fs::remove_dir_all(profile);
    }
}

/// chromedriver's `POST /session/{id}/chromium/network_conditions`.
#[derive(Debug)]
struct NetworkConditions {
    offline: bool,
    /// Added to every request's round trip, in milliseconds.
    latency_ms: u64,
}

impl fantoccini::wd::WebDriverCompatibleCommand for NetworkConditions {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/chromium/network_conditions",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({
            "network_conditions": {
                "offline": self.offline,
                "latency": self.latency_ms,
                "download_throughput": -1,
                "upload_throughput": -1,
            }
        });
        (http::Method::POST, Some(body.to_string()))
    }
}

/// chromedriver's `POST /session/{id}/goog/cdp/execute`: one Chrome DevTools command.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (http::Method::POST, Some(body.to_string()))
    }
}

impl TestApp {
    /// The CSP violations the current document reported (see the module doc).
    pub async fn csp_violations(&self) -> Vec<Value> {
        match self.js("return window.__cspViolations ?? null;").await {
            Value::Array(violations) => violations,
            other => panic!("the CSP violation recorder is not installed: {other}"),
        }
    }

    /// Fails if the current document reported any CSP violation.
    pub async fn assert_no_csp_violations(&self) {
        let violations = self.csp_violations().await;
        assert!(
            violations.is_empty(),
            "the page reported CSP violations: {violations:#?}"
        );
    }

    /// Cuts the page off the network (Chromium's network emulation), or restores it.
    pub async fn set_offline(&self, offline: bool) {
        self.client()
            .issue_cmd(NetworkConditions {
                offline,
                latency_ms: 0,
            })
            .await
            .expect("chromedriver emulates network conditions");
    }

    /// Slows the page's network: every round trip takes `latency_ms` more.
    pub async fn set_latency(&self, latency_ms: u64) {
        self.client()
            .issue_cmd(NetworkConditions {
                offline: false,
                latency_ms,
            })
            .await
            .expect("chromedriver emulates network conditions");
    }

    /// Saves a PNG of the page under `target/screenshots/{name}.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client().screenshot().await.expect("a screenshot");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"));
        let dir = target.join("screenshots");
        std::fs::create_dir_all(&dir).expect("target/screenshots can be created");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("the screenshot is saved");
    }
}
