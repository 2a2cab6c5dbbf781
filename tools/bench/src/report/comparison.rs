//! The "Results" tables: the backend next to pgbench and Redis at each client
//! count, the price of the pool's ping (experiment), pay now (pairs and the
//! pay alone) next to Redis, and the errors.
//!
//! The comparison table is also the terminal summary's first part, so both
//! show the same figures.

use super::Results;
use super::ratios::{ratio, spread};
use crate::stats::{NOISY_CORES, Run, at, quiet_median, round_ratios};
use std::fmt::Write as _;

impl Results {
    /// The "Results" heading, how to read the table, the table, and duplicates over new callbacks.
    pub(super) fn comparison_section(&self, w: &mut String) {
        let _ = writeln!(w, "\n## Results\n");
        let _ = writeln!(
            w,
            "Rates are successful operations per second (pgbench: transactions; backend: 200 answers; \
             pay now: token + pay pairs; pay alone: pays whose token was issued before the \
             window). Latency is per operation as the client saw it. With \
             several rounds, a row shows the median round and the ratio is the median of the \
             rounds' ratios (pgbench and backend ran next to each other in each round); a round \
             marked * was noisy (other processes took more than {NOISY_CORES} cores during one of \
             its runs) and is left out of the medians when a quiet round exists.\n"
        );
        let _ = writeln!(w, "{}", self.comparison_table());
        if !self.dup_backend.is_empty() && !self.new_backend.is_empty() {
            let _ = writeln!(
                w,
                "Duplicates / new callbacks through the backend: {}.\n",
                self.settings
                    .clients
                    .iter()
                    .filter_map(|&c| self.dup_vs_new(c).map(|r| format!("{r:.2}x at {c}")))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }

    /// The backend against pgbench and Redis, one row per step and client count.
    pub(super) fn comparison_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| step | clients | pgbench / Redis per s | p50 ms | p99 ms | backend per s | p50 ms | p99 ms | errors | backend / tool |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        let (new_limit, dup_limit) = (self.new_limit(), self.dup_limit());
        for (step, tool, ours) in [
            (
                "new callback vs same work in one round trip",
                &new_limit,
                &self.new_backend,
            ),
            (
                "new callback vs general path, a round trip per statement",
                &self.new_pgbench_statements,
                &self.new_backend,
            ),
            ("duplicate vs one statement", &dup_limit, &self.dup_backend),
        ] {
            for clients in self.all_counts() {
                let (t, o) = (at(tool, clients), at(ours, clients));
                if t.is_none() && o.is_none() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "| {step} | {clients} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    t.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                    t.map_or("-".into(), |r| format!("{:.2}", r.latency.p50_ms)),
                    t.map_or("-".into(), |r| format!("{:.2}", r.latency.p99_ms)),
                    o.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                    o.map_or("-".into(), |r| format!("{:.2}", r.latency.p50_ms)),
                    o.map_or("-".into(), |r| format!("{:.2}", r.latency.p99_ms)),
                    o.map_or("-".into(), |r| r.errors.to_string()),
                    {
                        let ratios = round_ratios(ours, tool, clients);
                        quiet_median(&ratios)
                            .map_or("-".into(), |r| format!("{r:.2}x{}", spread(&ratios)))
                    },
                );
            }
        }
        let pay_limit = self.pay_limit();
        for &clients in &self.settings.clients {
            let Some(pay) = at(&self.pay, clients) else {
                continue;
            };
            let limit = at(&pay_limit, clients);
            let _ = writeln!(
                out,
                "| pay now (token + pay) vs Redis GETDEL then pgbench attempt + hold | {clients} | {} | - | - | {:.0} | {:.2} | {:.2} | {} | {} |",
                limit.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                pay.rate,
                pay.latency.p50_ms,
                pay.latency.p99_ms,
                pay.errors,
                ratio(Some(pay), limit).map_or("-".into(), |r| format!("{r:.3}x")),
            );
        }
        for &clients in &self.settings.clients {
            let Some(alone) = at(&self.pay_alone, clients) else {
                continue;
            };
            let limit = at(&pay_limit, clients);
            let _ = writeln!(
                out,
                "| pay alone (token issued before) vs Redis GETDEL then pgbench attempt + hold | {clients} | {} | - | - | {:.0} | {:.2} | {:.2} | {} | {} |",
                limit.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                alone.rate,
                alone.latency.p50_ms,
                alone.latency.p99_ms,
                alone.errors,
                {
                    let ratios = round_ratios(&self.pay_alone, &pay_limit, clients);
                    quiet_median(&ratios)
                        .map_or("-".into(), |r| format!("{r:.3}x{}", spread(&ratios)))
                },
            );
        }
        out
    }

    /// pgbench with and without the pool's ping, when the experiment ran.
    pub(super) fn ping_section(&self, w: &mut String) {
        if self.new_pgbench_ping.is_empty() && self.dup_pgbench_ping.is_empty() {
            return;
        }
        let _ = writeln!(
            w,
            "### The price of the pool's ping (experiment, same run)\n"
        );
        let _ = writeln!(
            w,
            "sqlx's pool checks a connection at every checkout (`test_before_acquire`, on by \
             default) with a bare Sync round trip, so the backend makes one round trip more per \
             transaction than the SQL needs. pgbench + ping runs the same script with that round \
             trip in front (an empty `\\startpipeline`/`\\endpipeline`).\n"
        );
        let _ = writeln!(
            w,
            "| step | clients | pgbench /s | pgbench + ping /s | change | backend /s | backend / (pgbench + ping) |"
        );
        let _ = writeln!(w, "|---|---:|---:|---:|---:|---:|---:|");
        for (step, plain, ping, ours) in [
            (
                "new callback",
                &self.new_pgbench,
                &self.new_pgbench_ping,
                &self.new_backend,
            ),
            (
                "duplicate",
                &self.dup_pgbench,
                &self.dup_pgbench_ping,
                &self.dup_backend,
            ),
        ] {
            for &clients in &self.settings.clients {
                let (Some(plain), Some(ping)) = (at(plain, clients), at(ping, clients)) else {
                    continue;
                };
                let ours = at(ours, clients);
                let _ = writeln!(
                    w,
                    "| {step} | {clients} | {:.0} | {:.0} | {:+.0}% | {} | {} |",
                    plain.rate,
                    ping.rate,
                    (ping.rate / plain.rate - 1.0) * 100.0,
                    ours.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                    ratio(ours, Some(ping)).map_or("-".into(), |r| format!("{r:.2}x")),
                );
            }
        }
        let _ = writeln!(w);
    }

    /// Pay-now pairs and the pay alone next to the two Redis commands a pair sends.
    pub(super) fn pay_section(&self, w: &mut String) {
        if self.pay.is_empty() && self.redis_set.is_empty() {
            return;
        }
        let _ = writeln!(w, "### Pay now and Redis\n");
        let _ = writeln!(
            w,
            "| clients | pay-now pairs/s | pair p99 ms | token p50 / p99 ms | pay p50 / p99 ms | errors | pay alone /s, p50 / p99 ms | Redis SET EX NX /s, p99 ms | Redis GETDEL /s, p99 ms | pgbench attempt + hold /s, p99 ms |"
        );
        let _ = writeln!(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for &clients in &self.settings.clients {
            let pay = at(&self.pay, clients);
            let token = at(&self.pay_token, clients);
            let submit = at(&self.pay_submit, clients);
            let alone = at(&self.pay_alone, clients);
            let set = at(&self.redis_set, clients);
            let getdel = at(&self.redis_getdel, clients);
            let attempt = at(&self.pay_pgbench, clients);
            let both = |r: Option<&Run>| {
                r.map_or("-".into(), |r| {
                    format!("{:.2} / {:.2}", r.latency.p50_ms, r.latency.p99_ms)
                })
            };
            let redis = |r: Option<&Run>| {
                r.map_or("-".into(), |r| {
                    format!("{:.0}, {:.2}", r.rate, r.latency.p99_ms)
                })
            };
            let _ = writeln!(
                w,
                "| {clients} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                pay.map_or("-".into(), |r| format!("{:.0}", r.rate)),
                pay.map_or("-".into(), |r| format!("{:.2}", r.latency.p99_ms)),
                both(token),
                both(submit),
                pay.map_or("-".into(), |r| r.errors.to_string()),
                alone.map_or("-".into(), |r| format!(
                    "{:.0}, {:.2} / {:.2}",
                    r.rate, r.latency.p50_ms, r.latency.p99_ms
                )),
                redis(set),
                redis(getdel),
                redis(attempt),
            );
        }
        let _ = writeln!(
            w,
            "\nA pay-now pair costs two HTTP requests (each reading the session), two Redis \
             commands (SET EX NX, GETDEL) and PostgreSQL work: the token's order read and token \
             record, then the attempt and hold in one statement (`START_IN_ONE_SQL`), then the \
             hand-over to a separate platform-sim after the answer and its bookkeeping. The limit \
             it is held to counts only the pay's own work (Redis GETDEL, then pgbench on \
             `START_IN_ONE_SQL`, one after the other: `1 / (1/GETDEL + 1/pgbench)`). The pay alone \
             (tokens issued before the window, then only pays, each answering 202) is what the \
             ratio uses where it ran; elsewhere the pairs are, which understates the pay.\n"
        );
    }

    /// Every run that had errors, with their kinds.
    pub(super) fn errors_section(&self, w: &mut String) {
        let mut lines = Vec::new();
        for (label, series) in [
            ("pgbench new", &self.new_pgbench),
            ("backend new", &self.new_backend),
            ("pgbench duplicate", &self.dup_pgbench),
            ("backend duplicate", &self.dup_backend),
            ("backend pay now", &self.pay),
            ("backend pay alone", &self.pay_alone),
        ] {
            for run in series.iter().filter(|r| r.errors > 0) {
                lines.push(format!(
                    "- {label} @{}: {} errors: {:?}",
                    run.clients, run.errors, run.error_kinds
                ));
            }
        }
        if !lines.is_empty() {
            let _ = writeln!(w, "### Errors\n\n{}\n", lines.join("\n"));
        }
    }
}
