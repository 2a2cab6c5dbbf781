//! What the terminal shows at the end of a run (and after `--report-from`):
//! the comparison table, the targets and the noise, without the rest of the page.

use super::Results;
use super::targets::mark;
use std::fmt::Write as _;

impl Results {
    /// The summary printed at the end of a run.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        if let Some(scale) = &self.scale {
            let _ = writeln!(out, "\nScale-out:\n\n{}", scale.table());
            if let Some(cost) = scale.balancer_cost() {
                let _ = writeln!(out, "{cost}\n");
            }
            let _ = writeln!(
                out,
                "Noise (scale-out): {}",
                scale.noise_summary(self.machine.cores)
            );
            if !self.has_benchmarks() {
                return out;
            }
        }
        let _ = writeln!(out, "\n{}", self.comparison_table());
        let _ = writeln!(out, "Targets:");
        for target in self.targets() {
            let _ = writeln!(
                out,
                "  {:<12} {:<44} wanted {:<22} measured {}",
                mark(target.met).trim_matches('*'),
                target.what,
                target.wanted,
                target.measured
            );
        }
        let misses = self.misses();
        let latency = self.latency_misses();
        if !misses.is_empty() || !latency.is_empty() {
            let _ = writeln!(
                out,
                "\nWhy missed (the report's \"Why the missed targets missed\"):"
            );
            for miss in misses {
                let _ = writeln!(out, "  {}", miss.short(self.machine.cores as f64));
            }
            for text in latency {
                let _ = writeln!(out, "  {text}");
            }
        }
        let _ = writeln!(out, "\nNoise: {}", self.noise_summary());
        out
    }
}
