//! An HAProxy of our own, configured by the repository's `deploy/haproxy.cfg`
//! (the file `scripts/cluster.sh` runs) with one `server backendN` line per
//! backend port.

use crate::{free_port, workspace_root};
use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `haproxy` process in front of some backends.
pub struct OwnedHaproxy {
    /// Where clients connect.
    pub port: u16,
    /// Its statistics page (CSV at `/;csv`).
    pub stats_port: u16,
    child: Option<Child>,
    dir: PathBuf,
}

/// The `haproxy` program: on `PATH`, or where Debian's package puts it.
fn program() -> anyhow::Result<PathBuf> {
    for candidate in ["haproxy", "/usr/sbin/haproxy"] {
        if Command::new(candidate)
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return Ok(PathBuf::from(candidate));
        }
    }
    bail!("haproxy is not installed (apt-get install haproxy; scripts/test.sh installs it)")
}

impl OwnedHaproxy {
    /// Starts HAProxy on a free port in front of `backends` (ports on
    /// 127.0.0.1, named `backend1`, `backend2`, ... in order) and waits until
    /// it answers and every backend is UP.
    pub async fn start(backends: &[u16]) -> anyhow::Result<Self> {
        Self::start_on(free_port()?, backends).await
    }

    /// The same on `port` (chosen before the backends start, when they must know it).
    pub async fn start_on(port: u16, backends: &[u16]) -> anyhow::Result<Self> {
        let program = program()?;
        let dir = std::env::temp_dir().join(format!(
            "checkout-haproxy-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)?;
        let mut config = std::fs::read_to_string(workspace_root().join("deploy/haproxy.cfg"))
            .context("cannot read deploy/haproxy.cfg")?;
        for (n, backend) in backends.iter().enumerate() {
            config.push_str(&format!(
                "    server backend{} 127.0.0.1:{backend}\n",
                n + 1
            ));
        }
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config)?;
        let log = std::fs::File::create(dir.join("haproxy.log"))?;
        let stats_port = free_port()?;
        let child = Command::new(program)
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .env("CHECKOUT_LISTEN", format!("127.0.0.1:{port}"))
            .env("CHECKOUT_STATS", format!("127.0.0.1:{stats_port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start haproxy")?;
        let mut haproxy = Self {
            port,
            stats_port,
            child: Some(child),
            dir,
        };
        for n in 1..=backends.len() {
            haproxy
                .wait_for_server(&format!("backend{n}"), "UP", Duration::from_secs(20))
                .await?;
        }
        Ok(haproxy)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `haproxy` process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its log (HAProxy logs only what went wrong: 5xx, aborts, retries).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("haproxy.log")).unwrap_or_default()
    }

    /// Each server's name and status as HAProxy sees it (`UP`, `DOWN`, `UP 1/2`, ...).
    pub async fn servers(&self) -> anyhow::Result<Vec<(String, String)>> {
        let csv = reqwest::Client::new()
            .get(format!("http://127.0.0.1:{}/;csv", self.stats_port))
            .timeout(Duration::from_secs(2))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        let mut lines = csv.lines();
        let header = lines.next().context("empty statistics")?;
        let columns: Vec<&str> = header.trim_start_matches("# ").split(',').collect();
        let at = |name: &str| columns.iter().position(|c| *c == name);
        let (proxy, server, status) = (
            at("pxname").context("no pxname column")?,
            at("svname").context("no svname column")?,
            at("status").context("no status column")?,
        );
        Ok(lines
            .map(|line| line.split(',').collect::<Vec<_>>())
            .filter(|fields| {
                fields.get(proxy) == Some(&"checkout")
                    && !matches!(fields.get(server), Some(&"FRONTEND" | &"BACKEND"))
            })
            .filter_map(|fields| {
                Some((
                    fields.get(server)?.to_string(),
                    fields.get(status)?.to_string(),
                ))
            })
            .collect())
    }

    /// Waits until HAProxy reports `server` with exactly `status` (`UP`, `DOWN`, `MAINT`).
    pub async fn wait_for_server(
        &mut self,
        server: &str,
        status: &str,
        limit: Duration,
    ) -> anyhow::Result<()> {
        let started = tokio::time::Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(exit) = child.try_wait()?
            {
                bail!("haproxy exited ({exit}): {}", self.log());
            }
            if let Ok(servers) = self.servers().await
                && servers
                    .iter()
                    .any(|(name, now)| name == server && now == status)
            {
                return Ok(());
            }
            if started.elapsed() > limit {
                bail!(
                    "HAProxy did not see {server} {status} within {limit:?}: {:?}",
                    self.servers().await.unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for OwnedHaproxy {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
