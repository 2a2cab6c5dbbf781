//! Whole-machine CPU profiles with `perf` (software clock, which works on VMs
//! without hardware counters): which processes, libraries and functions the
//! time went to while a run was going.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::{Child, Command};

/// A running `perf record`.
pub struct Recording {
    child: Child,
    data: PathBuf,
}

/// True when `perf` runs here.
pub async fn available() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .await
        .is_ok_and(|o| o.status.success())
}

/// Starts sampling every CPU for `duration` into `data`.
pub fn start(data: &Path, duration: Duration) -> anyhow::Result<Recording> {
    let child = Command::new("perf")
        .args(["record", "-a", "-e", "cpu-clock", "-F", "999", "-q", "-o"])
        .arg(data)
        .args(["--", "sleep", &duration.as_secs_f64().to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start perf record")?;
    Ok(Recording {
        child,
        data: data.to_owned(),
    })
}

impl Recording {
    /// Waits for the recording and summarises it: shares of the whole machine by
    /// process and library, the hottest functions, and, given the backend's pid,
    /// the backend's own hottest functions (its threads are named like the load
    /// generator's, `tokio-rt-worker`, so they are told apart by process id).
    pub async fn finish(mut self, backend: Option<u32>) -> anyhow::Result<String> {
        self.child.wait().await?;
        let by_dso = report(&self.data, &["--sort", "comm,dso"], "1", 25).await?;
        let by_symbol = report(&self.data, &["--sort", "comm,dso,sym"], "0.5", 40).await?;
        let mut text = format!(
            "whole machine, by process and library (>= 1% of all samples):\n{by_dso}\n\n\
             whole machine, hottest functions (>= 0.5%):\n{by_symbol}"
        );
        if let Some(pid) = backend {
            let pid = pid.to_string();
            let all = report(
                &self.data,
                &[
                    "--pid",
                    &pid,
                    "--percentage",
                    "relative",
                    "--sort",
                    "dso,sym",
                ],
                "0",
                usize::MAX,
            )
            .await?;
            let split = by_crate(&all)
                .iter()
                .take(18)
                .map(|(name, pct)| format!("{pct:6.1}%  {name}"))
                .collect::<Vec<_>>()
                .join("\n");
            text.push_str(&format!(
                "\n\nthe backend process alone, by library, and by crate inside the binary \
                 (share of its own samples):\n{split}"
            ));
            let own = all
                .lines()
                .filter(|line| percent(line).is_some_and(|p| p >= 0.7))
                .take(40)
                .collect::<Vec<_>>()
                .join("\n");
            text.push_str(&format!(
                "\n\nthe backend process alone, hottest functions (>= 0.7% of its samples):\n{own}"
            ));
        }
        Ok(text)
    }
}

async fn report(data: &Path, args: &[&str], limit: &str, lines: usize) -> anyhow::Result<String> {
    let output = Command::new("perf")
        .arg("report")
        .arg("-i")
        .arg(data)
        .args(["--stdio", "--no-children", "-q"])
        .args(args)
        .args(["--percent-limit", limit])
        .output()
        .await
        .context("cannot run perf report")?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(lines)
        .map(|line| line.trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n"))
}

fn percent(line: &str) -> Option<f64> {
    line.split_whitespace()
        .next()?
        .strip_suffix('%')?
        .parse()
        .ok()
}

/// Sums `perf report --sort dso,sym` lines by library, and by crate for the
/// backend binary's own symbols (the first path segment of the symbol).
fn by_crate(report: &str) -> Vec<(String, f64)> {
    let mut sums: std::collections::HashMap<String, f64> = std::collections::HashMap::new();
    for line in report.lines() {
        let Some(pct) = percent(line) else { continue };
        let mut fields = line.split_whitespace().skip(1);
        let Some(dso) = fields.next() else { continue };
        let symbol: Vec<&str> = fields.skip(1).collect();
        let name = if dso == "backend" {
            let symbol = symbol.join(" ");
            let trimmed = symbol
                .trim_start_matches(['<', '&'])
                .trim_start_matches("F as ")
                .trim_start_matches("T as ")
                .trim_start_matches("dyn ");
            let krate = trimmed
                .split([':', '<', ' '])
                .next()
                .filter(|c| !c.is_empty())
                .unwrap_or("other");
            format!("backend binary: {krate}")
        } else {
            dso.to_owned()
        };
        *sums.entry(name).or_default() += pct;
    }
    let mut sums: Vec<(String, f64)> = sums.into_iter().collect();
    sums.sort_by(|a, b| b.1.total_cmp(&a.1));
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_summed_by_library_and_by_crate() {
        let report = "    40.00%  [kernel.kallsyms]  [k] tcp_ack\n\
                      \x20   10.00%  backend  [.] sqlx_core::pool::inner::foo\n\
                      \x20    5.00%  backend  [.] <sqlx_core::x::Y as core::future::Future>::poll\n\
                      \x20    5.00%  libc.so.6  [.] malloc\n";
        let sums = by_crate(report);
        assert_eq!(sums[0], ("[kernel.kallsyms]".to_owned(), 40.0));
        assert_eq!(sums[1], ("backend binary: sqlx_core".to_owned(), 15.0));
    }
}
