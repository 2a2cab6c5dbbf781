//! An order status as a coloured badge.

use api_types::OrderStatus;
use leptos::prelude::*;

/// Shows `PENDING`, `PAID`, `FAILED`, `CLOSED` or `REFUNDED`, colour-coded; the text carries the
/// meaning, the colour only repeats it. `data-status` holds the wire spelling
/// for tests.
#[component]
pub fn StatusBadge(
    /// The status to show.
    status: OrderStatus,
    /// An element id, for the one badge a test looks for.
    #[prop(optional)]
    id: Option<&'static str>,
) -> impl IntoView {
    let class = match status {
        OrderStatus::Pending => "badge badge-pending",
        OrderStatus::Paid | OrderStatus::Refunded => "badge badge-paid",
        OrderStatus::Failed | OrderStatus::Closed => "badge badge-failed",
    };
    view! {
        <span
            id=id
            data-testid=id
            class=class
            data-status=status.as_str()
        >
            {status.as_str()}
        </span>
    }
}
