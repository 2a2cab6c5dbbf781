//! Why a ratio target was missed, worked out from the run's own CPU figures
//! (`cpu.rs`), so every run that misses a target says why in the same page:
//! where each side's CPU went per operation, whether the machine was the
//! ceiling, and how far the ratio could go on these cores.
//!
//! When both sides keep the machine busy, each runs at `cores / (CPU per
//! operation)`, so their ratio cannot pass the quotient of their CPU costs
//! (the *CPU ceiling*); what ours spends beyond the limit's work, part by
//! part, is what stands between them. When our side leaves cores idle, it
//! was waiting (round trips, commits, locks), not short of CPU, and the page
//! says that instead. The `perf` profiles (`--profile`) show the functions
//! behind each part. A p99 over its target is told beside the limit's own p99
//! on the same work at the same count.

use super::Results;
use super::targets::limits;
use crate::cpu::CpuUse;
use crate::stats::{Run, at};
use std::fmt::Write as _;

/// A side that leaves more than this share of the machine's cores idle was
/// waiting, not short of CPU.
const IDLE_SHARE: f64 = 0.15;

/// One part of a side's CPU per operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Whose: "PostgreSQL", "backend", ...
    pub name: &'static str,
    /// CPU microseconds per operation.
    pub us: f64,
}

/// One side of a comparison: its rate, how busy it kept the machine, and its
/// CPU per operation by part.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// Operations per second.
    pub rate: f64,
    /// Cores nobody used during its window.
    pub idle_cores: f64,
    /// CPU microseconds per operation, by part (zero parts left out).
    pub parts: Vec<Part>,
}

impl Side {
    /// The side of `run`, when its CPU was measured.
    fn of(run: &Run) -> Option<Self> {
        let cpu = run.cpu.as_ref()?;
        (run.rate > 0.0).then(|| Self {
            rate: run.rate,
            idle_cores: cpu.idle_cores(),
            parts: parts(run, cpu),
        })
    }

    /// All its CPU per operation.
    pub fn total_us(&self) -> f64 {
        self.parts.iter().map(|p| p.us).sum()
    }

    fn part(&self, name: &str) -> f64 {
        self.parts
            .iter()
            .find(|p| p.name == name)
            .map_or(0.0, |p| p.us)
    }

    fn listed(&self) -> String {
        self.parts
            .iter()
            .map(|p| format!("{} {:.0}", p.name, p.us))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn parts(run: &Run, cpu: &CpuUse) -> Vec<Part> {
    [
        ("PostgreSQL", cpu.postgres_cores),
        ("backend", cpu.backend_cores),
        ("platform", cpu.platform_cores),
        ("load generator", cpu.client_cores),
        ("Redis", cpu.redis_cores),
    ]
    .into_iter()
    .map(|(name, cores)| Part {
        name,
        us: run.cpu_us_per_op(cores),
    })
    .filter(|p| p.us >= 0.5)
    .collect()
}

/// A ratio target missed at one client count, with what the run's CPU
/// figures say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    /// Which target, in words ("new callbacks", "pay alone", ...).
    pub what: String,
    /// Concurrent clients.
    pub clients: usize,
    /// The measured ratio (median of the rounds).
    pub ratio: f64,
    /// The ratio wanted.
    pub wanted: f64,
    /// Our side (the median round by rate), when its CPU was measured.
    pub ours: Option<Side>,
    /// The limit's side, when its CPU was measured.
    pub limit: Option<Side>,
    /// Where the profiles of this step are, when `--profile` took any.
    pub profiles: Vec<String>,
}

/// What held the ratio down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Both sides kept the machine busy: the ratio cannot pass `ceiling`.
    Cpu {
        /// The limit's CPU per operation over ours.
        ceiling: f64,
    },
    /// Our side left cores idle: it waited.
    Waiting {
        /// Idle cores during our run.
        idle_cores: f64,
    },
    /// The limit's side left cores idle while ours did not: ours used the
    /// machine fully and still fell short, the limit did not need to.
    LimitWaiting {
        /// The limit's CPU per operation over ours.
        ceiling: f64,
    },
    /// CPU was not measured on one side.
    Unknown,
}

impl Miss {
    /// What held the ratio down, judged from the two sides' idle cores.
    pub fn verdict(&self, cores: f64) -> Verdict {
        let (Some(ours), Some(limit)) = (&self.ours, &self.limit) else {
            return Verdict::Unknown;
        };
        let idle = cores * IDLE_SHARE;
        let ceiling = limit.total_us() / ours.total_us().max(1e-9);
        if ours.idle_cores > idle {
            Verdict::Waiting {
                idle_cores: ours.idle_cores,
            }
        } else if limit.idle_cores > idle {
            Verdict::LimitWaiting { ceiling }
        } else {
            Verdict::Cpu { ceiling }
        }
    }

    /// What ours spends per operation beyond the limit, part by part, the
    /// largest first (parts the limit spends more on are left out).
    pub fn extra(&self) -> Vec<Part> {
        let (Some(ours), Some(limit)) = (&self.ours, &self.limit) else {
            return Vec::new();
        };
        let mut extra: Vec<Part> = ours
            .parts
            .iter()
            .map(|p| Part {
                name: p.name,
                us: p.us - limit.part(p.name),
            })
            .filter(|p| p.us >= 1.0)
            .collect();
        extra.sort_by(|a, b| b.us.total_cmp(&a.us));
        extra
    }

    /// The CPU per operation ours could spend and still meet the target, when
    /// both sides use the whole machine: the limit's cost over the ratio wanted.
    pub fn budget_us(&self) -> Option<f64> {
        Some(self.limit.as_ref()?.total_us() / self.wanted)
    }

    /// One sentence: the verdict.
    pub fn short(&self, cores: f64) -> String {
        let head = format!(
            "{} at {} clients: {:.2}x, wanted {:.2}x",
            self.what, self.clients, self.ratio, self.wanted
        );
        match self.verdict(cores) {
            Verdict::Cpu { ceiling } => format!(
                "{head}: CPU-bound on both sides; the CPU per operation caps it at {ceiling:.2}x{}",
                self.needs()
            ),
            Verdict::LimitWaiting { ceiling } => format!(
                "{head}: ours used the whole machine, the limit did not; its CPU per operation would cap it at {ceiling:.2}x{}",
                self.needs()
            ),
            Verdict::Waiting { idle_cores } => format!(
                "{head}: not short of CPU ({idle_cores:.2} of {cores:.0} cores idle during ours): it waited"
            ),
            Verdict::Unknown => format!("{head}: CPU not measured on both sides"),
        }
    }

    /// ", and X.Xx needs N µs less per operation" when ours costs more than the budget.
    fn needs(&self) -> String {
        match (self.budget_us(), &self.ours) {
            (Some(budget), Some(ours)) if ours.total_us() > budget => format!(
                "; {:.2}x needs at most {budget:.0} µs per operation, {:.0} µs less than ours",
                self.wanted,
                ours.total_us() - budget
            ),
            _ => String::new(),
        }
    }
}

/// A callback ratio target as [`Results::misses`] walks it: the counts it
/// was measured at, its ratio at a count, and the two series compared.
struct CallbackTarget<'a> {
    what: &'static str,
    counts: Vec<usize>,
    ratio: &'a dyn Fn(usize) -> Option<f64>,
    wanted: f64,
    ours: &'a [Run],
    limit: &'a [Run],
    /// What the labels of this step's profiles contain.
    step: &'static str,
}

impl Results {
    /// Every ratio target this run missed, at every count it was missed at.
    pub fn misses(&self) -> Vec<Miss> {
        let mut out = Vec::new();
        let (new_limit, dup_limit) = (self.new_limit(), self.dup_limit());
        let callbacks = [
            CallbackTarget {
                what: "new callbacks / one round trip",
                counts: self.settings.clients.clone(),
                ratio: &|clients| self.new_ratio(clients),
                wanted: limits::NEW_VS_PGBENCH,
                ours: &self.new_backend,
                limit: &new_limit,
                step: "new callbacks",
            },
            CallbackTarget {
                what: "duplicates / one statement",
                counts: self.all_counts(),
                ratio: &|clients| self.dup_ratio(clients),
                wanted: limits::DUP_VS_PGBENCH,
                ours: &self.dup_backend,
                limit: &dup_limit,
                step: "duplicate",
            },
        ];
        for target in callbacks {
            for &clients in &target.counts {
                if let Some(ratio) = (target.ratio)(clients)
                    && ratio < target.wanted
                {
                    out.push(Miss {
                        what: target.what.into(),
                        clients,
                        ratio,
                        wanted: target.wanted,
                        ours: at(target.ours, clients).and_then(Side::of),
                        limit: at(target.limit, clients).and_then(Side::of),
                        profiles: self.profiles_of(target.step),
                    });
                }
            }
        }
        for &clients in &self.settings.clients {
            if let Some(ratio) = self.pay_ratio(clients)
                && ratio < limits::PAY_VS_LIMIT
            {
                let what = if self.pay_alone_at(clients) {
                    "pay alone / GETDEL then attempt + hold"
                } else {
                    "pay now / GETDEL then attempt + hold"
                };
                out.push(Miss {
                    what: what.into(),
                    clients,
                    ratio,
                    wanted: limits::PAY_VS_LIMIT,
                    ours: at(self.pay_measured(clients), clients).and_then(Side::of),
                    limit: self.pay_limit_side(clients),
                    profiles: self.profiles_of("pay"),
                });
            }
        }
        out
    }

    /// The latency targets this run missed, each in one sentence with the
    /// limit's own p99 on the same work at the same count beside it (when the
    /// database alone cannot keep under the target, neither can anything in
    /// front of it).
    pub fn latency_misses(&self) -> Vec<String> {
        let new_limit = self.new_limit();
        let dup_limit = self.dup_limit();
        let mut out = Vec::new();
        for (what, ours, limit, clients) in [
            ("p99, new callbacks", &self.new_backend, &new_limit, 32),
            ("p99, duplicate storm", &self.dup_backend, &dup_limit, 32),
            ("p99, duplicate storm", &self.dup_backend, &dup_limit, 100),
        ] {
            let Some(run) = at(ours, clients) else {
                continue;
            };
            if run.latency.p99_ms <= limits::P99_MS {
                continue;
            }
            let mut text = format!(
                "{what} at {clients} clients: {:.1} ms, wanted <= {:.0} ms (p50 {:.1} ms",
                run.latency.p99_ms,
                limits::P99_MS,
                run.latency.p50_ms
            );
            if let Some(cpu) = &run.cpu {
                text.push_str(&format!(
                    ", {:.2} of {} cores idle",
                    cpu.idle_cores(),
                    self.machine.cores
                ));
            }
            text.push(')');
            match at(limit, clients) {
                Some(limit) if limit.latency.p99_ms > 0.0 => text.push_str(&format!(
                    "; PostgreSQL alone on the same work (pgbench) had p99 {:.1} ms at this count{}",
                    limit.latency.p99_ms,
                    if limit.latency.p99_ms > limits::P99_MS {
                        ": the database alone is over the target"
                    } else {
                        ""
                    }
                )),
                _ => {}
            }
            out.push(text);
        }
        out
    }

    /// The pay limit's side at `clients`: pgbench's attempt and hold, plus one
    /// `GETDEL`, whose CPU is Redis's and redis-benchmark's when measured, else
    /// at most the whole machine over its rate.
    fn pay_limit_side(&self, clients: usize) -> Option<Side> {
        let mut side = Side::of(at(&self.pay_pgbench, clients)?)?;
        let getdel = at(&self.redis_getdel, clients)?;
        let getdel_us = match &getdel.cpu {
            Some(cpu) => getdel.cpu_us_per_op(cpu.redis_cores + cpu.client_cores),
            None => getdel.cpu_us_per_op(self.machine.cores as f64),
        };
        if getdel_us > 0.0 {
            side.rate = 1.0 / (1.0 / side.rate + 1.0 / getdel.rate);
            match side.parts.iter_mut().find(|p| p.name == "Redis") {
                Some(part) => part.us += getdel_us,
                None => side.parts.push(Part {
                    name: "Redis",
                    us: getdel_us,
                }),
            }
        }
        Some(side)
    }

    /// The labels of the profiles taken of a step whose label has `step`.
    fn profiles_of(&self, step: &str) -> Vec<String> {
        self.profiles
            .iter()
            .filter(|(label, _)| label.contains(step))
            .map(|(label, _)| label.clone())
            .collect()
    }

    /// "Why the missed targets missed": one paragraph per miss.
    pub(super) fn misses_section(&self, w: &mut String) {
        let misses = self.misses();
        let latency = self.latency_misses();
        if misses.is_empty() && latency.is_empty() {
            return;
        }
        let cores = self.machine.cores as f64;
        let _ = writeln!(w, "## Why the missed targets missed\n");
        let _ = writeln!(
            w,
            "Worked out by the benchmark from each side's CPU per operation (the median round \
             by rate; *Where the CPU went* below has every run). When both sides keep the \
             {cores:.0} cores busy (less than {:.0} % of them idle), each runs at cores over its \
             CPU per operation, so the ratio cannot pass the limit's CPU per operation over \
             ours: the *CPU ceiling*. What ours spends beyond the limit's work is listed part by \
             part; the profiles show the functions behind it.\n",
            IDLE_SHARE * 100.0
        );
        for miss in &misses {
            let _ = writeln!(w, "- **{}.**", miss.short(cores));
            if let Some(ours) = &miss.ours {
                let _ = writeln!(
                    w,
                    "  Ours: {:.0} per s, {:.2} cores idle, {:.0} µs of CPU per operation ({}).",
                    ours.rate,
                    ours.idle_cores,
                    ours.total_us(),
                    ours.listed()
                );
            }
            if let Some(limit) = &miss.limit {
                let _ = writeln!(
                    w,
                    "  The limit: {:.0} per s, {:.2} cores idle, {:.0} µs per operation ({}).",
                    limit.rate,
                    limit.idle_cores,
                    limit.total_us(),
                    limit.listed()
                );
            }
            let extra = miss.extra();
            if !extra.is_empty() {
                let listed: Vec<String> = extra
                    .iter()
                    .map(|p| format!("{} +{:.0}", p.name, p.us))
                    .collect();
                let _ = writeln!(
                    w,
                    "  Beyond the limit's work, per operation (µs): {}.",
                    listed.join(", ")
                );
            }
            if !miss.profiles.is_empty() {
                let _ = writeln!(
                    w,
                    "  Profiles: {} (under *Profiles*).",
                    miss.profiles
                        .iter()
                        .map(|p| format!("\"{p}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        for text in latency {
            let _ = writeln!(w, "- **{text}.**");
        }
        let _ = writeln!(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Settings;

    fn run(clients: usize, rate: f64, cpu: CpuUse) -> Run {
        Run {
            clients,
            ok: 1000,
            rate,
            cpu: Some(cpu),
            ..Run::default()
        }
    }

    fn busy(postgres: f64, backend: f64, client: f64, idle: f64) -> CpuUse {
        CpuUse {
            window_s: 10.0,
            cores: 2.0,
            busy_cores: 2.0 - idle,
            postgres_cores: postgres,
            backend_cores: backend,
            client_cores: client,
            ..CpuUse::default()
        }
    }

    fn results(new_pgbench: Run, new_backend: Run) -> Results {
        let mut results = Results {
            settings: Settings {
                clients: vec![8],
                ..Settings::default()
            },
            new_pgbench: vec![new_pgbench],
            new_backend: vec![new_backend],
            ..Results::default()
        };
        results.machine.cores = 2;
        results
    }

    #[test]
    fn a_cpu_bound_miss_gives_the_ceiling_and_what_ours_spends_beyond_the_limit() {
        // pgbench: 2,000/s on 1.9 cores = 950 µs per op; ours: 1,400/s on
        // 1.9 cores = 1,357 µs per op; the ceiling is 0.70.
        let results = results(
            run(8, 2_000.0, busy(1.8, 0.0, 0.1, 0.1)),
            run(8, 1_400.0, busy(1.5, 0.3, 0.1, 0.1)),
        );
        let misses = results.misses();
        assert_eq!(misses.len(), 1, "{misses:?}");
        let miss = &misses[0];
        assert!((miss.ratio - 0.7).abs() < 1e-9);
        let Verdict::Cpu { ceiling } = miss.verdict(2.0) else {
            panic!("{:?}", miss.verdict(2.0));
        };
        assert!((ceiling - 950.0 / (1.9 / 1_400.0 * 1e6)).abs() < 1e-6);
        let extra = miss.extra();
        assert_eq!(extra[0].name, "backend", "{extra:?}");
        assert!((extra[0].us - 0.3 / 1_400.0 * 1e6).abs() < 1e-6);
        let budget = miss.budget_us().expect("limit measured");
        assert!((budget - 950.0 / 0.8).abs() < 1e-6);
        let text = miss.short(2.0);
        assert!(text.contains("CPU-bound"), "{text}");
        assert!(text.contains("caps it at 0.70x"), "{text}");
    }

    #[test]
    fn postgres_spending_more_per_operation_for_ours_is_a_part_beyond_the_limit() {
        let results = results(
            run(8, 2_000.0, busy(1.8, 0.0, 0.1, 0.1)),
            run(8, 1_000.0, busy(1.2, 0.6, 0.1, 0.1)),
        );
        let extra = results.misses()[0].extra();
        let postgres = extra
            .iter()
            .find(|p| p.name == "PostgreSQL")
            .expect("listed");
        assert!((postgres.us - (1_200.0 - 900.0)).abs() < 1e-6, "{extra:?}");
    }

    #[test]
    fn duplicates_are_judged_at_every_count_they_ran_at_against_their_own_limit() {
        let mut results = Results {
            settings: Settings {
                clients: vec![8],
                ..Settings::default()
            },
            dup_pgbench: vec![run(100, 10_000.0, busy(1.6, 0.0, 0.2, 0.2))],
            dup_backend: vec![run(100, 7_000.0, busy(0.6, 1.0, 0.2, 0.2))],
            ..Results::default()
        };
        results.machine.cores = 2;
        let misses = results.misses();
        assert_eq!(
            misses.len(),
            1,
            "the storm's count, beyond --clients: {misses:?}"
        );
        let miss = &misses[0];
        assert_eq!(miss.what, "duplicates / one statement");
        assert_eq!(miss.clients, 100);
        assert!((miss.ratio - 0.7).abs() < 1e-9);
        assert_eq!(miss.extra()[0].name, "backend", "{:?}", miss.extra());
    }

    #[test]
    fn a_side_that_left_cores_idle_waited() {
        let results = results(
            run(8, 2_000.0, busy(1.8, 0.0, 0.1, 0.1)),
            run(8, 1_000.0, busy(0.6, 0.3, 0.1, 1.0)),
        );
        let miss = &results.misses()[0];
        assert_eq!(miss.verdict(2.0), Verdict::Waiting { idle_cores: 1.0 });
        assert!(miss.short(2.0).contains("it waited"), "{}", miss.short(2.0));
    }

    #[test]
    fn a_met_target_is_no_miss_and_a_run_without_cpu_is_unknown() {
        let met = results(
            run(8, 1_000.0, busy(1.8, 0.0, 0.1, 0.1)),
            run(8, 900.0, busy(1.5, 0.3, 0.1, 0.1)),
        );
        assert!(met.misses().is_empty());
        let mut unmeasured = results(
            run(8, 1_000.0, busy(1.8, 0.0, 0.1, 0.1)),
            run(8, 500.0, busy(1.5, 0.3, 0.1, 0.1)),
        );
        unmeasured.new_backend[0].cpu = None;
        let miss = &unmeasured.misses()[0];
        assert_eq!(miss.verdict(2.0), Verdict::Unknown);
    }

    #[test]
    fn the_pay_limit_adds_one_getdel_to_the_attempt_and_hold() {
        let mut results = Results {
            settings: Settings {
                clients: vec![32],
                ..Settings::default()
            },
            pay_pgbench: vec![run(32, 5_000.0, busy(1.7, 0.0, 0.1, 0.2))],
            redis_getdel: vec![Run {
                clients: 32,
                ok: 100_000,
                rate: 100_000.0,
                ..Run::default()
            }],
            pay_alone: vec![run(
                32,
                2_000.0,
                CpuUse {
                    platform_cores: 0.2,
                    ..busy(1.0, 0.5, 0.1, 0.2)
                },
            )],
            ..Results::default()
        };
        results.machine.cores = 2;
        let misses = results.misses();
        assert_eq!(misses.len(), 1, "{misses:?}");
        let miss = &misses[0];
        assert!(miss.what.starts_with("pay alone"), "{}", miss.what);
        let limit = miss.limit.as_ref().expect("measured");
        // GETDEL without CPU figures: at most 2 cores / 100,000 per s = 20 µs.
        assert!((limit.part("Redis") - 20.0).abs() < 1e-6, "{limit:?}");
        assert!((limit.total_us() - (1.8 / 5_000.0 * 1e6 + 20.0)).abs() < 1e-6);
        let extra = miss.extra();
        assert!(
            extra
                .iter()
                .any(|p| p.name == "platform" && (p.us - 100.0).abs() < 1e-6),
            "the platform's CPU is part of ours: {extra:?}"
        );
    }

    #[test]
    fn a_p99_over_the_target_is_told_with_the_databases_own_p99_beside_it() {
        let latency = |p50_ms, p99_ms| crate::stats::Latency {
            p50_ms,
            p99_ms,
            ..crate::stats::Latency::default()
        };
        let mut results = Results {
            settings: Settings {
                clients: vec![32],
                ..Settings::default()
            },
            new_pgbench: vec![Run {
                latency: latency(9.0, 27.0),
                ..run(32, 3_000.0, busy(1.8, 0.0, 0.1, 0.1))
            }],
            new_backend: vec![Run {
                latency: latency(12.0, 31.5),
                ..run(32, 2_700.0, busy(1.5, 0.3, 0.1, 0.1))
            }],
            ..Results::default()
        };
        results.machine.cores = 2;
        let misses = results.latency_misses();
        assert_eq!(misses.len(), 1, "{misses:?}");
        assert!(
            misses[0].starts_with("p99, new callbacks at 32 clients: 31.5 ms"),
            "{}",
            misses[0]
        );
        assert!(
            misses[0].contains("pgbench) had p99 27.0 ms"),
            "{}",
            misses[0]
        );
        assert!(
            misses[0].contains("the database alone is over the target"),
            "{}",
            misses[0]
        );
        let mut page = String::new();
        results.misses_section(&mut page);
        assert!(page.contains("31.5 ms, wanted <= 25 ms"), "{page}");

        results.new_backend[0].latency = latency(12.0, 24.0);
        assert!(
            results.latency_misses().is_empty(),
            "24 ms is within the target"
        );
    }

    #[test]
    fn the_section_names_each_miss_and_its_profiles() {
        let mut results = results(
            run(8, 2_000.0, busy(1.8, 0.0, 0.1, 0.1)),
            run(8, 1_400.0, busy(1.5, 0.3, 0.1, 0.1)),
        );
        results
            .profiles
            .push(("backend, new callbacks, 8 clients".into(), "...".into()));
        let mut page = String::new();
        results.misses_section(&mut page);
        assert!(
            page.starts_with("## Why the missed targets missed"),
            "{page}"
        );
        assert!(
            page.contains("new callbacks / one round trip at 8 clients: 0.70x"),
            "{page}"
        );
        assert!(
            page.contains("\"backend, new callbacks, 8 clients\""),
            "{page}"
        );
        assert!(page.contains("backend +214"), "{page}");
    }
}
