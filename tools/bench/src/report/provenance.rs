//! "How these figures were produced": the command, the commit, the machine,
//! PostgreSQL's settings that decide the limit, the run's options, the noise
//! and the notes.
//!
//! A figure means little without these, and a reader comparing two reports
//! looks here first.

use super::Results;
use std::fmt::Write as _;

impl Results {
    /// The section, from its heading to the notes.
    pub(super) fn provenance_section(&self, w: &mut String) {
        let _ = writeln!(w, "## How these figures were produced\n");
        let _ = writeln!(w, "```sh\n{}\n```\n", self.command);
        let _ = writeln!(w, "| | |\n|---|---|");
        for (key, value) in self.provenance_rows() {
            let _ = writeln!(w, "| {key} | {value} |");
        }
        let _ = writeln!(w, "\n**Noise:** {}.\n", self.noise_summary());
        for note in &self.notes {
            let _ = writeln!(w, "- Note: {note}");
        }
        if !self.notes.is_empty() {
            let _ = writeln!(w);
        }
    }

    /// The facts of the run as (key, value) rows: the machine, PostgreSQL, the options.
    pub(super) fn provenance_rows(&self) -> Vec<(&'static str, String)> {
        let m = &self.machine;
        vec![
            ("date (UTC)", self.started_at.clone()),
            ("commit", self.commit.clone()),
            ("compiler", self.rustc.clone()),
            ("CPU", format!("{} x {}", m.cores, m.cpu_model)),
            ("memory", format!("{} MiB", m.memory_mib)),
            ("kernel", m.kernel.clone()),
            ("load average at start", m.load_at_start.clone()),
            (
                "PostgreSQL",
                format!("{} — {}", self.postgres.version, self.postgres_where),
            ),
            ("`SHOW fsync`", self.postgres.fsync.clone()),
            (
                "`SHOW synchronous_commit`",
                self.postgres.synchronous_commit.clone(),
            ),
            (
                "`SHOW wal_sync_method`",
                self.postgres.wal_sync_method.clone(),
            ),
            (
                "`SHOW shared_buffers`",
                self.postgres.shared_buffers.clone(),
            ),
            (
                "`SHOW max_connections`",
                self.postgres.max_connections.clone(),
            ),
            ("Redis", self.redis_version.clone()),
            (
                "runs",
                format!(
                    "{} s each after a discarded {} s warm-up per step; clients {:?}; {} round(s) of pgbench then backend per count (figures: the median round)",
                    self.settings.duration_s,
                    self.settings.warmup_s,
                    self.settings.clients,
                    self.settings.rounds.max(1)
                ),
            ),
            (
                "backend pool (`DATABASE_MAX_CONNECTIONS`)",
                self.settings.db_max_connections.clone(),
            ),
            (
                "data",
                format!(
                    "{} accounts; one PENDING order per new callback, in a database per side (pgbench / backend)",
                    self.settings.accounts
                ),
            ),
            (
                "signing a callback",
                self.signing_us.map_or("-".into(), |us| {
                    format!("{us:.1} µs, done before the timed window")
                }),
            ),
            ("whole benchmark", format!("{:.0} s", self.elapsed_s)),
        ]
    }
}
