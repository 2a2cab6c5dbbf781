//! What the page shows, read through WebDriver or from inside the page, and
//! waiting until it shows what a test expects (or failing with what it shows).

use super::{PAGE_TIMEOUT, TestApp};
use api_types::api::Order;
use fantoccini::Locator;
use serde_json::Value;
use std::future::Future;
use std::time::{Duration, Instant};

impl TestApp {
    /// The path (and query) the browser shows now.
    pub async fn current_path(&self) -> String {
        let url = self.client().current_url().await.expect("a URL");
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Waits until the browser shows `path` (and query).
    pub async fn wait_for_path(&self, path: &str) {
        self.eventually(&format!("the browser to show {path}"), || async {
            (self.current_path().await == path).then_some(())
        })
        .await;
    }

    /// Waits until `#status` says `status` (`PENDING`, `PAID`, `FAILED`).
    pub async fn wait_for_status(&self, status: &str) {
        self.eventually(&format!("#status to say {status}"), || async {
            (self.attr("status", "data-status").await.as_deref() == Some(status)).then_some(())
        })
        .await;
    }

    /// Waits until the live region `#message` holds the notice with this code.
    pub async fn wait_for_notice(&self, code: &str) {
        self.eventually(&format!("the {code} notice"), || async {
            (self.attr("message", "data-notice").await.as_deref() == Some(code)).then_some(())
        })
        .await;
    }

    /// The text of the element with this id, when present.
    pub async fn text(&self, id: &str) -> Option<String> {
        let element = self.client().find(Locator::Id(id)).await.ok()?;
        element.text().await.ok()
    }

    /// An attribute of the element with this id, when both exist.
    pub async fn attr(&self, id: &str, name: &str) -> Option<String> {
        let element = self.client().find(Locator::Id(id)).await.ok()?;
        element.attr(name).await.ok().flatten()
    }

    /// Whether an element with this id is on the page.
    pub async fn is_present(&self, id: &str) -> bool {
        self.client().find(Locator::Id(id)).await.is_ok()
    }

    /// Whether the checkbox or radio input with this id is checked, when present.
    pub async fn is_checked(&self, id: &str) -> Option<bool> {
        self.js(&format!(
            "return document.getElementById('{id}')?.checked ?? null;"
        ))
        .await
        .as_bool()
    }

    /// The current value of the input with this id.
    pub async fn value_of(&self, id: &str) -> String {
        self.js(&format!("return document.getElementById('{id}').value;"))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Runs JavaScript in the page and returns its value.
    pub async fn js(&self, script: &str) -> Value {
        self.client()
            .execute(script, vec![])
            .await
            .unwrap_or_else(|err| panic!("script failed: {err}\n{script}"))
    }

    /// The refund lines under the receipt, in page order: for each, its
    /// amount and status as shown, its `data-status`, and its note ("" when
    /// it has none).
    pub async fn refund_lines(&self) -> Vec<(String, String, String, String)> {
        let lines = self
            .js("const text = (line, id) =>
                   line.querySelector(`[data-testid=${id}]`)?.textContent ?? '';
                 return [...document.querySelectorAll('[data-testid=refund]')].map((line) => [
                   text(line, 'refund-amount'), text(line, 'refund-status'),
                   line.dataset.status ?? '', text(line, 'refund-note'),
                 ]);")
            .await;
        serde_json::from_value(lines).expect("a list of [amount, status, data-status, note]")
    }

    /// How many `POST .../pay` requests this page load sent (Resource Timing).
    pub async fn pay_requests_sent(&self) -> u64 {
        self.js("return performance.getEntriesByType('resource')
                .filter(e => new URL(e.name).pathname.endsWith('/pay')).length;")
            .await
            .as_u64()
            .expect("a count")
    }

    /// `GET {path}` from inside the page, with the browser's session cookie:
    /// the status and the JSON body (null when there is none).
    pub async fn fetch_in_browser(&self, path: &str) -> (u16, Value) {
        let answer = self
            .client()
            .execute_async(
                "const [path, done] = arguments;
                 fetch(path, { headers: { accept: 'application/json' } })
                   .then(async (r) => done([r.status, await r.json().catch(() => null)]))
                   .catch((e) => done([0, String(e)]));",
                vec![Value::from(path)],
            )
            .await
            .unwrap_or_else(|err| panic!("fetch {path} in the page: {err}"));
        let status = answer[0].as_u64().expect("a status") as u16;
        (status, answer[1].clone())
    }

    /// The order as the signed-in shopper's page reads it (`GET /api/orders/{no}`).
    pub async fn order_in_browser(&self, order_no: &str) -> Order {
        let (status, body) = self
            .fetch_in_browser(&format!("/api/orders/{order_no}"))
            .await;
        assert_eq!(status, 200, "GET /api/orders/{order_no}: {body}");
        serde_json::from_value(body).expect("an Order")
    }

    /// What the page shows, for failure messages.
    pub async fn describe_page(&self) -> String {
        let url = self
            .client()
            .current_url()
            .await
            .map(|u| u.to_string())
            .unwrap_or_default();
        format!(
            "url={url} status={:?} message={:?} progress={:?} pay-button={} retry-button={}",
            self.attr("status", "data-status").await,
            self.text("message").await,
            self.text("progress").await,
            self.is_present("pay-button").await,
            self.is_present("retry-button").await,
        )
    }

    /// Polls `check` every 50 ms until it answers `Some`, or fails the test
    /// after [`PAGE_TIMEOUT`] with what the page showed.
    pub async fn eventually<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        loop {
            if let Some(value) = check().await {
                return value;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; {}",
                    self.describe_page().await
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
