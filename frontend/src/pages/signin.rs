//! `/signin`: the sign-in form.
//!
//! On success the backend sets the session cookie and the page goes to `next`
//! (already checked by [`crate::route::safe_next`]: a path on this site) or the
//! shop. In a sandbox demo (`GET /api/platform` lists demo shoppers) it shows
//! their public credentials, with a button per shopper that fills the form.

use crate::api::{self, ApiError};
use api_types::ErrorCode;
use api_types::api::{PlatformInfo, SignIn};
use leptos::html::Input;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The sign-in page.
#[component]
pub fn SignInPage(
    /// Where to go after signing in (a path on this site), the shop when `None`.
    next: Option<String>,
    /// `GET /api/platform`, for the demo shoppers.
    platform: ReadSignal<Option<PlatformInfo>>,
) -> impl IntoView {
    // Uncontrolled inputs: their values are read when the form is submitted.
    let email = NodeRef::<Input>::new();
    let password = NodeRef::<Input>::new();
    let pending = RwSignal::new(false);
    let problem = RwSignal::new(None::<(&'static str, String)>);
    let destination = next.unwrap_or_else(|| "/".to_owned());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        pending.set(true);
        problem.set(None);
        let value = |input: NodeRef<Input>| input.get_untracked().map(|el| el.value());
        let body = SignIn {
            email: value(email).unwrap_or_default().trim().to_owned(),
            password: value(password).unwrap_or_default(),
        };
        let destination = destination.clone();
        spawn_local(async move {
            match api::sign_in(&body).await {
                Ok(()) => {
                    // `replace`: "Back" from the page signed into does not show the form again.
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().replace(&destination);
                    }
                }
                Err(err) => {
                    problem.set(Some(sign_in_problem(&err)));
                    pending.set(false);
                }
            }
        });
    };
    let demo_shoppers = move || {
        platform
            .read()
            .as_ref()
            .map(|info| info.demo_shoppers.clone())
            .unwrap_or_default()
    };

    view! {
        <section class="card" aria-labelledby="signin-title">
            <h1 id="signin-title">"Sign in"</h1>
            <form id="signin-form" class="form" on:submit=submit>
                <label for="signin-email">"Email"</label>
                <input
                    id="signin-email"
                    name="email"
                    type="email"
                    autocomplete="username"
                    required
                    node_ref=email
                />
                <label for="signin-password">"Password"</label>
                <input
                    id="signin-password"
                    name="password"
                    type="password"
                    autocomplete="current-password"
                    required
                    node_ref=password
                />
                <div
                    id="message"
                    data-testid="message"
                    class=move || {
                        if problem.read().is_some() {
                            "notice notice-problem"
                        } else {
                            "notice notice-empty"
                        }
                    }
                    role="status"
                    aria-live="polite"
                    aria-atomic="true"
                    data-notice=move || problem.read().as_ref().map(|(code, _)| *code)
                >
                    {move || problem.read().as_ref().map(|(_, text)| text.clone())}
                </div>
                <div class="actions">
                    <button
                        id="signin-submit"
                        data-testid="signin-submit"
                        class="button button-primary"
                        type="submit"
                        disabled=move || pending.get()
                        aria-busy=move || pending.get().to_string()
                    >
                        {move || if pending.get() { "Signing in\u{2026}" } else { "Sign in" }}
                    </button>
                </div>
            </form>
            {move || {
                let shoppers = demo_shoppers();
                (!shoppers.is_empty())
                    .then(|| {
                        view! {
                            <section
                                id="demo-shoppers"
                                class="demo-shoppers"
                                aria-labelledby="demo-shoppers-title"
                            >
                                <h2 id="demo-shoppers-title">"Demo shoppers"</h2>
                                <p>
                                    "This is the sandbox: no money moves. Sign in as one of these demo shoppers:"
                                </p>
                                <ul class="orders">
                                    {shoppers
                                        .into_iter()
                                        .enumerate()
                                        .map(|(index, shopper)| {
                                            let id = format!("demo-shopper-{}", index + 1);
                                            let label = format!("Use {}", shopper.email);
                                            let fill = {
                                                let shopper = shopper.clone();
                                                move |_| {
                                                    for (input, text) in [
                                                        (email, &shopper.email),
                                                        (password, &shopper.password),
                                                    ] {
                                                        if let Some(el) = input.get_untracked() {
                                                            el.set_value(text);
                                                        }
                                                    }
                                                }
                                            };
                                            view! {
                                                <li class="order">
                                                    <span class="credentials">
                                                        <code>{shopper.email}</code>
                                                        " / "
                                                        <code>{shopper.password}</code>
                                                    </span>
                                                    <button
                                                        id=id
                                                        class="button button-secondary"
                                                        type="button"
                                                        on:click=fill
                                                    >
                                                        {label}
                                                    </button>
                                                </li>
                                            }
                                        })
                                        .collect_view()}
                                </ul>
                            </section>
                        }
                    })
            }}
        </section>
    }
}

/// What the form says when signing in failed: a stable code (`data-notice`)
/// and the sentence shown.
pub fn sign_in_problem(err: &ApiError) -> (&'static str, String) {
    match (err.code(), err) {
        (Some(ErrorCode::InvalidCredentials), _) => (
            "invalid-credentials",
            "The email or the password is wrong.".to_owned(),
        ),
        (
            Some(ErrorCode::RateLimited),
            ApiError::Server {
                retry_after_secs: Some(secs),
                ..
            },
        ) => (
            "rate-limited",
            format!(
                "Too many sign-in attempts. Please try again in {secs} {}.",
                if *secs == 1 { "second" } else { "seconds" }
            ),
        ),
        (Some(ErrorCode::RateLimited), _) => (
            "rate-limited",
            "Too many sign-in attempts. Please try again in a moment.".to_owned(),
        ),
        _ if err.is_unavailable() => (
            "unavailable",
            "Signing in is not possible right now. Please try again in a few seconds.".to_owned(),
        ),
        _ if err.is_transport_failure() => (
            "offline",
            "We could not reach the server. Check your connection and try again.".to_owned(),
        ),
        _ => (
            "unexpected",
            "Signing in did not work. Please try again.".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::ErrorBody;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn server(status: u16, code: ErrorCode, retry_after_secs: Option<u32>) -> ApiError {
        ApiError::Server {
            status,
            body: ErrorBody::new(code, "x"),
            retry_after_secs,
        }
    }

    #[test]
    fn wrong_credentials_are_said_without_telling_which() {
        let (code, text) = sign_in_problem(&server(401, ErrorCode::InvalidCredentials, None));
        assert_eq!(code, "invalid-credentials");
        assert_eq!(text, "The email or the password is wrong.");
    }

    #[test]
    fn a_rate_limit_says_how_long_to_wait() {
        let (code, text) = sign_in_problem(&server(429, ErrorCode::RateLimited, Some(30)));
        assert_eq!(code, "rate-limited");
        assert_eq!(
            text,
            "Too many sign-in attempts. Please try again in 30 seconds."
        );
        let (_, one) = sign_in_problem(&server(429, ErrorCode::RateLimited, Some(1)));
        assert!(one.ends_with("in 1 second."), "{one}");
        let (_, unknown) = sign_in_problem(&server(429, ErrorCode::RateLimited, None));
        assert!(unknown.ends_with("in a moment."), "{unknown}");
    }

    #[test]
    fn other_failures_say_whether_the_server_was_reached() {
        assert_eq!(
            sign_in_problem(&ApiError::Network("offline".into())).0,
            "offline"
        );
        assert_eq!(
            sign_in_problem(&server(500, ErrorCode::Internal, None)).0,
            "unexpected"
        );
    }

    #[test]
    fn a_busy_or_unavailable_backend_says_to_try_again_shortly() {
        let (code, text) = sign_in_problem(&server(503, ErrorCode::ServiceUnavailable, Some(1)));
        assert_eq!(code, "unavailable");
        assert!(text.contains("try again in a few seconds"), "{text}");
    }
}
