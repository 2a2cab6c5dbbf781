//! The page frame: header (with a "sandbox" badge when the backend's payment
//! platform is the simulator, and "Sign out" on the pages that need a
//! session), main landmark, footer.

use super::SignOutButton;
use api_types::api::PlatformInfo;
use leptos::prelude::*;

/// Wraps a page in the site header and the `main` landmark.
#[component]
pub fn Frame(
    /// `GET /api/platform`, read once for the whole app.
    platform: ReadSignal<Option<PlatformInfo>>,
    /// Whether the page needs a session (it then offers "Sign out").
    signed_in: bool,
    /// The page itself.
    children: Children,
) -> impl IntoView {
    // Unknown until the backend answers, and when it cannot: no badge then,
    // because the badge only ever warns, it never reassures.
    let sandbox = move || platform.read().as_ref().is_some_and(|info| info.sandbox);
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
            {signed_in.then(|| view! { <SignOutButton /> })}
        </header>
        <main id="main" tabindex="-1">
            {children()}
        </main>
        <footer class="site-footer">
            <p>"Every payment is charged at most once, however often you press."</p>
        </footer>
    }
}
