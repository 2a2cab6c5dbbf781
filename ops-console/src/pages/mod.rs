//! The console's views, one file each, and the small pieces they share.

pub mod activity;
pub mod anomalies;
pub mod books;
pub mod merchants;
pub mod orders;
pub mod reconciliation;
pub mod signin;

use crate::api::{self, ApiError};
use crate::route::Route;
use leptos::prelude::*;

/// The view a route shows (signed in).
pub fn view_for(route: Route) -> AnyView {
    match route {
        Route::Anomalies { open } => view! { <anomalies::AnomaliesPage open=open /> }.into_any(),
        Route::Orders { order_no } => view! { <orders::OrdersPage order_no=order_no /> }.into_any(),
        Route::Activity => view! { <activity::ActivityPage /> }.into_any(),
        Route::Reconciliation => view! { <reconciliation::ReconciliationPage /> }.into_any(),
        Route::Books => view! { <books::BooksPage /> }.into_any(),
        Route::Merchants => view! { <merchants::MerchantsPage /> }.into_any(),
        Route::NotFound => view! {
            <section class="card">
                <h1>"No such view"</h1>
                <p>
                    "This address is not a view of the console. "
                    <a href="/ops/anomalies">"Open the anomalies queue"</a>
                </p>
            </section>
        }
        .into_any(),
    }
}

/// An error line under a view: what failed, in the server's words.
#[component]
pub fn Problem(
    /// What was being done, e.g. "Loading the queue failed".
    what: &'static str,
    /// The error.
    err: ApiError,
) -> impl IntoView {
    view! {
        <p class="notice error" role="alert" data-code=err.code().map(|c| c.as_str())>
            {what}
            ": "
            {api::explain(&err)}
        </p>
    }
}

/// "Loading…" while a resource has not answered.
#[component]
pub fn Loading() -> impl IntoView {
    view! { <p class="muted">"Loading\u{2026}"</p> }
}
