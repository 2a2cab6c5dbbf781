//! What the steps run, decided before each run starts: the client counts and
//! rounds in order, how many orders a run may use up, and the pgbench scripts.
//!
//! Rounds of one client count run back to back, pgbench then the backend, so
//! each ratio compares two runs made minutes apart on the same machine.

use super::Bench;
use crate::pgbench::{self, CallbackPath};
use std::path::PathBuf;

impl Bench {
    /// The client count for warm-ups, profiles and per-statement breakdowns.
    pub(super) fn focus(&self) -> usize {
        self.args.focus_clients()
    }

    /// A progress label, with the round when there are several.
    pub(super) fn label(&self, what: &str, round: u32) -> String {
        if self.args.rounds > 1 {
            format!("{what} #{}", round + 1)
        } else {
            what.to_owned()
        }
    }

    /// (clients, round) in the order they run at `counts`: every round of
    /// one count, then the next.
    pub(super) fn schedule(&self, counts: &[usize]) -> Vec<(usize, u32)> {
        let rounds = self.args.rounds;
        counts
            .iter()
            .flat_map(|&clients| (0..rounds).map(move |round| (clients, round)))
            .collect()
    }

    /// Orders a run of `seconds` at `rate` may use, with room to spare: running
    /// out would end a worker early and lower the rate.
    pub(super) fn orders_needed(&self, rate: f64, seconds: u64, clients: usize) -> i64 {
        (rate * seconds as f64 * 1.5) as i64 + 100 * clients as i64
    }

    /// Writes a pgbench script to the work folder; the report shows the scripts without the ping.
    pub(super) async fn write_script(
        &mut self,
        path: CallbackPath,
        ping: bool,
        name: &str,
    ) -> anyhow::Result<PathBuf> {
        let text = pgbench::script(path, ping)?;
        let file = self.work.join(name);
        std::fs::write(&file, &text)?;
        if !ping && !self.results.scripts.iter().any(|(n, _)| n == name) {
            self.results.scripts.push((name.to_owned(), text));
        }
        Ok(file)
    }

    /// Writes the script of `path` as `<name>.sql` and, with `--pgbench-ping`,
    /// its ping variant as `<name>_ping.sql`.
    pub(super) async fn write_scripts(
        &mut self,
        path: CallbackPath,
        name: &str,
    ) -> anyhow::Result<(PathBuf, Option<PathBuf>)> {
        let script = self
            .write_script(path, false, &format!("{name}.sql"))
            .await?;
        let ping_script = if self.args.pgbench_ping {
            Some(
                self.write_script(path, true, &format!("{name}_ping.sql"))
                    .await?,
            )
        } else {
            None
        };
        Ok((script, ping_script))
    }
}
