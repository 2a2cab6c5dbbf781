//! Any path the app does not know.

use leptos::prelude::*;

/// Says the page does not exist and links back to the shop.
#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="not-found-title">
            <h1 id="not-found-title">"Page not found"</h1>
            <p>"There is nothing at this address."</p>
            <p>
                <a href="/">"Back to the shop"</a>
            </p>
        </section>
    }
}
