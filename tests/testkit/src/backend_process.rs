//! The backend (or platform-sim) as a child process the test owns: started
//! on a free port, restarted on the same one, killed, paused, or drained as a
//! deployment would.

use crate::free_port;
use anyhow::{Context, bail};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
