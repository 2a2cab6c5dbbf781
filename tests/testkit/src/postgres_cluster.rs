//! A PostgreSQL cluster of a test's own (initdb in a temporary directory),
//! and the server tools run as the postgres user when the tests run as root.

use crate::free_port;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

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
