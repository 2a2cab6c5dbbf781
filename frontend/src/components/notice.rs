//! The live region that says what is going on.

use crate::flow::Notice;
use leptos::prelude::*;

/// Always present (so screen readers announce changes), empty when there is
/// nothing to say. Problems are styled as errors, the rest as information.
#[component]
pub fn NoticeBox(
    /// What to say, if anything; read reactively.
    notice: impl Fn() -> Option<Notice> + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let class = move || match notice() {
        Some(n) if n.is_problem() => "notice notice-problem",
        Some(_) => "notice notice-info",
        None => "notice notice-empty",
    };
    view! {
        <div
            id="message"
            data-testid="message"
            class=class
            role="status"
            aria-live="polite"
            aria-atomic="true"
            data-notice=move || notice().map(Notice::code)
        >
            {move || notice().map(Notice::text)}
        </div>
    }
}
