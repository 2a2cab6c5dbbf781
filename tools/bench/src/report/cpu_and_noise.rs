//! Where the CPU went during each measured window: ours (client, backend,
//! PostgreSQL, Redis) and the noise (every other process, steal), per
//! operation; and the `perf` profiles, when taken.
//!
//! On a shared machine the noise decides whether a round counts, so it is
//! summed up once here and shown at the top of the page.

use super::Results;
use crate::cpu::CpuUse;
use crate::stats::Run;
use std::fmt::Write as _;

impl Results {
    /// Every run that has CPU figures, labelled with its step, count and round.
    fn all_cpu(&self) -> Vec<(String, &Run, &CpuUse)> {
        let mut out = Vec::new();
        for (label, series) in [
            ("pgbench new", &self.new_pgbench),
            ("pgbench pipelined new", &self.new_pgbench_pipelined),
            ("pgbench + ping new", &self.new_pgbench_ping),
            ("backend new", &self.new_backend),
            ("pgbench duplicate", &self.dup_pgbench),
            ("pgbench + ping duplicate", &self.dup_pgbench_ping),
            ("backend duplicate", &self.dup_backend),
            ("backend pay now", &self.pay),
            ("backend pay alone", &self.pay_alone),
            ("pgbench pay attempt + hold", &self.pay_pgbench),
        ] {
            let mut seen: Vec<usize> = Vec::new();
            for run in series {
                seen.push(run.clients);
                let round = seen.iter().filter(|&&c| c == run.clients).count();
                let rounds = series.iter().filter(|r| r.clients == run.clients).count();
                if let Some(cpu) = &run.cpu {
                    let suffix = if rounds > 1 {
                        format!(" #{round}")
                    } else {
                        String::new()
                    };
                    out.push((format!("{label} @{}{suffix}", run.clients), run, cpu));
                }
            }
        }
        out
    }

    /// One line on how busy the rest of the machine was.
    pub fn noise_summary(&self) -> String {
        let noise: Vec<f64> = self
            .all_cpu()
            .iter()
            .map(|(_, _, cpu)| cpu.other_cores + cpu.steal_cores)
            .collect();
        if noise.is_empty() {
            return "not measured".into();
        }
        let mean = noise.iter().sum::<f64>() / noise.len() as f64;
        let max = noise.iter().copied().fold(0.0, f64::max);
        let cores = self.machine.cores.max(1) as f64;
        format!(
            "other processes (and steal) used {mean:.2} of {cores:.0} cores on average during the measured windows, {max:.2} at most ({:.0}% / {:.0}% of the machine)",
            mean / cores * 100.0,
            max / cores * 100.0
        )
    }

    /// "Where the CPU went": cores and per-operation CPU, context switches and WAL.
    pub(super) fn cpu_section(&self, w: &mut String) {
        let rows = self.all_cpu();
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(
            w,
            "## Where the CPU went (measured from /proc during each window)\n"
        );
        let _ = writeln!(
            w,
            "Cores busy on average over the steady part of each window (the machine has {}), \
             then per successful operation: CPU microseconds of the load generator, the backend \
             and PostgreSQL, their sum with Redis and the platform (*all ours*), context switches \
             of the whole machine, and WAL. *client* is the load generator (pgbench, or the \
             `bench` process's HTTP workers); *platform* is the `platform-sim` process the pay \
             hands its payments to (pay steps only); *other* is everything not ours: the noise. *irq* is interrupt time, \
             most of it already inside the process times (loopback networking runs in the \
             sending process). The machine is saturated when *idle* is near 0: then the rate \
             is the cores divided by *all ours µs/op*. *WAL flush ms* is the mean time of one \
             WAL fsync: the disk's share of commit latency, and a sign of disk noise when it \
             moves between runs.\n",
            self.machine.cores
        );
        let _ = writeln!(
            w,
            "| run | ops/s | client | backend | PostgreSQL | Redis | platform | irq | other + steal | idle | client µs/op | backend µs/op | PostgreSQL µs/op | all ours µs/op | ctx switches/op | WAL bytes/op | ops per WAL flush | WAL flush ms |"
        );
        let _ = writeln!(
            w,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for (label, run, cpu) in rows {
            let idle = cpu.idle_cores();
            let ours = cpu.ours_cores();
            let (wal_bytes, wal_syncs) = run.wal_per_op().unwrap_or((0.0, 0.0));
            let _ = writeln!(
                w,
                "| {label} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} | {} | {} |",
                run.rate,
                cpu.client_cores,
                cpu.backend_cores,
                cpu.postgres_cores,
                cpu.redis_cores,
                cpu.platform_cores,
                cpu.irq_cores,
                cpu.other_cores + cpu.steal_cores,
                idle,
                run.cpu_us_per_op(cpu.client_cores),
                run.cpu_us_per_op(cpu.backend_cores),
                run.cpu_us_per_op(cpu.postgres_cores),
                run.cpu_us_per_op(ours),
                if run.rate > 0.0 {
                    cpu.context_switches_per_s / run.rate
                } else {
                    0.0
                },
                wal_bytes,
                if wal_syncs > 0.0 {
                    format!("{:.1}", 1.0 / wal_syncs)
                } else {
                    "-".into()
                },
                run.wal
                    .as_ref()
                    .and_then(|wal| wal.mean_sync_ms())
                    .map_or("-".into(), |ms| format!("{ms:.2}")),
            );
        }
        let _ = writeln!(w);
    }

    /// The `perf` profiles of the extra runs.
    pub(super) fn profiles_section(&self, w: &mut String) {
        if !self.profiles.is_empty() {
            let _ = writeln!(
                w,
                "## Profiles (`perf record -a -e cpu-clock`, extra runs)\n"
            );
            for (label, text) in &self.profiles {
                let _ = writeln!(w, "### {label}\n\n```text\n{}\n```\n", text.trim_end());
            }
        }
    }
}
