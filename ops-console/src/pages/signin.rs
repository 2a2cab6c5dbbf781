//! The operator sign-in form: the backend's admin token and the operator's
//! name, exchanged for a session cookie (`POST /api/ops/session`).
//!
//! The token is read from the password field once, sent in the request body,
//! and dropped: never put in a URL, a log line or browser storage. The session
//! cookie is the credential from then on.

use crate::Session;
use crate::api::{self, ApiError};
use api_types::ErrorCode;
use api_types::ops::OperatorSignIn;
use leptos::html::Input;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The sign-in form; on success the app shows the view the URL asked for.
#[component]
pub fn SignInPage() -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    // Uncontrolled inputs: their values are read when the form is submitted.
    let token = NodeRef::<Input>::new();
    let name = NodeRef::<Input>::new();
    let pending = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        pending.set(true);
        problem.set(None);
        let value = |input: NodeRef<Input>| input.get_untracked().map(|el| el.value());
        let body = OperatorSignIn {
            admin_token: value(token).unwrap_or_default(),
            name: value(name).unwrap_or_default().trim().to_owned(),
        };
        spawn_local(async move {
            match api::sign_in(&body).await {
                Ok(info) => session.set(Session::SignedIn(info.operator)),
                Err(err) => {
                    problem.set(Some(sign_in_problem(&err)));
                    pending.set(false);
                }
            }
        });
    };
    view! {
        <section class="card narrow" aria-labelledby="signin-title">
            <h1 id="signin-title">"Operator sign-in"</h1>
            <p class="muted">
                "Sign in with the backend's admin token. Your name is kept with every anomaly you resolve."
            </p>
            <form id="ops-signin-form" class="form" on:submit=submit>
                <label for="ops-name">"Your name"</label>
                <input
                    id="ops-name"
                    name="name"
                    type="text"
                    autocomplete="name"
                    maxlength="64"
                    required
                    node_ref=name
                />
                <label for="ops-token">"Admin token"</label>
                <input
                    id="ops-token"
                    name="admin_token"
                    type="password"
                    autocomplete="current-password"
                    required
                    node_ref=token
                />
                <button id="ops-signin-button" class="primary" type="submit" disabled=move || pending.get()>
                    {move || if pending.get() { "Signing in\u{2026}" } else { "Sign in" }}
                </button>
            </form>
            {move || {
                problem
                    .get()
                    .map(|text| {
                        view! {
                            <p id="ops-signin-error" class="notice error" role="alert">
                                {text}
                            </p>
                        }
                    })
            }}
        </section>
    }
}

/// What the form says when signing in fails.
pub fn sign_in_problem(err: &ApiError) -> String {
    match err.code() {
        Some(ErrorCode::InvalidCredentials) => {
            "That admin token is not the backend's. Check it and try again.".to_owned()
        }
        Some(ErrorCode::RateLimited) => {
            "Too many sign-in attempts. Wait a minute, then try again.".to_owned()
        }
        Some(ErrorCode::NotFound) => {
            "This backend has no ADMIN_TOKEN set, so it has no operator console.".to_owned()
        }
        _ => api::explain(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_token_and_too_many_tries_read_plainly() {
        let wrong = web_client::error_from_answer(
            401,
            r#"{"error":{"code":"INVALID_CREDENTIALS","message":"no"}}"#,
            None,
        );
        assert!(sign_in_problem(&wrong).contains("not the backend's"));
        let limited = web_client::error_from_answer(
            429,
            r#"{"error":{"code":"RATE_LIMITED","message":"slow"}}"#,
            None,
        );
        assert!(sign_in_problem(&limited).contains("Too many"));
        let bad_name = web_client::error_from_answer(
            400,
            r#"{"error":{"code":"BAD_REQUEST","message":"name: 1 to 64 characters"}}"#,
            None,
        );
        assert!(sign_in_problem(&bad_name).contains("name: 1 to 64 characters"));
        let no_console = web_client::error_from_answer(
            404,
            r#"{"error":{"code":"NOT_FOUND","message":"no"}}"#,
            None,
        );
        assert!(sign_in_problem(&no_console).contains("no ADMIN_TOKEN"));
    }
}
