//! The operator console of the exactly-once checkout, a Leptos client-side app
//! served under `/ops/`, built by Trunk into its own bundle (`dist/ops/`), so the
//! shopper's payment page keeps its size budget.
//!
//! - [`api`]: the one typed client of the backend's `/api/ops/*` API;
//! - [`route`]: which view a URL under `/ops/` shows;
//! - [`chart`]: the activity chart's geometry;
//! - [`format`]: timestamps and names written for people;
//! - [`pages`]: sign-in, the anomalies queue, order timelines and search, the
//!   last hour's activity, and reconciliation results.
//!
//! Everything but the sign-in form needs an operator session (the admin token
//! exchanged for the session cookie). Whenever the backend answers 401
//! `UNAUTHENTICATED` the console shows the sign-in form in place, and signing
//! in shows the view the URL asked for.

pub mod api;
pub mod chart;
pub mod format;
pub mod pages;
pub mod route;

use api::ApiError;
use leptos::prelude::*;
use leptos::task::spawn_local;
use route::{Route, Tab};

/// Where the operator's session stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    /// `GET /api/ops/me` has not answered yet.
    Checking,
    /// No operator session: the sign-in form shows.
    SignedOut,
    /// Signed in under this name.
    SignedIn(String),
    /// The backend could not say (network error, 5xx).
    Unknown(String),
}

/// The whole console: the sign-in form, or the frame around the view the URL asks for.
#[component]
pub fn App() -> impl IntoView {
    let path = web_sys::window()
        .and_then(|window| window.location().pathname().ok())
        .unwrap_or_default();
    let route = Route::from_path(&path);
    let tab = route.tab();
    let session = RwSignal::new(Session::Checking);
    provide_context(session);
    spawn_local(async move {
        session.set(match api::me().await {
            Ok(info) => Session::SignedIn(info.operator),
            Err(err) if err.is_unauthenticated() => Session::SignedOut,
            Err(err) => Session::Unknown(api::explain(&err)),
        });
    });
    view! {
        <header class="site-header">
            <a class="brand" href="/ops/">"Checkout operator console"</a>
            {move || match session.get() {
                Session::SignedIn(name) => {
                    view! {
                        <nav class="tabs" aria-label="Console">
                            {Tab::ALL
                                .into_iter()
                                .map(|each| {
                                    let current = tab == Some(each);
                                    view! {
                                        <a
                                            id=each.id()
                                            href=each.route().path()
                                            class:current=current
                                            aria-current=current.then_some("page")
                                        >
                                            {each.label()}
                                        </a>
                                    }
                                })
                                .collect_view()}
                        </nav>
                        <span class="operator" id="operator-name">
                            "Signed in as "
                            <strong>{name}</strong>
                        </span>
                        <SignOutButton />
                    }
                        .into_any()
                }
                _ => ().into_any(),
            }}
        </header>
        <main id="main">
            {move || match session.get() {
                Session::Checking => view! { <p class="muted">"Loading\u{2026}"</p> }.into_any(),
                Session::SignedOut => view! { <pages::signin::SignInPage /> }.into_any(),
                Session::Unknown(why) => {
                    view! {
                        <p class="notice error" role="alert">
                            "The console cannot reach the backend: "
                            {why}
                        </p>
                    }
                        .into_any()
                }
                Session::SignedIn(_) => pages::view_for(route.clone()),
            }}
        </main>
    }
}

/// `result`, after showing the sign-in form when it says the operator session
/// is gone. `session` is the app's (taken from the context when the view was
/// made: an async task has no reactive owner to look it up from).
pub fn or_sign_in<T>(
    session: RwSignal<Session>,
    result: Result<T, ApiError>,
) -> Result<T, ApiError> {
    if result.as_ref().is_err_and(ApiError::is_unauthenticated) {
        session.set(Session::SignedOut);
    }
    result
}

/// The header's "Sign out" button: ends the operator session, then shows the sign-in form.
#[component]
fn SignOutButton() -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
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
                _ => session.set(Session::SignedOut),
            }
        });
    };
    view! {
        <button
            id="signout"
            class="header-button"
            type="button"
            disabled=move || pending.get()
            on:click=sign_out
        >
            {move || if failed.get() { "Sign out failed: try again" } else { "Sign out" }}
        </button>
    }
}
