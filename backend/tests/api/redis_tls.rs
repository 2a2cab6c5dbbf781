//! Redis over TLS: `REDIS_URL=rediss://...` (a managed Redis that takes only
//! encrypted connections) reaches Redis with TLS, verifying its certificate
//! against the system's roots (`SSL_CERT_FILE` names another authority).
//! Redis serves TLS only here (`--port 0`), so a token that went through went
//! through TLS.

use crate::logs::PaidOrder;
use backend::env;
use reqwest::StatusCode;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use testkit::{BackendProcess, TestDatabase};
use uuid::Uuid;

/// A `redis-server` that speaks only TLS, with a certificate for `localhost`
/// that no system trusts; stopped when dropped.
struct TlsRedis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl TlsRedis {
    async fn start() -> Self {
        let dir =
            std::env::temp_dir().join(format!("checkout-redis-tls-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let rcgen::CertifiedKey { cert, signing_key } =
            rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
                .expect("a self-signed certificate");
        std::fs::write(dir.join("redis.pem"), cert.pem()).expect("certificate");
        std::fs::write(dir.join("redis.key"), signing_key.serialize_pem()).expect("key");
        let port = testkit::free_port().expect("a free port");
        let path = |name: &str| dir.join(name).display().to_string();
        let child = Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .args([
                "--tls-cert-file",
                &path("redis.pem"),
                "--tls-key-file",
                &path("redis.key"),
            ])
            .args([
                "--tls-ca-cert-file",
                &path("redis.pem"),
                "--tls-auth-clients",
                "no",
            ])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                &dir.display().to_string(),
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server runs");
        let redis = Self { child, port, dir };
        for _ in 0..100 {
            if redis.cli(&["PING"]).is_some_and(|out| out.trim() == "PONG") {
                // Count from here: this PING is not the backend's.
                redis.cli(&["CONFIG", "RESETSTAT"]).expect("stats reset");
                return redis;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not answer on its TLS port {port}");
    }

    fn ca_file(&self) -> PathBuf {
        self.dir.join("redis.pem")
    }

    fn url(&self) -> String {
        format!("rediss://localhost:{}", self.port)
    }

    /// `redis-cli --tls` trusting the server's certificate; its output.
    fn cli(&self, args: &[&str]) -> Option<String> {
        let output = Command::new("redis-cli")
            .args(["--tls", "--cacert", &self.ca_file().display().to_string()])
            .args(["-h", "localhost", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// How many times `command` ran (`INFO commandstats`).
    fn calls(&self, command: &str) -> u64 {
        let stats = self.cli(&["INFO", "commandstats"]).unwrap_or_default();
        stats
            .lines()
            .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:calls=")))
            .and_then(|rest| rest.split(',').next())
            .and_then(|calls| calls.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn with_a_rediss_url_tokens_go_through_a_tls_only_redis() {
    let redis = TlsRedis::start().await;
    let _paid = PaidOrder::pay(
        "checkout_test_redis_tls",
        vec![
            (env::REDIS_URL.into(), redis.url()),
            (
                "SSL_CERT_FILE".into(),
                redis.ca_file().display().to_string(),
            ),
        ],
    )
    .await;
    // Issued with SET, consumed with the guarded GETDEL script (EVAL).
    let stats = redis.cli(&["INFO", "commandstats"]);
    assert!(
        redis.calls("set") >= 1 && redis.calls("eval") >= 1,
        "the token did not go through the TLS Redis: {stats:?}"
    );
}

#[tokio::test]
async fn a_redis_certificate_nobody_vouches_for_is_redis_down_not_a_plain_connection() {
    let redis = TlsRedis::start().await;
    let database = TestDatabase::new("checkout_test_redis_tls");
    let log = testkit::target_dir().join(format!("test-logs/{}.log", database.name()));
    let mut backend = BackendProcess::start(
        Path::new(env!("CARGO_BIN_EXE_backend")),
        vec![
            (env::PLATFORM.into(), "sandbox".into()),
            (env::DATABASE_URL.into(), database.url()),
            (env::REDIS_URL.into(), redis.url()),
        ],
        log,
    )
    .await
    .expect("the backend starts without Redis");
    let health = reqwest::get(format!("{}/healthz", backend.url()))
        .await
        .expect("sent");
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = health.json().await.expect("health");
    assert_eq!(
        (body["database"].as_str(), body["redis"].as_str()),
        (Some("ok"), Some("down"))
    );
    backend.terminate();
    assert_eq!(
        redis.calls("ping"),
        0,
        "a command reached Redis past an untrusted certificate"
    );
}
