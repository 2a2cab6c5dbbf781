//! Test infrastructure, once for every test crate: where the services are
//! ([`postgres_server_url`], [`redis_url`]), a database per test that is dropped
//! when the test passes and kept when it fails ([`TestDatabase`]), and the real
//! processes one test or load run owns: the backend binary, a `redis-server`, a
//! Redis Sentinel group ([`RedisSentinelGroup`]), a PostgreSQL cluster. Each
//! process on its own free port, so a test may kill, pause, flush or restart it
//! without disturbing anything else; and an HAProxy in front of several
//! backends ([`OwnedHaproxy`]).

mod database;
mod haproxy;
pub use database::{TestDatabase, postgres_server_url, redis_url};
pub use haproxy::OwnedHaproxy;

pub mod sentinel;
pub use sentinel::RedisSentinelGroup;

use anyhow::{Context, bail};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A free TCP port on 127.0.0.1 (free when asked; bind it soon).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The workspace root (where `Cargo.lock`, `dist/` and `docs/` are).
pub fn workspace_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}

/// The workspace's `target/` directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The ordinary backend binary (no crash points): `BACKEND_BIN`, else
/// `target/debug/backend`, built if missing.
pub fn backend_binary() -> anyhow::Result<PathBuf> {
    binary("BACKEND_BIN", "backend", &[])
}

/// The backend with crash points (`CRASH_POINTS`), for the fault tests:
/// `BACKEND_FAULT_INJECTION_BIN`, else `target/debug/backend-fault-injection`,
/// built with `--features fault-injection` if missing.
pub fn fault_injection_backend_binary() -> anyhow::Result<PathBuf> {
    binary(
        "BACKEND_FAULT_INJECTION_BIN",
        "backend-fault-injection",
        &["--features", "fault-injection"],
    )
}

/// The platform simulator binary: `PLATFORM_SIM_BIN`, else
/// `target/debug/platform-sim`, built if missing.
pub fn platform_sim_binary() -> anyhow::Result<PathBuf> {
    package_binary("PLATFORM_SIM_BIN", "platform-sim", "platform-sim", &[])
}

fn binary(variable: &str, name: &str, features: &[&str]) -> anyhow::Result<PathBuf> {
    package_binary(variable, "backend", name, features)
}

fn package_binary(
    variable: &str,
    package: &str,
    name: &str,
    features: &[&str],
) -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Ok(PathBuf::from(path));
    }
    let path = target_dir().join("debug").join(name);
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", package, "--bin", name])
            .args(features)
            .status()
            .with_context(|| format!("cannot run cargo build -p {package} --bin {name}"))?;
        if !status.success() {
            bail!("cargo build -p {package} --bin {name} failed");
        }
    }
    Ok(path)
}

fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status();
}

/// The backend (or another of our HTTP servers that answers `/healthz`, such
/// as platform-sim) as a child process, restartable on the same port and settings.
pub struct BackendProcess {
    binary: PathBuf,
    /// The environment variable that tells it where to listen.
    bind_var: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
    port: u16,
    log: PathBuf,
    child: Option<Child>,
    /// How many times it was (re)started.
    pub starts: u32,
}

impl BackendProcess {
    /// Starts `binary` on a free port with these environment variables (plus
    /// `BIND_ADDR`) and waits until it answers HTTP. Output goes to `log`.
    pub async fn start(
        binary: &Path,
        env: Vec<(String, String)>,
        log: PathBuf,
    ) -> anyhow::Result<Self> {
        Self::start_as(binary, "BIND_ADDR", Vec::new(), env, log).await
    }

    /// Starts `binary` with `args` and `env` on a free port given in
    /// `bind_var` (platform-sim: `SIM_BIND_ADDR`), and waits until it answers.
    pub async fn start_as(
        binary: &Path,
        bind_var: &'static str,
        args: Vec<String>,
        env: Vec<(String, String)>,
        log: PathBuf,
    ) -> anyhow::Result<Self> {
        let mut backend = Self {
            binary: binary.to_owned(),
            bind_var,
            args,
            env,
            port: free_port()?,
            log,
            child: None,
            starts: 0,
        };
        backend.spawn().await?;
        Ok(backend)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sets an environment variable for the next (re)start.
    pub fn set_env(&mut self, key: &str, value: String) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value));
    }

    /// The value of an environment variable it is started with.
    pub fn env(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its peak resident memory so far (`VmHWM` of `/proc/<pid>/status`), KiB,
    /// while it runs.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.status_kib("VmHWM:")
    }

    /// Its resident memory now (`VmRSS` of `/proc/<pid>/status`), KiB, while it runs.
    pub fn rss_kib(&self) -> Option<u64> {
        self.status_kib("VmRSS:")
    }

    /// The figure of `/proc/<pid>/status` line `field`, in KiB.
    fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        if let Some(dir) = self.log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let out = File::options().create(true).append(true).open(&self.log)?;
        let child = Command::new(&self.binary)
            .args(&self.args)
            // No balancer waits for a test's backend to drain, unless the test says so.
            .env("DRAIN_SECS", "0")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env(self.bind_var, format!("127.0.0.1:{}", self.port))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("cannot start {}", self.binary.display()))?;
        self.child = Some(child);
        self.starts += 1;
        self.wait_until_answering(Duration::from_secs(60)).await
    }

    async fn wait_until_answering(&mut self, limit: Duration) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        let started = tokio::time::Instant::now();
        while started.elapsed() < limit {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!(
                    "{} exited during start ({status}); see {}",
                    self.binary.display(),
                    self.log.display()
                );
            }
            if http
                .get(format!("{}/healthz", self.url()))
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!(
            "backend did not answer within {limit:?}; see {}",
            self.log.display()
        )
    }

    /// `kill -9`: no shutdown, no answers for requests in flight.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM and wait: a graceful stop.
    pub fn terminate(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "TERM");
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and returns at once: the backend drains (`DRAIN_SECS`) and exits.
    pub fn signal_terminate(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, "TERM");
        }
    }

    /// Waits (polling, at most `limit`) for the process to exit; its exit status.
    pub async fn wait_for_exit(
        &mut self,
        limit: Duration,
    ) -> anyhow::Result<std::process::ExitStatus> {
        let started = tokio::time::Instant::now();
        loop {
            let Some(child) = self.child.as_mut() else {
                bail!("the process is not running");
            };
            if let Some(status) = child.try_wait()? {
                self.child = None;
                return Ok(status);
            }
            if started.elapsed() > limit {
                bail!(
                    "the process did not exit within {limit:?}; see {}",
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Graceful stop, then start again on the same port.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.terminate();
        self.spawn().await
    }

    /// Freezes the process (SIGSTOP): connections stay open, nothing is answered.
    pub fn pause(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, "STOP");
        }
    }

    /// Thaws it (SIGCONT).
    pub fn resume(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, "CONT");
        }
    }

    /// True once the process has exited (e.g. a crash point aborted it).
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => !matches!(child.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// Starts it again if it died; returns whether it had to.
    pub async fn revive(&mut self) -> anyhow::Result<bool> {
        if self.has_exited() {
            self.child = None;
            self.spawn().await?;
            return Ok(true);
        }
        Ok(false)
    }
}

impl Drop for BackendProcess {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            signal(pid, "CONT");
        }
        self.kill9();
    }
}

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
fn redis_client(url: String, root_cert: Option<Vec<u8>>) -> redis::RedisResult<redis::Client> {
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
fn write_self_signed(dir: &Path) -> anyhow::Result<()> {
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
fn tls_settings(dir: &Path) -> Vec<(&'static str, String)> {
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
fn tls_arguments(command: &mut Command, dir: &Path) {
    for (name, value) in tls_settings(dir) {
        command.arg(format!("--{name}")).arg(value);
    }
}

/// How many times `command` ran, from the text of `INFO commandstats` (a line
/// `cmdstat_<name>:calls=<n>,...` per command, subcommands as `<command>|<subcommand>`).
fn calls_in(stats: &str, command: &str) -> anyhow::Result<u64> {
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

/// The newest PostgreSQL server binaries directory (`/usr/lib/postgresql/<v>/bin`).
pub fn postgres_bin_dir() -> anyhow::Result<PathBuf> {
    std::fs::read_dir("/usr/lib/postgresql")
        .context("PostgreSQL server binaries not found under /usr/lib/postgresql")?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|path| path.join("initdb").exists())
        .max()
        .context("no initdb found under /usr/lib/postgresql")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A fresh, empty directory under the temp dir for a PostgreSQL cluster, owned
/// by the postgres user when we are root (initdb refuses to run as root).
pub fn postgres_data_dir(prefix: &str) -> anyhow::Result<PathBuf> {
    let data = std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&data)?;
    if is_root() {
        let status = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&data)
            .status()?;
        if !status.success() {
            bail!("cannot hand {} to the postgres user", data.display());
        }
    }
    Ok(data)
}

/// Runs `args[0]` from the PostgreSQL binaries in `bin` with `args[1..]`, as the
/// postgres user when we are root; fails with the tool's stderr.
pub fn run_postgres_tool(bin: &Path, args: &[&str]) -> anyhow::Result<()> {
    let program = bin.join(args[0]);
    let mut cmd = if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(&program);
        cmd
    } else {
        Command::new(&program)
    };
    cmd.args(&args[1..]);
    let output = cmd
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    if !output.status.success() {
        bail!(
            "{} {:?} failed: {}",
            program.display(),
            &args[1..],
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// A PostgreSQL cluster of our own (initdb in a temporary directory, fsync off).
pub struct OwnedPostgres {
    /// Its port.
    pub port: u16,
    data: PathBuf,
    bin: PathBuf,
}

impl OwnedPostgres {
    /// Initialises and starts a cluster on a free port.
    pub fn start() -> anyhow::Result<Self> {
        let pg = Self {
            port: free_port()?,
            data: postgres_data_dir("checkout-pg")?,
            bin: postgres_bin_dir()?,
        };
        pg.pg(&[
            "initdb",
            "-D",
            &pg.data_str(),
            "-U",
            "postgres",
            "--auth=trust",
            "-N",
        ])?;
        pg.pg_ctl("start")?;
        Ok(pg)
    }

    fn data_str(&self) -> String {
        self.data.display().to_string()
    }

    fn pg(&self, args: &[&str]) -> anyhow::Result<()> {
        run_postgres_tool(&self.bin, args)
    }

    fn pg_ctl(&self, action: &str) -> anyhow::Result<()> {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off -c max_connections=200",
            self.port,
            self.data_str()
        );
        let log = self.data.join("server.log").display().to_string();
        let data = self.data_str();
        let mut args = vec![
            "pg_ctl", action, "-D", &data, "-w", "-l", &log, "-o", &options,
        ];
        if action != "start" {
            args.extend(["-m", "fast"]);
        }
        self.pg(&args)
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Stops the server (fast shutdown: connections are cut).
    pub fn stop(&self) -> anyhow::Result<()> {
        self.pg(&["pg_ctl", "stop", "-D", &self.data_str(), "-w", "-m", "fast"])
    }

    /// Starts it again.
    pub fn resume(&self) -> anyhow::Result<()> {
        self.pg_ctl("start")
    }

    /// `pg_ctl restart`.
    pub fn restart(&self) -> anyhow::Result<()> {
        self.pg_ctl("restart")
    }
}

impl Drop for OwnedPostgres {
    fn drop(&mut self) {
        let _ = self.pg(&["pg_ctl", "stop", "-D", &self.data_str(), "-m", "immediate"]);
        let _ = std::fs::remove_dir_all(&self.data);
    }
}
