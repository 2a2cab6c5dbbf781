//! The hand-written analysis: the one part of the report a rewrite keeps,
//! found between two HTML comments that Markdown does not show.

use std::fmt::Write as _;

/// Start of the hand-written part that survives a rewrite.
pub const ANALYSIS_BEGIN: &str = "<!-- analysis: kept when the benchmark rewrites this file -->";
/// End of the hand-written part.
pub const ANALYSIS_END: &str = "<!-- end of analysis -->";

/// The "Analysis" section: the kept text, or a placeholder.
pub(super) fn analysis_section(w: &mut String, analysis: Option<&str>) {
    let _ = writeln!(w, "## Analysis\n");
    kept_block(w, analysis);
}

/// The kept text (or a placeholder) between the markers.
pub(super) fn kept_block(w: &mut String, analysis: Option<&str>) {
    let _ = writeln!(w, "{ANALYSIS_BEGIN}");
    let _ = writeln!(
        w,
        "{}",
        analysis
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .unwrap_or("(not written yet)")
    );
    let _ = writeln!(w, "{ANALYSIS_END}\n");
}

/// The kept analysis of an existing report, if it has one.
pub fn kept_analysis(existing: &str) -> Option<String> {
    let start = existing.find(ANALYSIS_BEGIN)? + ANALYSIS_BEGIN.len();
    let end = existing[start..].find(ANALYSIS_END)? + start;
    Some(existing[start..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Results;

    #[test]
    fn the_written_analysis_survives_a_rewrite() {
        let results = Results::default();
        let first = results.markdown(Some("Pool size is the limit."));
        let kept = kept_analysis(&first);
        assert_eq!(
            kept.as_deref().map(str::trim),
            Some("Pool size is the limit.")
        );
        let second = results.markdown(kept.as_deref());
        assert!(second.contains("Pool size is the limit."));
    }
}
