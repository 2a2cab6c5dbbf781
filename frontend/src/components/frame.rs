//! The page frame: header (with a "sandbox" badge when the backend's payment
//! platform is the simulator), main landmark, footer.

use crate::api;
use leptos::prelude::*;

/// Wraps a page in the site header and the `main` landmark.
#[component]
pub fn Frame(
    /// The page itself.
    children: Children,
) -> impl IntoView {
    // Unknown until the backend answers, and when it cannot: no badge then,
    // because the badge only ever warns, it never reassures.
    let platform = LocalResource::new(api::platform);
    let sandbox = move || {
        platform
            .get()
            .and_then(Result::ok)
            .is_some_and(|info| info.sandbox)
    };
    view! {
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="site-header">
            <a class="brand" href="/">"Checkout demo"</a>
            <Show when=sandbox>
                <span
                    id="sandbox-badge"
                    class="sandbox-badge"
                    title="Payments go to the sandbox platform: nothing is really charged."
                >
                    "Sandbox"
                </span>
            </Show>
        </header>
        <main id="main" tabindex="-1">
            {children()}
        </main>
        <footer class="site-footer">
            <p>"Every payment is charged at most once, however often you press."</p>
        </footer>
    }
}
