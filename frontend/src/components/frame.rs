//! The page frame: header, main landmark, footer.

use leptos::prelude::*;

/// Wraps a page in the site header and the `main` landmark.
#[component]
pub fn Frame(
    /// The page itself.
    children: Children,
) -> impl IntoView {
    view! {
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="site-header">
            <a class="brand" href="/">"Checkout demo"</a>
        </header>
        <main id="main" tabindex="-1">
            {children()}
        </main>
        <footer class="site-footer">
            <p>"Every payment is charged at most once, however often you press."</p>
        </footer>
    }
}
