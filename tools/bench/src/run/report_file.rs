//! The files a run leaves: its raw figures (`results.json` in the work
//! folder) and the Markdown report (`docs/BENCHMARKS.md`, and for the
//! scale-out step `docs/SCALING.md`'s `## Measured` section).
//!
//! The raw figures are what `--report-from` reads back, so a change to the
//! report's layout does not need a new measurement.

use super::say;
use crate::cli::Args;
use crate::report::{Results, kept_analysis, write_scaling};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Reads the figures a run saved.
pub(super) fn read_results(json: &Path) -> anyhow::Result<Results> {
    let text =
        std::fs::read_to_string(json).with_context(|| format!("cannot read {}", json.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a bench results.json", json.display()))
}

/// Saves the figures as `results.json` in the work folder; returns that file.
pub(super) fn save_results(work: &Path, results: &Results) -> anyhow::Result<PathBuf> {
    let file = work.join("results.json");
    std::fs::write(&file, serde_json::to_string_pretty(results)?)?;
    Ok(file)
}

/// Writes the Markdown report, keeping the analysis of the one it replaces,
/// when the run measured anything it shows; and the scale-out figures into
/// `docs/SCALING.md`'s `## Measured` section, when that step ran.
pub(super) fn write_report(args: &Args, root: &Path, results: &Results) -> anyhow::Result<()> {
    if args.no_write {
        return Ok(());
    }
    if results.scale.is_some() {
        let scaling = args
            .scaling_output
            .clone()
            .unwrap_or_else(|| root.join("docs/SCALING.md"));
        write_scaling(&scaling, results)?;
        say(format!(
            "==> Wrote the measured section of {}",
            scaling.display()
        ));
    }
    if !results.has_benchmarks() {
        return Ok(());
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| root.join("docs/BENCHMARKS.md"));
    let analysis = std::fs::read_to_string(&output)
        .ok()
        .and_then(|text| kept_analysis(&text));
    if let Some(dir) = output.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&output, results.markdown(analysis.as_deref()))?;
    say(format!("==> Wrote {}", output.display()));
    Ok(())
}
