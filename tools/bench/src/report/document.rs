//! The report page, top to bottom: the title and what it compares, then each
//! section in its fixed order.
//!
//! Most sections write nothing when the run did not measure what they show, so
//! a partial run gives a shorter page, not empty tables.

use super::Results;
use super::analysis::analysis_section;
use std::fmt::Write as _;

impl Results {
    /// The Markdown report; `analysis` is the kept hand-written part.
    pub fn markdown(&self, analysis: Option<&str>) -> String {
        let mut md = String::new();
        let w = &mut md;
        let _ = writeln!(w, "# Benchmarks against the physical limit\n");
        let _ = writeln!(
            w,
            "The callback handler is compared with `pgbench` doing the same work with as few round trips \
             as it can, generated from the SQL files the handler runs: its one statement \
             (`bench::handler_sql::NEW_CHARGE_SQL`, `DUPLICATE_SQL`) and the general path's statements \
             pipelined into one round trip (`GENERAL_CHARGE_SQL`), with the same statements one round \
             trip each and the bare duplicate lookup (`DUPLICATE_LOOKUP_SQL`) beside them; on the same \
             machine, in the same run, with the same data. pgbench is the limit: PostgreSQL doing the \
             work with nothing in front of it. Pay now is held to Redis's `GETDEL` then pgbench on \
             pay's own statement (`backend::db::attempts::START_IN_ONE_SQL`).\n"
        );
        let _ = writeln!(
            w,
            "This file is written by the benchmark (`bench` crate); only the analysis section between \
             its markers is kept when it is rewritten.\n"
        );
        self.provenance_section(w);
        self.targets_section(w);
        self.misses_section(w);
        self.comparison_section(w);
        self.ping_section(w);
        self.pay_section(w);
        self.errors_section(w);
        self.page_and_memory_section(w);
        self.cpu_section(w);
        self.statements_section(w);
        self.plans_section(w);
        self.profiles_section(w);
        analysis_section(w, analysis);
        self.scripts_section(w);
        md
    }

    /// "Page size and memory": the `.wasm` and the backend's peak memory.
    fn page_and_memory_section(&self, w: &mut String) {
        let _ = writeln!(w, "## Page size and memory\n");
        match &self.wasm {
            Some(wasm) => {
                let _ = writeln!(
                    w,
                    "- `{}` (built {} UTC): {} bytes raw ({:.1} KiB), {} bytes gzip -9 ({:.1} KiB).",
                    wasm.file,
                    wasm.built_at,
                    wasm.raw_bytes,
                    wasm.raw_bytes as f64 / 1024.0,
                    wasm.gzip_bytes,
                    wasm.gzip_bytes as f64 / 1024.0
                );
            }
            None => {
                let _ = writeln!(
                    w,
                    "- No `dist/*.wasm`: run `bash scripts/build-frontend.sh` first."
                );
            }
        }
        for (phase, kib) in &self.peak_rss_kib {
            let _ = writeln!(
                w,
                "- Backend peak RSS (`VmHWM`), {phase}: {:.1} MiB.",
                *kib as f64 / 1024.0
            );
        }
        let _ = writeln!(w);
    }

    /// The pgbench scripts as generated, so a reader can run them by hand.
    fn scripts_section(&self, w: &mut String) {
        if !self.scripts.is_empty() {
            let _ = writeln!(w, "## The generated pgbench scripts\n");
            for (name, text) in &self.scripts {
                let _ = writeln!(w, "`{name}`:\n\n```text\n{}```\n", text);
            }
        }
    }
}
