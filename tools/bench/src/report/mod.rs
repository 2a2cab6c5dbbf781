//! The figures of one benchmark run, the targets they are held to, and the
//! Markdown report (`docs/BENCHMARKS.md`; the scale-out step's figures go to
//! `docs/SCALING.md`).
//!
//! The report is regenerated whole on every run except the part between
//! [`ANALYSIS_BEGIN`] and [`ANALYSIS_END`]: the written analysis is kept.
//!
//! The figures are data a run saves and reads back
//! (`--report-from`); the page is laid out in `document.rs`, one file per kind
//! of section, so a change to one section touches one file:
//!
//! - `results.rs`: the figures ([`Results`], saved as `results.json`);
//! - `ratios.rs`: the backend's rates over the tools', round by round;
//! - `targets.rs`: the targets of issue 5 and how a run is judged against them;
//! - `misses.rs`: why a missed ratio target missed, from the run's CPU figures;
//! - `summary.rs`: what the terminal shows at the end of a run;
//! - `document.rs`: the page, section by section in order;
//! - `provenance.rs`: how the figures were produced (machine, settings, noise);
//! - `comparison.rs`: the rate and latency tables next to pgbench and Redis;
//! - `cpu_and_noise.rs`: where the CPU went, the other processes' share, profiles;
//! - `database.rs`: database time per statement, and plans;
//! - `analysis.rs`: the hand-written part that survives a rewrite;
//! - `scaling.rs`: the scale-out figures and `docs/SCALING.md`'s `## Measured` section.

mod analysis;
mod comparison;
mod cpu_and_noise;
mod database;
mod document;
mod misses;
mod provenance;
mod ratios;
mod results;
mod scaling;
mod summary;
mod targets;

pub use analysis::{ANALYSIS_BEGIN, ANALYSIS_END, kept_analysis};
pub use misses::{Miss, Verdict};
pub use results::{Results, Settings, StatementBreakdown};
pub use scaling::{Balanced, MEASURED_HEADING, ScaleOut, write_scaling};
pub use targets::{Target, limits};
