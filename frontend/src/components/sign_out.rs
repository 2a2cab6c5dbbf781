//! The header's "Sign out" button, on the pages that need a session.

use crate::api;
use crate::route::Route;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Ends the session (`DELETE /api/session`), then opens the sign-in page.
/// A session that was already gone counts as signed out. A plain page load
/// (`assign`), so "Back" returns to the old page, which can no longer pay:
/// its next request is refused with 401 and it leaves for the sign-in page.
#[component]
pub fn SignOutButton() -> impl IntoView {
    let pending = RwSignal::new(false);
    let failed = RwSignal::new(false);
    let sign_out = move |_| {
        if pending.get_untracked() {
            return;
        }
        pending.set(true);
        spawn_local(async move {
            match api::sign_out().await {
                Err(err) if !err.is_unauthenticated() => {
                    failed.set(true);
                    pending.set(false);
                }
                // Signed out now, or already.
                _ => crate::go_to(&Route::SignIn { next: None }),
            }
        });
    };
    view! {
        <button
            id="signout"
            data-testid="signout"
            class="header-button"
            type="button"
            disabled=move || pending.get()
            aria-busy=move || pending.get().to_string()
            on:click=sign_out
        >
            {move || {
                if pending.get() {
                    "Signing out\u{2026}"
                } else if failed.get() {
                    "Sign out failed: try again"
                } else {
                    "Sign out"
                }
            }}
        </button>
    }
}
