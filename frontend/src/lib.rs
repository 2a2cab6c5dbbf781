//! The payment page of the exactly-once checkout, a Leptos client-side app.
//!
//! - [`api`]: the one typed client of the backend's HTTP API;
//! - [`flow`]: the pay flow's state machine (what to show, when to retry),
//!   pure Rust, tested natively and in the browser;
//! - [`purchase`]: which `Idempotency-Key` a press of "Buy" sends;
//! - [`format`]: timestamps written for people;
//! - [`route`]: which page a URL shows, and which `next` the sign-in page trusts;
//! - [`pages`]: sign-in (`/signin`), the shop (`/`) and the payment page (`/pay/{order_no}`);
//! - [`components`]: small pieces the pages use.
//!
//! The shop and the payment page need a session. Whenever the backend answers
//! 401 `UNAUTHENTICATED` they leave for `/signin?next=<this page>` ([`sign_in_again`]),
//! and signing in brings the shopper back.

pub mod api;
pub mod components;
pub mod flow;
pub mod format;
pub mod pages;
pub mod purchase;
pub mod route;

use api::ApiError;
use leptos::prelude::*;
use route::Route;

/// The whole app: the page frame around the page the URL asks for.
#[component]
pub fn App() -> impl IntoView {
    let location = web_sys::window().map(|window| window.location());
    let path = location
        .as_ref()
        .and_then(|l| l.pathname().ok())
        .unwrap_or_default();
    let search = location
        .as_ref()
        .and_then(|l| l.search().ok())
        .unwrap_or_default();
    // Read once, by the frame (sandbox badge), the sign-in page (demo shoppers)
    // and the payment page (QR code platforms, payment methods): None until it
    // answers, and when it cannot. A signal written once, not a `LocalResource`
    // (see the shop's).
    let platform = RwSignal::new(None);
    leptos::task::spawn_local(async move {
        platform.set(api::platform().await.ok());
    });
    let platform = platform.read_only();
    let route = Route::from_location(&path, &search);
    let signed_in = matches!(route, Route::Shop | Route::Pay { .. });
    let page = match route {
        Route::Shop => view! { <pages::shop::ShopPage /> }.into_any(),
        Route::SignIn { next } => {
            view! { <pages::signin::SignInPage next=next platform=platform /> }.into_any()
        }
        Route::Pay { order_no } => {
            view! { <pages::pay::PayPage order_no=order_no platform=platform /> }.into_any()
        }
        Route::NotFound => view! { <pages::not_found::NotFound /> }.into_any(),
    };
    view! { <components::Frame platform=platform signed_in=signed_in>{page}</components::Frame> }
}

/// Leaves this page for another one of the app (a full page load).
pub fn go_to(route: &Route) {
    go_to_path(&route.path());
}

/// Leaves this page for `path` on this site (a full page load).
pub fn go_to_path(path: &str) {
    if let Some(window) = web_sys::window() {
        // Failing to navigate leaves the shopper on the current page, which still works.
        let _ = window.location().assign(path);
    }
}

/// Leaves for the sign-in page, which brings the shopper back to this page.
///
/// `replace`, not `assign`: the page that found itself signed out is not kept
/// in the history, so "Back" from the sign-in page does not bounce off it.
pub fn sign_in_again() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let location = window.location();
    let here = location.pathname().unwrap_or_default();
    let _ = location.replace(&Route::sign_in_returning_to(&here).path());
}

/// `result`, after leaving for the sign-in page when it says the session is gone.
pub fn or_sign_in<T>(result: Result<T, ApiError>) -> Result<T, ApiError> {
    if result.as_ref().is_err_and(ApiError::is_unauthenticated) {
        sign_in_again();
    }
    result
}

#[cfg(all(test, target_arch = "wasm32"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
