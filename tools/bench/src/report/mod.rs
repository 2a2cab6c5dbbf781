//! The figures of one run ([`Results`], saved as `results.json`) and the
//! tables made from them. They go into one section of each report: `## Latest
//! results` of `docs/BENCHMARKS.md` and, for the scale-out step, `## Measured`
//! of `docs/SCALING.md`. The rest of both files (the method, what the figures
//! mean) is written by people and left as it is.
//!
//! - `tables.rs`: the ratios and their targets, the CPU table, the run's facts;
//! - `scaling.rs`: the scale-out figures.

mod scaling;
mod tables;

pub use scaling::{Balanced, ScaleOut};
use tables::PEAK_RSS_MIB;

use crate::stats::Run;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// The section of `docs/BENCHMARKS.md` a run rewrites.
pub const RESULTS_HEADING: &str = "## Latest results";
/// The section of `docs/SCALING.md` the scale-out step rewrites.
pub const MEASURED_HEADING: &str = "## Measured";

/// Everything one run of the benchmark found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Results {
    /// The command that produced it.
    pub command: String,
    /// When it started (UTC).
    pub started_at: String,
    /// Seconds the whole benchmark took.
    pub elapsed_s: f64,
    /// The commit measured.
    pub commit: String,
    /// Logical CPUs.
    pub cores: usize,
    /// The CPU's model name.
    pub cpu_model: String,
    /// PostgreSQL's version and the settings that decide the limit.
    pub postgres: String,
    /// Redis's version.
    pub redis_version: String,
    /// Seconds per measured run.
    pub duration_s: u64,
    /// Seconds of each warm-up.
    pub warmup_s: u64,
    /// Client counts.
    pub clients: Vec<usize>,
    /// Rounds of pgbench-then-backend per client count.
    pub rounds: usize,
    /// The backend's `DATABASE_MAX_CONNECTIONS`.
    pub db_max_connections: String,
    /// Accounts the orders are spread over.
    pub accounts: i64,
    /// Microseconds to sign one callback (done before the timed window).
    pub signing_us: Option<f64>,
    /// pgbench on `NEW_CHARGE_SQL`: the handler's one statement.
    pub new_pgbench: Vec<Run>,
    /// pgbench on `GENERAL_CHARGE_SQL`, one round trip per statement.
    pub new_pgbench_statements: Vec<Run>,
    /// pgbench on `GENERAL_CHARGE_SQL` in one pipeline (one round trip).
    pub new_pgbench_pipelined: Vec<Run>,
    /// New callbacks through the backend.
    pub new_backend: Vec<Run>,
    /// pgbench on `DUPLICATE_SQL`: the handler's one statement.
    pub dup_pgbench: Vec<Run>,
    /// pgbench on `DUPLICATE_LOOKUP_SQL`: the least a duplicate costs.
    pub dup_pgbench_lookup: Vec<Run>,
    /// A duplicate storm through the backend.
    pub dup_backend: Vec<Run>,
    /// The pay through the backend, its request token issued before the window.
    pub pay_alone: Vec<Run>,
    /// pgbench on `START_IN_ONE_SQL`: pay's attempt and hold in one statement.
    pub pay_pgbench: Vec<Run>,
    /// redis-benchmark `GETDEL`.
    pub redis_getdel: Vec<Run>,
    /// Peak resident memory (`VmHWM`) of each backend process, KiB, by phase.
    pub peak_rss_kib: Vec<(String, u64)>,
    /// The scale-out step: HAProxy with 1, 2, 3 backends (docs/SCALING.md).
    pub scale: Option<ScaleOut>,
    /// Things a reader must know (ran out of requests, a step skipped, ...).
    pub notes: Vec<String>,
}

impl Results {
    /// True when the run measured anything `docs/BENCHMARKS.md` shows (a
    /// scale-out-only run does not, and leaves that file alone).
    pub fn has_benchmarks(&self) -> bool {
        !(self.new_backend.is_empty() && self.dup_backend.is_empty() && self.pay_alone.is_empty())
    }

    /// The body of `docs/BENCHMARKS.md`'s `## Latest results`.
    pub fn benchmarks_markdown(&self) -> String {
        let mut md = String::new();
        let w = &mut md;
        let _ = writeln!(
            w,
            "<!-- written by tools/bench: each run of scripts/bench.sh rewrites this section -->\n"
        );
        self.provenance(w, self.provenance_rows(), &self.measured_runs());
        let _ = writeln!(
            w,
            "### The backend next to the limit\n\n{}",
            self.comparison_table()
        );
        let _ = writeln!(w, "### Where the CPU went\n\n{}", self.cpu_table());
        let _ = writeln!(w, "### Peak memory\n");
        for (phase, kib) in &self.peak_rss_kib {
            let mib = *kib as f64 / 1024.0;
            let verdict = if mib <= PEAK_RSS_MIB {
                "met"
            } else {
                "**missed**"
            };
            let _ = writeln!(
                w,
                "- Backend peak RSS (`VmHWM`), {phase}: {mib:.1} MiB (target <= {PEAK_RSS_MIB:.0} MiB: {verdict})."
            );
        }
        md
    }

    /// The command, the run's facts as a table, the noise during `runs` and the notes.
    fn provenance(&self, w: &mut String, rows: Vec<(&'static str, String)>, runs: &[&Run]) {
        let _ = writeln!(w, "```sh\n{}\n```\n\n| | |\n|---|---|", self.command);
        for (key, value) in rows {
            let _ = writeln!(w, "| {key} | {value} |");
        }
        let _ = writeln!(w, "\n**Noise:** {}.\n", self.noise_summary(runs));
        for note in &self.notes {
            let _ = writeln!(w, "- Note: {note}");
        }
        if !self.notes.is_empty() {
            let _ = writeln!(w);
        }
    }

    /// What the terminal shows at the end of a run.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        if let Some(scale) = &self.scale {
            let _ = writeln!(out, "\nScale-out:\n\n{}", scale.table());
        }
        if self.has_benchmarks() {
            let _ = writeln!(out, "\n{}", self.comparison_table());
        }
        let _ = writeln!(out, "Noise: {}", self.noise_summary(&self.measured_runs()));
        out
    }
}

/// Rewrites the section `heading` of the Markdown file at `path` (from the
/// heading's line to the next `## ` heading) with what `body` makes of its
/// old text.
pub fn write_section(
    path: &Path,
    heading: &str,
    body: impl FnOnce(&str) -> String,
) -> anyhow::Result<()> {
    let doc =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = rewrite_section(&doc, heading, body).with_context(|| path.display().to_string())?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// `doc` with the body of its section `heading` replaced by what `body` makes
/// of the old body.
fn rewrite_section(
    doc: &str,
    heading: &str,
    body: impl FnOnce(&str) -> String,
) -> anyhow::Result<String> {
    let mut offset = 0;
    let mut start = None;
    let mut end = doc.len();
    for line in doc.split_inclusive('\n') {
        match start {
            None if line.trim_end() == heading => start = Some(offset + line.len()),
            Some(_) if line.starts_with("## ") => {
                end = offset;
                break;
            }
            _ => {}
        }
        offset += line.len();
    }
    let Some(start) = start else {
        bail!("no `{heading}` heading: nowhere to put the figures");
    };
    let (before, old, after) = (&doc[..start], &doc[start..end], &doc[end..]);
    let gap = if after.is_empty() { "" } else { "\n" };
    Ok(format!("{before}\n{}\n{gap}{after}", body(old).trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Bench\n\nMethod.\n\n## Latest results\n\nold table\n\n## What each design choice bought\n\nKept.\n";

    #[test]
    fn only_the_section_is_replaced() -> anyhow::Result<()> {
        let text = rewrite_section(DOC, RESULTS_HEADING, |old| {
            assert_eq!(old, "\nold table\n\n");
            "new table\n".to_owned()
        })?;
        assert_eq!(
            text,
            "# Bench\n\nMethod.\n\n## Latest results\n\nnew table\n\n## What each design choice bought\n\nKept.\n"
        );
        let last = rewrite_section(
            "# Bench\n\n## Latest results\n\nold\n",
            RESULTS_HEADING,
            |_| "new".into(),
        )?;
        assert_eq!(last, "# Bench\n\n## Latest results\n\nnew\n");
        assert!(rewrite_section("# Bench\n", RESULTS_HEADING, |_| String::new()).is_err());
        Ok(())
    }
}
