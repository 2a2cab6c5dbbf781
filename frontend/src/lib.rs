//! The payment page of the exactly-once checkout, a Leptos client-side app.
//!
//! - [`api`]: the one typed client of the backend's HTTP API;
//! - [`flow`]: the pay flow's state machine (what to show, when to retry),
//!   pure Rust, tested natively and in the browser;
//! - [`format`]: timestamps written for people;
//! - [`route`]: which page a path shows;
//! - [`pages`]: the demo shop (`/`) and the payment page (`/pay/{order_no}`);
//! - [`components`]: small pieces both pages use.

pub mod api;
pub mod components;
pub mod flow;
pub mod format;
pub mod pages;
pub mod route;

use leptos::prelude::*;
use route::Route;

/// The whole app: the page frame around the page the URL asks for.
#[component]
pub fn App() -> impl IntoView {
    let path = web_sys::window()
        .and_then(|window| window.location().pathname().ok())
        .unwrap_or_default();
    let page = match Route::from_path(&path) {
        Route::Shop => view! { <pages::shop::ShopPage /> }.into_any(),
        Route::Pay { order_no } => view! { <pages::pay::PayPage order_no=order_no /> }.into_any(),
        Route::NotFound => view! { <pages::not_found::NotFound /> }.into_any(),
    };
    view! { <components::Frame>{page}</components::Frame> }
}

/// Leaves this page for another one of the app (a full page load).
pub fn go_to(route: &Route) {
    if let Some(window) = web_sys::window() {
        // Failing to navigate leaves the shopper on the current page, which still works.
        let _ = window.location().assign(&route.path());
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
