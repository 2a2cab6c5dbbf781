//! A Redis Sentinel group of our own: a primary `redis-server`, one replica and
//! three sentinels monitoring the primary, every process on its own free
//! loopback port, without persistence. A test kills the primary and waits for
//! the sentinels to promote the replica. [`RedisSentinelGroup::start_tls`]
//! starts one in which every process speaks only TLS, as a managed Redis
//! with sentinels does.

use crate::free_port;
use crate::redis_server::{calls_in, redis_client, tls_arguments, tls_settings, write_self_signed};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The name the sentinels monitor the primary under.
pub const MASTER_NAME: &str = "checkout";

/// One process of the group.
struct Node {
    port: u16,
    child: Option<Child>,
}

impl Node {
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL: no goodbye to the replica or the sentinels.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A primary, a replica (`--replicaof`) and three sentinels (quorum 2,
/// `down-after-milliseconds 1000`, `failover-timeout 5000`), all killed and
/// their temporary directory removed on drop (kept, and named on stderr, when
/// the test panicked: the logs of every process are in it).
pub struct RedisSentinelGroup {
    dir: PathBuf,
    /// The two data nodes: `[0]` started as primary, `[1]` as its replica.
    data: Vec<Node>,
    sentinels: Vec<Node>,
    /// The primary's port before the last kill or manual failover.
    previous_primary: Option<u16>,
    /// How the test reaches the processes.
    link: Link,
}

/// How the group's processes are reached: plain TCP, or TLS trusting the
/// group's own self-signed certificate (with [`RedisSentinelGroup::start_tls`]).
#[derive(Clone)]
struct Link {
    root_cert: Option<Vec<u8>>,
}

impl Link {
    fn url(&self, port: u16) -> String {
        match self.root_cert {
            Some(_) => format!("rediss://127.0.0.1:{port}"),
            None => format!("redis://127.0.0.1:{port}"),
        }
    }

    /// One command over a connection of its own, 500 ms to connect and to answer.
    async fn query<T: redis::FromRedisValue>(
        &self,
        port: u16,
        cmd: &mut redis::Cmd,
    ) -> anyhow::Result<T> {
        let client = redis_client(self.url(port), self.root_cert.clone())?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(500)))
            .set_response_timeout(Some(Duration::from_millis(500)));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        Ok(cmd.query_async(&mut conn).await?)
    }

    /// The first element of `ROLE`: `master`, `slave` or `sentinel`.
    async fn role(&self, port: u16) -> Option<String> {
        let role: Vec<redis::Value> = self.query(port, &mut redis::cmd("ROLE")).await.ok()?;
        match role.into_iter().next()? {
            redis::Value::BulkString(name) => String::from_utf8(name).ok(),
            redis::Value::SimpleString(name) => Some(name),
            _ => None,
        }
    }

    async fn wait_for_ping(&self, port: u16) -> anyhow::Result<()> {
        wait_until(
            Duration::from_secs(5),
            &format!("port {port} to answer PING"),
            || async move {
                let _: String = self.query(port, &mut redis::cmd("PING")).await?;
                Ok(true)
            },
        )
        .await
    }
}

impl RedisSentinelGroup {
    /// Starts the group and waits until the replica is in sync and every
    /// sentinel knows the replica and the other two sentinels (before that a
    /// failover could not succeed).
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(false).await
    }

    /// Like [`Self::start`], but every process listens only on TLS (`port 0`,
    /// `tls-port`) and reaches the others over TLS (`tls-replication yes`),
    /// with a self-signed certificate for `localhost` and `127.0.0.1` that no
    /// system trusts: only [`Self::ca_file`] vouches for it.
    pub async fn start_tls() -> anyhow::Result<Self> {
        Self::start_with(true).await
    }

    async fn start_with(tls: bool) -> anyhow::Result<Self> {
        let sentinel_program = sentinel_program()?;
        let dir = std::env::temp_dir().join(format!(
            "redis-sentinel-group-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let root_cert = if tls {
            write_self_signed(&dir)?;
            Some(std::fs::read(dir.join("redis.pem"))?)
        } else {
            None
        };
        let mut group = Self {
            dir,
            data: Vec::new(),
            sentinels: Vec::new(),
            previous_primary: None,
            link: Link { root_cert },
        };
        let link = group.link.clone();
        let tls_dir = tls.then(|| group.dir.clone());

        let primary_port = free_port()?;
        group.data.push(Node {
            port: primary_port,
            child: Some(spawn_data_node(&group.dir, primary_port, None, tls)?),
        });
        link.wait_for_ping(primary_port).await?;
        let replica_port = free_port()?;
        group.data.push(Node {
            port: replica_port,
            child: Some(spawn_data_node(
                &group.dir,
                replica_port,
                Some(primary_port),
                tls,
            )?),
        });
        link.wait_for_ping(replica_port).await?;
        wait_until(Duration::from_secs(10), "the replica to sync", || async {
            let info: String = link
                .query(replica_port, redis::cmd("INFO").arg("replication"))
                .await?;
            Ok(info.contains("master_link_status:up"))
        })
        .await?;

        for index in 0..3 {
            let port = free_port()?;
            let conf = group.dir.join(format!("sentinel-{index}.conf"));
            let log = group.dir.join(format!("sentinel-{index}.log"));
            let listen = match &tls_dir {
                Some(dir) => {
                    let mut lines = format!("port 0\ntls-port {port}\n");
                    for (name, value) in tls_settings(dir) {
                        lines.push_str(&format!("{name} \"{value}\"\n"));
                    }
                    lines
                }
                None => format!("port {port}\n"),
            };
            std::fs::write(
                &conf,
                format!(
                    "{listen}\
                     bind 127.0.0.1\n\
                     daemonize no\n\
                     logfile \"{log}\"\n\
                     dir \"{dir}\"\n\
                     sentinel monitor {MASTER_NAME} 127.0.0.1 {primary_port} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
                     sentinel failover-timeout {MASTER_NAME} 5000\n\
                     sentinel parallel-syncs {MASTER_NAME} 1\n",
                    log = log.display(),
                    dir = group.dir.display(),
                ),
            )
            .with_context(|| format!("cannot write {}", conf.display()))?;
            let child = sentinel_program
                .command(&conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot start a sentinel")?;
            group.sentinels.push(Node {
                port,
                child: Some(child),
            });
        }
        for sentinel in &group.sentinels {
            link.wait_for_ping(sentinel.port).await?;
        }
        // A sentinel learns the replica from the primary's INFO, which it reads
        // every 10 s, and the other sentinels from hello messages every 2 s:
        // on a loaded machine that can take more than 20 s.
        for sentinel in group.sentinels.iter().map(|node| node.port) {
            wait_until(
                Duration::from_secs(60),
                "every sentinel to know the replica and the other sentinels",
                || async {
                    let replicas: Vec<redis::Value> = link
                        .query(
                            sentinel,
                            redis::cmd("SENTINEL").arg("replicas").arg(MASTER_NAME),
                        )
                        .await?;
                    let others: Vec<redis::Value> = link
                        .query(
                            sentinel,
                            redis::cmd("SENTINEL").arg("sentinels").arg(MASTER_NAME),
                        )
                        .await?;
                    Ok(replicas.len() == 1 && others.len() == 2)
                },
            )
            .await?;
        }
        Ok(group)
    }

    /// The sentinels' addresses, `127.0.0.1:<port>` each.
    pub fn sentinel_addrs(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect()
    }

    /// The name the sentinels monitor the primary under.
    pub fn master_name(&self) -> &'static str {
        MASTER_NAME
    }

    /// With [`Self::start_tls`]: the PEM file of the authority that vouches
    /// for every process's certificate (the certificate itself).
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.link
            .root_cert
            .as_ref()
            .map(|_| self.dir.join("redis.pem"))
    }

    /// How many times `command` (lowercase, e.g. `set`) ran on the process
    /// at `port` since it started or since [`Self::reset_stats`].
    pub async fn calls(&self, port: u16, command: &str) -> anyhow::Result<u64> {
        let stats: String = self
            .link
            .query(port, redis::cmd("INFO").arg("commandstats"))
            .await?;
        calls_in(&stats, command)
    }

    /// `CONFIG RESETSTAT` on every running data node (sentinels cannot:
    /// their counts start when they do).
    pub async fn reset_stats(&self) -> anyhow::Result<()> {
        for node in self.data.iter().filter(|node| node.child.is_some()) {
            let _: redis::Value = self
                .link
                .query(node.port, redis::cmd("CONFIG").arg("RESETSTAT"))
                .await?;
        }
        Ok(())
    }

    /// The primary's port, as the first sentinel that answers names it
    /// (`SENTINEL get-master-addr-by-name`). Asks again for up to 5 s while
    /// none answers: each question gives a sentinel 500 ms, which a sentinel
    /// starved of CPU on a loaded machine can miss (`scripts/test.sh` once
    /// failed a test at `kill_primary` that way, all three sentinels healthy in
    /// their logs).
    pub async fn primary_port(&self) -> anyhow::Result<u16> {
        let start = Instant::now();
        loop {
            match self.ask_for_primary_port().await {
                Ok(port) => return Ok(port),
                Err(err) if start.elapsed() > Duration::from_secs(5) => return Err(err),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// One round of [`Self::primary_port`]: each running sentinel asked once.
    async fn ask_for_primary_port(&self) -> anyhow::Result<u16> {
        let mut last = None;
        for sentinel in &self.sentinels {
            if sentinel.child.is_none() {
                continue;
            }
            let answer: anyhow::Result<(String, String)> = self
                .link
                .query(
                    sentinel.port,
                    redis::cmd("SENTINEL")
                        .arg("get-master-addr-by-name")
                        .arg(MASTER_NAME),
                )
                .await;
            match answer {
                Ok((_, port)) => return port.parse().context("the sentinel named no port"),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("no sentinel is running")))
    }

    /// `redis://127.0.0.1:<port>` (`rediss://` with TLS) of the current
    /// primary (as the sentinels name it).
    pub async fn primary_url(&self) -> anyhow::Result<String> {
        Ok(self.link.url(self.primary_port().await?))
    }

    /// `redis://127.0.0.1:<port>` (`rediss://` with TLS) of the node started
    /// as the replica (the primary after one failover).
    pub fn replica_url(&self) -> String {
        self.link.url(self.data[1].port)
    }

    /// `kill -9` of the current primary; returns its port.
    pub async fn kill_primary(&mut self) -> anyhow::Result<u16> {
        let port = self.primary_port().await?;
        let node = self
            .data
            .iter_mut()
            .find(|node| node.port == port)
            .with_context(|| format!("the sentinels name port {port}, not one of ours"))?;
        if node.child.is_none() {
            bail!("the primary on port {port} was already killed");
        }
        node.kill();
        self.previous_primary = Some(port);
        Ok(port)
    }

    /// `SENTINEL FAILOVER`: a graceful, manual failover; the primary stays
    /// up and is demoted to a replica. Returns its port.
    pub async fn manual_failover(&mut self) -> anyhow::Result<u16> {
        let port = self.primary_port().await?;
        let sentinel = self
            .sentinels
            .iter()
            .find(|node| node.child.is_some())
            .context("no sentinel is running")?;
        let _: String = self
            .link
            .query(
                sentinel.port,
                redis::cmd("SENTINEL").arg("failover").arg(MASTER_NAME),
            )
            .await?;
        self.previous_primary = Some(port);
        Ok(port)
    }

    /// Waits until the failover is over: the sentinels name a primary other
    /// than the one killed or failed over, that node says it is a primary, and
    /// the old one, if still up, says it is a replica. Returns the new port.
    pub async fn wait_for_failover(&self, timeout: Duration) -> anyhow::Result<u16> {
        let start = Instant::now();
        loop {
            let alive: Vec<u16> = self
                .data
                .iter()
                .filter(|node| node.child.is_some())
                .map(|node| node.port)
                .collect();
            if let Ok(port) = self.primary_port().await
                && alive.contains(&port)
                && Some(port) != self.previous_primary
            {
                // A demoted primary that is still up must have been turned
                // into a replica too: until then it still takes writes.
                let demoted = match self.previous_primary.filter(|old| alive.contains(old)) {
                    Some(old) => self.link.role(old).await.as_deref() == Some("slave"),
                    None => true,
                };
                if demoted && self.link.role(port).await.as_deref() == Some("master") {
                    return Ok(port);
                }
            }
            if start.elapsed() > timeout {
                bail!(
                    "no failover within {timeout:?} (logs in {})",
                    self.dir.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The temporary directory (configurations and logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for RedisSentinelGroup {
    fn drop(&mut self) {
        for node in self.sentinels.iter_mut().chain(self.data.iter_mut()) {
            node.kill();
        }
        if std::thread::panicking() {
            eprintln!("redis sentinel group logs kept in {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// How a sentinel is started on this machine.
enum SentinelProgram {
    /// `redis-sentinel <conf>`.
    RedisSentinel,
    /// `redis-server <conf> --sentinel`.
    RedisServer,
}

impl SentinelProgram {
    fn command(&self, conf: &Path) -> Command {
        match self {
            Self::RedisSentinel => {
                let mut command = Command::new("redis-sentinel");
                command.arg(conf);
                command
            }
            Self::RedisServer => {
                let mut command = Command::new("redis-server");
                command.arg(conf).arg("--sentinel");
                command
            }
        }
    }
}

/// `redis-sentinel` if installed, else `redis-server --sentinel`; a clear error without either.
fn sentinel_program() -> anyhow::Result<SentinelProgram> {
    let works = |program: &str| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if works("redis-sentinel") {
        Ok(SentinelProgram::RedisSentinel)
    } else if works("redis-server") {
        Ok(SentinelProgram::RedisServer)
    } else {
        bail!(
            "Redis Sentinel is not available: neither `redis-sentinel` nor `redis-server` \
             (run as `redis-server <conf> --sentinel`) could be run; install redis-sentinel \
             (Debian: apt-get install redis-sentinel redis-server)"
        )
    }
}

fn spawn_data_node(
    dir: &Path,
    port: u16,
    replica_of: Option<u16>,
    tls: bool,
) -> anyhow::Result<Child> {
    let mut command = Command::new("redis-server");
    if tls {
        command.args(["--port", "0", "--tls-port", &port.to_string()]);
        tls_arguments(&mut command, dir);
    } else {
        command.args(["--port", &port.to_string()]);
    }
    command
        .args(["--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join(format!("redis-{port}.log")));
    if let Some(primary) = replica_of {
        command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
    }
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start redis-server")
}

async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let start = Instant::now();
    loop {
        let last = match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => None,
            Err(err) => Some(err),
        };
        if start.elapsed() > timeout {
            let detail = last.map(|err| format!(": {err:#}")).unwrap_or_default();
            bail!("timed out after {timeout:?} waiting for {what}{detail}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
