//! The Redis connection the request-token store runs on: directly at
//! `REDIS_URL`, or through Redis Sentinel, which names the current primary.
//!
//! In the second mode [`Redis`] keeps one multiplexed connection to the primary
//! the sentinels named; a command that fails in a way that means that node is
//! gone or no longer primary (I/O error, dropped connection, timeout,
//! `READONLY`, ...) forgets it, and the next call asks the sentinels again (one
//! caller at a time). During a failover calls fail fast (503), and once a
//! replica has been promoted they work again without a restart.

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{
    AsyncConnectionConfig, ConnectionAddr, ErrorKind, IntoConnectionInfo, ServerErrorKind, TlsMode,
};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;
use tokio::time::Instant;

/// Longest we wait for Redis before answering 503: a slow helper must not stall checkout.
const REDIS_DEADLINE: Duration = Duration::from_millis(1_000);

/// After the sentinels could not name a usable primary, callers fail at once
/// for this long instead of each asking again (a failover takes seconds).
const LOOKUP_BACKOFF: Duration = Duration::from_millis(100);

/// Where the token store finds Redis.
#[derive(Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One Redis node at this URL (`REDIS_URL`).
    Direct {
        /// `redis://[user:password@]host:port[/db]`.
        url: String,
    },
    /// The primary the sentinels name for `master_name`, followed across failovers.
    Sentinel {
        /// The sentinels to ask (`REDIS_SENTINELS`), never empty.
        sentinels: Vec<SentinelAddr>,
        /// The monitored master's name (`REDIS_MASTER_NAME`).
        master_name: String,
        /// `REDIS_URL`: only its username, password, database and scheme are
        /// used (`rediss://` or `valkeys://`: TLS to the sentinels and the primary).
        url: String,
    },
}

impl RedisTarget {
    /// How Redis is reached, for the start-up log: `"plain"` TCP, TLS
    /// `"verified"`, or TLS `"unverified"` (`#insecure`); `"plain"` for a URL
    /// the redis crate cannot read (refused when the store is made).
    pub fn transport(&self) -> &'static str {
        let (Self::Direct { url } | Self::Sentinel { url, .. }) = self;
        match url
            .as_str()
            .into_connection_info()
            .ok()
            .and_then(|info| tls_mode(info.addr()))
        {
            None => "plain",
            Some(TlsMode::Secure) => "verified",
            Some(_) => "unverified",
        }
    }
}

impl fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the URL: it may hold the password.
        match self {
            Self::Direct { .. } => f.debug_struct("Direct").finish_non_exhaustive(),
            Self::Sentinel {
                sentinels,
                master_name,
                ..
            } => f
                .debug_struct("Sentinel")
                .field("sentinels", sentinels)
                .field("master_name", master_name)
                .finish_non_exhaustive(),
        }
    }
}

/// One sentinel's address, `host:port` (an IPv6 host in brackets: `[::1]:26379`).
#[derive(Clone, PartialEq, Eq)]
pub struct SentinelAddr {
    /// Host name or IP address.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl fmt::Display for SentinelAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Debug for SentinelAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for SentinelAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let bad = || format!("{text:?} is not host:port");
        let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let host = match host.strip_prefix('[') {
            Some(inner) => inner.strip_suffix(']').ok_or_else(bad)?,
            None if host.contains(':') => return Err(bad()),
            None => host,
        };
        let host_ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
        let port: u16 = port.parse().map_err(|_| bad())?;
        if !host_ok || port == 0 {
            return Err(bad());
        }
        Ok(Self {
            host: host.to_owned(),
            port,
        })
    }
}

impl SentinelAddr {
    /// A comma-separated list (blank items skipped); empty text is an empty list.
    pub fn parse_list(text: &str) -> Result<Vec<Self>, String> {
        text.split(',')
            .filter(|item| !item.trim().is_empty())
            .map(str::parse)
            .collect()
    }

    /// How the sentinel client reaches this sentinel: plain TCP, or TLS in
    /// `tls` mode (its certificate verified against the system's roots, or
    /// `SSL_CERT_FILE`, as for a direct `rediss://`).
    fn connection_addr(&self, tls: Option<TlsMode>) -> ConnectionAddr {
        let host = self.host.clone();
        match tls {
            None => ConnectionAddr::Tcp(host, self.port),
            Some(mode) => ConnectionAddr::TcpTls {
                host,
                port: self.port,
                insecure: mode == TlsMode::Insecure,
                tls_params: None,
            },
        }
    }
}

/// How commands reach Redis.
#[derive(Clone)]
enum Connection {
    /// One node; the manager reconnects to it by itself.
    Direct(ConnectionManager),
    /// Whatever node the sentinels name as primary.
    Sentinel(Arc<SentinelPrimary>),
}

/// The primary found through the sentinels, and the means to find it again.
struct SentinelPrimary {
    /// The connection to the primary last found; `None` before the first call
    /// and after a command said the node is gone or no longer primary.
    current: SyncMutex<Option<Primary>>,
    /// Held by the one caller asking the sentinels; the others wait for its
    /// answer rather than ask too.
    lookup: tokio::sync::Mutex<Lookup>,
    /// Timeouts of the connection to the primary.
    config: AsyncConnectionConfig,
    master_name: String,
}

/// One connection to one primary; `generation` tells connections apart, so a
/// failure on an old one never throws away a newer one.
#[derive(Clone)]
struct Primary {
    conn: MultiplexedConnection,
    generation: u64,
}

struct Lookup {
    client: SentinelClient,
    generation: u64,
    /// The address of the primary last found (for the log line when it changes).
    address: Option<String>,
    /// When the sentinels last failed to name a usable primary.
    failed_at: Option<Instant>,
}

impl SentinelPrimary {
    fn new(sentinels: &[SentinelAddr], master_name: &str, url: &str) -> redis::RedisResult<Self> {
        if sentinels.is_empty() {
            return Err(redis::RedisError::from((
                ErrorKind::EmptySentinelList,
                "no sentinel address given",
            )));
        }
        // REDIS_URL gives the data node's credentials and database, and whether
        // to speak TLS; its host is not used.
        let info = url.into_connection_info()?;
        let settings = info.redis_settings();
        let tls = tls_mode(info.addr());
        let addrs = sentinels.iter().map(|addr| addr.connection_addr(tls));
        let mut builder =
            SentinelClientBuilder::new(addrs, master_name, SentinelServerType::Master)?
                .set_client_to_redis_db(settings.db())
                .set_client_to_redis_protocol(settings.protocol());
        if let Some(mode) = tls {
            builder = builder.set_client_to_redis_tls_mode(mode);
        }
        if let Some(username) = settings.username() {
            builder = builder.set_client_to_redis_username(username);
        }
        if let Some(password) = settings.password() {
            builder = builder.set_client_to_redis_password(password);
        }
        let client = builder.build()?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(500)))
            .set_response_timeout(Some(Duration::from_millis(500)));
        Ok(Self {
            current: SyncMutex::new(None),
            lookup: tokio::sync::Mutex::new(Lookup {
                client,
                generation: 0,
                address: None,
                failed_at: None,
            }),
            config,
            master_name: master_name.to_owned(),
        })
    }

    fn cached(&self) -> Option<Primary> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The connection to the current primary, asking the sentinels when there is none.
    async fn connection(&self) -> redis::RedisResult<Primary> {
        if let Some(primary) = self.cached() {
            return Ok(primary);
        }
        let mut lookup = self.lookup.lock().await;
        // Another caller may have found it while this one waited.
        if let Some(primary) = self.cached() {
            return Ok(primary);
        }
        if lookup
            .failed_at
            .is_some_and(|at| at.elapsed() < LOOKUP_BACKOFF)
        {
            return Err(redis::RedisError::from((
                ErrorKind::MasterNameNotFoundBySentinel,
                "the sentinels named no usable primary a moment ago",
            )));
        }
        let found = async {
            let client = lookup.client.async_get_client().await?;
            let address = client.get_connection_info().addr().to_string();
            let conn = client
                .get_multiplexed_async_connection_with_config(&self.config)
                .await?;
            Ok::<_, redis::RedisError>((address, conn))
        }
        .await;
        let (address, conn) = match found {
            Ok(found) => found,
            Err(err) => {
                lookup.failed_at = Some(Instant::now());
                return Err(err);
            }
        };
        lookup.failed_at = None;
        lookup.generation += 1;
        if lookup.address.as_deref() != Some(address.as_str()) {
            tracing::info!(
                master_name = %self.master_name,
                primary = %address,
                previous = lookup.address.as_deref().unwrap_or("none"),
                "redis primary found through sentinel"
            );
            lookup.address = Some(address);
        }
        let primary = Primary {
            conn,
            generation: lookup.generation,
        };
        *self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(primary.clone());
        Ok(primary)
    }

    /// Forgets the connection of `generation` (not a newer one) after `err`.
    fn forget(&self, generation: u64, err: &redis::RedisError) {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if current
            .as_ref()
            .is_some_and(|primary| primary.generation == generation)
        {
            *current = None;
            tracing::warn!(
                master_name = %self.master_name,
                error = %err,
                "lost the redis primary; the next call asks the sentinels again"
            );
        }
    }
}

/// The TLS `REDIS_URL` asks for (`rediss://` or `valkeys://`, verified unless
/// it ends in `#insecure`), or `None` for plain TCP. Through Sentinel it holds
/// for the sentinels and for the primary they name alike: a deployment that
/// encrypts its data nodes serves its sentinels on TLS ports too.
fn tls_mode(addr: &ConnectionAddr) -> Option<TlsMode> {
    match addr {
        ConnectionAddr::TcpTls { insecure, .. } => Some(if *insecure {
            TlsMode::Insecure
        } else {
            TlsMode::Secure
        }),
        _ => None,
    }
}

/// Whether `err` means the node is gone or no longer primary, so the sentinels
/// must be asked again (rather than a failure of this one command).
fn primary_lost(err: &redis::RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || err.is_unrecoverable_error()
        || matches!(
            err.kind(),
            ErrorKind::Server(
                ServerErrorKind::ReadOnly
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::BusyLoading
            )
        )
        // A script's write refused by a replica may come back as a plain error.
        || err.to_string().contains("READONLY")
}

fn too_slow() -> redis::RedisError {
    redis::RedisError::from((ErrorKind::Io, "redis did not answer in time"))
}

/// Commands to Redis, with a deadline, to one node or to the primary the
/// sentinels name.
#[derive(Clone)]
pub struct Redis(Connection);

impl Redis {
    /// Prepares the connection without connecting: the backend starts even while
    /// Redis (or every sentinel) is down.
    pub fn new(target: &RedisTarget) -> redis::RedisResult<Self> {
        let conn = match target {
            RedisTarget::Direct { url } => {
                let client = redis::Client::open(url.as_str())?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_millis(500)))
                    .set_response_timeout(Some(Duration::from_millis(500)))
                    .set_number_of_retries(1);
                Connection::Direct(client.get_connection_manager_lazy(config)?)
            }
            RedisTarget::Sentinel {
                sentinels,
                master_name,
                url,
            } => Connection::Sentinel(Arc::new(SentinelPrimary::new(sentinels, master_name, url)?)),
        };
        Ok(Self(conn))
    }

    /// Runs `cmd`, failing after `REDIS_DEADLINE` (1 s); through Sentinel a failure
    /// meaning the primary is gone makes the next call ask the sentinels again.
    pub async fn run<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        let deadline = Instant::now() + REDIS_DEADLINE;
        match &self.0 {
            Connection::Direct(manager) => {
                let mut conn = manager.clone();
                tokio::time::timeout_at(deadline, cmd.query_async(&mut conn))
                    .await
                    .unwrap_or_else(|_| Err(too_slow()))
            }
            Connection::Sentinel(primary) => {
                let found = tokio::time::timeout_at(deadline, primary.connection())
                    .await
                    .unwrap_or_else(|_| Err(too_slow()))?;
                let mut conn = found.conn.clone();
                let result = tokio::time::timeout_at(deadline, cmd.query_async(&mut conn))
                    .await
                    .unwrap_or_else(|_| Err(too_slow()));
                if let Err(err) = &result
                    && primary_lost(err)
                {
                    primary.forget(found.generation, err);
                }
                result
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RedisTarget, SentinelAddr, primary_lost, tls_mode, too_slow};
    use redis::{
        ConnectionAddr, ErrorKind, IntoConnectionInfo, RedisError, ServerErrorKind, TlsMode,
    };

    #[test]
    fn a_gone_or_demoted_primary_is_told_from_a_failed_command() {
        let io = |kind| RedisError::from(std::io::Error::new(kind, "test"));
        for lost in [
            io(std::io::ErrorKind::ConnectionRefused),
            io(std::io::ErrorKind::ConnectionReset),
            io(std::io::ErrorKind::BrokenPipe),
            io(std::io::ErrorKind::UnexpectedEof),
            io(std::io::ErrorKind::TimedOut),
            too_slow(),
            RedisError::from((ErrorKind::Server(ServerErrorKind::ReadOnly), "READONLY")),
            RedisError::from((ErrorKind::Server(ServerErrorKind::MasterDown), "MASTERDOWN")),
            RedisError::from((
                ErrorKind::Server(ServerErrorKind::ResponseError),
                "script failed",
                "READONLY You can't write against a read only replica.".to_owned(),
            )),
        ] {
            assert!(primary_lost(&lost), "{lost:?}");
        }
        for kept in [
            RedisError::from((
                ErrorKind::Server(ServerErrorKind::ResponseError),
                "ERR wrong number of arguments",
            )),
            RedisError::from((ErrorKind::UnexpectedReturnType, "not a string")),
            RedisError::from((ErrorKind::Client, "request token already exists")),
        ] {
            assert!(!primary_lost(&kept), "{kept:?}");
        }
    }

    #[test]
    fn a_tls_redis_url_reaches_the_sentinels_and_the_primary_over_tls() {
        let sentinel: SentinelAddr = "sentinel-a:26379".parse().expect("host:port");
        for (url, mode, transport) in [
            ("redis://:pw@ignored:6379/2", None, "plain"),
            (
                "rediss://:pw@ignored:6380/2",
                Some(TlsMode::Secure),
                "verified",
            ),
            (
                "REDISS://:pw@ignored:6380/2",
                Some(TlsMode::Secure),
                "verified",
            ),
            (
                "valkeys://:pw@ignored:6380/2",
                Some(TlsMode::Secure),
                "verified",
            ),
            (
                "rediss://:pw@ignored:6380/2#insecure",
                Some(TlsMode::Insecure),
                "unverified",
            ),
        ] {
            let info = url.into_connection_info().expect("a redis url");
            let tls = tls_mode(info.addr());
            assert_eq!(tls, mode, "{url}");
            let target = RedisTarget::Sentinel {
                sentinels: vec![sentinel.clone()],
                master_name: "checkout".into(),
                url: url.into(),
            };
            assert_eq!(target.transport(), transport, "{url}");
            match (sentinel.connection_addr(tls), mode) {
                (ConnectionAddr::Tcp(host, port), None) => {
                    assert_eq!((host.as_str(), port), ("sentinel-a", 26379));
                }
                (
                    ConnectionAddr::TcpTls {
                        host,
                        port,
                        insecure,
                        tls_params: None,
                    },
                    Some(mode),
                ) => {
                    assert_eq!((host.as_str(), port), ("sentinel-a", 26379));
                    assert_eq!(insecure, mode == TlsMode::Insecure, "{url}");
                }
                (addr, _) => panic!("{url}: the sentinel is reached at {addr:?}"),
            }
        }
    }
}
