//! What the database did: execution time per operation by statement
//! (`pg_stat_statements`) and the plans of one new callback.
//!
//! The statement sum is the database's own share of a run's latency; the rest
//! is waiting, which the CPU section explains.

use super::Results;
use crate::postgres::StatementTime;
use std::fmt::Write as _;

impl Results {
    /// "Database time per operation", one table per recorded run.
    pub(super) fn statements_section(&self, w: &mut String) {
        if self.statements.is_empty() {
            return;
        }
        let _ = writeln!(
            w,
            "## Database time per operation (`pg_stat_statements`)\n\n\
             Execution time inside PostgreSQL per successful operation, by statement. The sum \
             is what the database itself spends; the rest of the latency is waiting (for the \
             CPU, the WAL flush at commit, the network, a pool connection). Foreign-key checks \
             appear as their own statements (`SELECT 1 FROM ONLY ... FOR KEY SHARE`); pgbench's \
             prepared `BEGIN`/`COMMIT` are counted once per connection, not per transaction, \
             and the pool's ping (a bare Sync) is no statement at all.\n"
        );
        for breakdown in &self.statements {
            let ops = breakdown.operations.max(1) as f64;
            let statements: Vec<&StatementTime> = breakdown
                .statements
                .iter()
                .filter(|s| !crate::postgres::is_bookkeeping(&s.query))
                .collect();
            let total: f64 = statements.iter().map(|s| s.total_ms).sum();
            let calls: i64 = statements.iter().map(|s| s.calls).sum();
            let _ = writeln!(
                w,
                "**{}**: {:.1} statements (with foreign-key checks) and {:.0} µs of execution per operation.\n",
                breakdown.label,
                calls as f64 / ops,
                total * 1000.0 / ops
            );
            let _ = writeln!(w, "| calls/op | µs/op | statement |\n|---:|---:|---|");
            for s in statements {
                // The statement, not the comment some SQL files open with.
                let query: String = s
                    .query
                    .lines()
                    .skip_while(|line| line.trim_start().starts_with("--"))
                    .flat_map(str::split_whitespace)
                    .collect::<Vec<_>>()
                    .join(" ");
                let query = if query.chars().count() > 110 {
                    format!("{}…", query.chars().take(110).collect::<String>())
                } else {
                    query
                };
                let _ = writeln!(
                    w,
                    "| {:.2} | {:.1} | `{}` |",
                    s.calls as f64 / ops,
                    s.total_ms * 1000.0 / ops,
                    query.replace('|', "\\|")
                );
            }
            let _ = writeln!(w);
        }
    }

    /// `EXPLAIN (ANALYZE, BUFFERS)` of each statement of one new callback.
    pub(super) fn plans_section(&self, w: &mut String) {
        if !self.explain.is_empty() {
            let _ = writeln!(
                w,
                "## Plans: `EXPLAIN (ANALYZE, BUFFERS)` of one new callback (rolled back)\n"
            );
            for (sql, plan) in &self.explain {
                let _ = writeln!(
                    w,
                    "```sql\n{}\n```\n```text\n{}\n```\n",
                    sql.trim(),
                    plan.trim()
                );
            }
        }
    }
}
