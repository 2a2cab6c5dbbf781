//! A `redis-server` of a test's own, plain or speaking only TLS with a
//! certificate no system trusts, and the TLS settings and command counts a
//! Redis Sentinel group ([`crate::sentinel`]) shares.

use crate::free_port;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `redis-server` of our own.
pub struct OwnedRedis {
    /// Its port.
    pub port: u16,
    child: Option<Child>,
    /// With [`OwnedRedis::start_tls`]: the directory of its certificate and key.
    tls_dir: Option<PathBuf>,
}

impl OwnedRedis {
    /// Starts one on a free port and waits until it answers.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(None).await
    }

    /// Starts one that speaks only TLS (no plain port), with a self-signed
    /// certificate for `localhost` that no system trusts: only
    /// [`OwnedRedis::ca_file`] vouches for it.
    pub async fn start_tls() -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "testkit-redis-tls-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)?;
        write_self_signed(&dir)?;
        Self::start_with(Some(dir)).await
    }

    async fn start_with(tls_dir: Option<PathBuf>) -> anyhow::Result<Self> {
        let mut redis = Self {
            port: free_port()?,
            child: None,
            tls_dir,
        };
        redis.resume().await?;
        Ok(redis)
    }

    /// Its URL (`rediss://localhost:<port>` when it speaks TLS).
    pub fn url(&self) -> String {
        match self.tls_dir {
            Some(_) => format!("rediss://localhost:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// With [`OwnedRedis::start_tls`]: the PEM file of the authority that
    /// vouches for its certificate (the certificate itself).
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.tls_dir.as_ref().map(|dir| dir.join("redis.pem"))
    }

    /// Starts it (again) on its port, empty.
    pub async fn resume(&mut self) -> anyhow::Result<()> {
        let port = self.port.to_string();
        let mut command = Command::new("redis-server");
        match &self.tls_dir {
            Some(dir) => {
                command
                    .args(["--port", "0", "--tls-port", &port])
                    .arg("--dir")
                    .arg(dir);
                tls_arguments(&mut command, dir);
            }
            None => {
                command.args(["--port", &port]);
            }
        }
        let child = command
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start redis-server")?;
        self.child = Some(child);
        for _ in 0..100 {
            if self.command::<redis::Value>(&["PING"]).await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("redis-server on port {} did not answer", self.port)
    }

    /// Kills it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `FLUSHALL`: Redis lost its data.
    pub async fn flush(&self) -> anyhow::Result<()> {
        self.command::<redis::Value>(&["FLUSHALL"]).await.map(drop)
    }

    /// How many times `command` (lowercase, e.g. `getdel`) ran since it started
    /// or since [`OwnedRedis::reset_stats`] (`INFO commandstats`).
    pub async fn calls(&self, command: &str) -> anyhow::Result<u64> {
        let stats: String = self.command(&["INFO", "commandstats"]).await?;
        calls_in(&stats, command)
    }

    /// `CONFIG RESETSTAT`: counts start again from zero.
    pub async fn reset_stats(&self) -> anyhow::Result<()> {
        self.command::<redis::Value>(&["CONFIG", "RESETSTAT"])
            .await
            .map(drop)
    }

    /// One command over a connection of its own, trusting its certificate.
    async fn command<T: redis::FromRedisValue>(&self, args: &[&str]) -> anyhow::Result<T> {
        let root_cert = self.ca_file().map(std::fs::read).transpose()?;
        let client = redis_client(self.url(), root_cert)?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        Ok(redis::cmd(args[0])
            .arg(&args[1..])
            .query_async(&mut conn)
            .await?)
    }
}

impl Drop for OwnedRedis {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = &self.tls_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A client of the Redis at `url`, trusting `root_cert` (PEM) for a
/// `rediss://` one.
pub(crate) fn redis_client(
    url: String,
    root_cert: Option<Vec<u8>>,
) -> redis::RedisResult<redis::Client> {
    match root_cert {
        Some(root_cert) => redis::Client::build_with_tls(
            url,
            redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(root_cert),
            },
        ),
        None => redis::Client::open(url),
    }
}

/// Writes `redis.pem` and `redis.key` into `dir`: a self-signed certificate
/// for `localhost` and `127.0.0.1` (the address Redis Sentinel names nodes
/// by) that no system trusts; `redis.pem` is also the authority to trust.
pub(crate) fn write_self_signed(dir: &Path) -> anyhow::Result<()> {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
    std::fs::write(dir.join("redis.pem"), cert.pem())?;
    std::fs::write(dir.join("redis.key"), signing_key.serialize_pem())?;
    Ok(())
}

/// The TLS settings (name, value) of a redis-server or sentinel whose
/// certificate [`write_self_signed`] wrote into `dir`: clients need no
/// certificate of their own, and a replica or sentinel reaches the other
/// nodes over TLS too.
pub(crate) fn tls_settings(dir: &Path) -> Vec<(&'static str, String)> {
    let file = |name: &str| dir.join(name).display().to_string();
    vec![
        ("tls-cert-file", file("redis.pem")),
        ("tls-key-file", file("redis.key")),
        ("tls-ca-cert-file", file("redis.pem")),
        ("tls-auth-clients", "no".to_owned()),
        ("tls-replication", "yes".to_owned()),
    ]
}

/// [`tls_settings`] as `redis-server` arguments.
pub(crate) fn tls_arguments(command: &mut Command, dir: &Path) {
    for (name, value) in tls_settings(dir) {
        command.arg(format!("--{name}")).arg(value);
    }
}

/// How many times `command` ran, from the text of `INFO commandstats` (a line
/// `cmdstat_<name>:calls=<n>,...` per command, subcommands as `<command>|<subcommand>`).
pub(crate) fn calls_in(stats: &str, command: &str) -> anyhow::Result<u64> {
    let mut calls = 0;
    for line in stats.lines() {
        let Some((name, rest)) = line
            .strip_prefix("cmdstat_")
            .and_then(|line| line.split_once(":calls="))
        else {
            continue;
        };
        if name == command {
            let count = rest.split(',').next().unwrap_or_default();
            calls += count
                .parse::<u64>()
                .with_context(|| format!("not a count of calls: {line}"))?;
        }
    }
    Ok(calls)
}
