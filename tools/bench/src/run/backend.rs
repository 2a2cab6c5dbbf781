//! The backend under test: one release process per phase, against the
//! backend's database and our Redis prefix.
//!
//! The callback steps share one process and the pay gets its own (whose
//! platform must not deliver callbacks), so each phase's peak memory is its
//! own; the peak is read just before the process stops.

use super::{Bench, say};
use std::net::SocketAddr;
use testkit::BackendProcess;

impl Bench {
    /// Starts the backend for phase `name` and makes it the process whose CPU counts as "backend".
    pub(super) async fn start_backend(
        &mut self,
        name: &str,
        callback_delay_ms: u64,
    ) -> anyhow::Result<SocketAddr> {
        let env = self.backend_env(name, callback_delay_ms);
        let log = self.work.join(format!("backend-{name}.log"));
        let process = BackendProcess::start(&self.backend_bin, env, log).await?;
        let addr = SocketAddr::from(([127, 0, 0, 1], process.port()));
        self.roots.backends = process.pid().into_iter().collect();
        say(format!(
            "    backend pid {} on {addr} ({}), RUST_LOG=warn",
            process.pid().unwrap_or(0),
            self.backend_bin.display()
        ));
        self.backend = Some((process, addr));
        Ok(addr)
    }

    /// The environment of a backend for phase `name`: the backend's database,
    /// our Redis prefix, the signing secret, no rate limits, the pool size
    /// asked for; the sandbox platform except for the pay with a platform URL.
    /// Every instance of the scale-out step gets the same.
    pub(super) fn backend_env(&self, name: &str, callback_delay_ms: u64) -> Vec<(String, String)> {
        use backend::env::*;
        let admin: [u8; 16] = rand::random();
        let mut env = vec![
            (DATABASE_URL, self.database_url(&self.http_db)),
            (REDIS_URL, self.args.redis_url.clone()),
            (REDIS_KEY_PREFIX, format!("{}backend:", self.redis_prefix)),
            (WEBHOOK_SECRET, self.signer.secret().expose().to_owned()),
            (
                ADMIN_TOKEN,
                admin.iter().map(|b| format!("{b:02x}")).collect(),
            ),
            (RUST_LOG, "warn".to_owned()),
            // One bench shopper pays far faster than any person: no rate limits.
            (RATE_LIMIT_ORDERS_PER_SHOPPER, "0".to_owned()),
            (RATE_LIMIT_TOKENS_PER_SHOPPER, "0".to_owned()),
            (RATE_LIMIT_PAYS_PER_SHOPPER, "0".to_owned()),
            (SANDBOX_CALLBACK_DELAY_MS, callback_delay_ms.to_string()),
            // The stock's attempts were handed over by the bench, to no
            // platform, and each waits for the callback the bench sends; after
            // the default minute the query worker would ask the sandbox about
            // every one still waiting (payments it never saw), and the callback
            // runs would measure those queries too.
            (QUERY_AFTER_SECS, "86400".to_owned()),
        ];
        if let Some(n) = self.args.db_max_connections {
            env.push((DATABASE_MAX_CONNECTIONS, n.to_string()));
        }
        // The pay hands payments to a platform-sim process, as in production;
        // the callback phases need no platform at all, and use the sandbox.
        match (name, &self.args.pay_platform_url) {
            ("pay", Some(url)) => {
                env.push((PLATFORM, "remote".to_owned()));
                env.push((PLATFORM_URL, url.clone()));
            }
            _ => env.push((PLATFORM, "sandbox".to_owned())),
        }
        env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// The running backend's address, starting the callbacks' backend if none runs.
    pub(super) async fn backend_addr(&mut self) -> anyhow::Result<SocketAddr> {
        match &self.backend {
            Some((_, addr)) => Ok(*addr),
            None => self.start_backend("callbacks", 500).await,
        }
    }

    /// Stops the backend, recording its peak memory under `phase`.
    pub(super) fn stop_backend(&mut self, phase: &str) {
        if let Some((mut process, _)) = self.backend.take() {
            if let Some(kib) = process.peak_rss_kib() {
                say(format!(
                    "    backend peak RSS (VmHWM), {phase}: {:.1} MiB",
                    kib as f64 / 1024.0
                ));
                self.results.peak_rss_kib.push((phase.to_owned(), kib));
            }
            process.terminate();
            self.roots.backends.clear();
        }
    }
}
