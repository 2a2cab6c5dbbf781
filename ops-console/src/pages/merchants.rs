//! The merchants: who sells through the checkout, where their shoppers may be
//! sent back to, and their API keys by prefix (never a key), with when each
//! was made, ends, was revoked and was last used.

use super::{Loading, Problem};
use crate::format::timestamp;
use crate::{Session, api, or_sign_in};
use api_types::merchant::{Merchant, MerchantKey};
use leptos::prelude::*;

/// Every merchant, oldest first.
#[component]
pub fn MerchantsPage() -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let merchants =
        LocalResource::new(move || async move { or_sign_in(session, api::merchants().await) });
    view! {
        <section class="card" aria-labelledby="merchants-title">
            <h1 id="merchants-title">"Merchants"</h1>
            <p class="muted">
                "Made with POST /api/admin/merchants; keys rotated with POST /api/admin/merchants/{id}/keys and revoked with DELETE /api/admin/merchants/{id}/keys/{prefix}. A key is shown once, when it is made: here only its prefix."
            </p>
            {move || match merchants.get() {
                None => view! { <Loading /> }.into_any(),
                Some(Err(err)) => view! { <Problem what="Loading the merchants failed" err=err /> }.into_any(),
                Some(Ok(list)) => list.into_iter().map(|merchant| view! { <MerchantCard merchant=merchant /> }).collect_view().into_any(),
            }}
        </section>
    }
}

/// One merchant and its keys.
#[component]
fn MerchantCard(merchant: Merchant) -> impl IntoView {
    let origins = if merchant.return_origins.is_empty() {
        "none".to_owned()
    } else {
        merchant.return_origins.join(", ")
    };
    view! {
        <article class="merchant" data-merchant=merchant.merchant_id.to_string()>
            <h2>{merchant.name.clone()}</h2>
            <dl class="facts">
                <dt>"Id"</dt>
                <dd><code>{merchant.merchant_id.to_string()}</code></dd>
                <dt>"Return origins"</dt>
                <dd>{origins}</dd>
                <dt>"Since"</dt>
                <dd>{timestamp(merchant.created_at)}</dd>
            </dl>
            <table class="table keys">
                <thead>
                    <tr>
                        <th scope="col">"Key"</th>
                        <th scope="col">"State"</th>
                        <th scope="col">"Made"</th>
                        <th scope="col">"Ends"</th>
                        <th scope="col">"Last used"</th>
                    </tr>
                </thead>
                <tbody>
                    {merchant.keys.into_iter().map(|key| view! { <KeyLine key=key /> }).collect_view()}
                </tbody>
            </table>
        </article>
    }
}

/// One key, by its prefix.
#[component]
fn KeyLine(key: MerchantKey) -> impl IntoView {
    let state = if key.revoked_at.is_some() {
        "revoked"
    } else if key.active {
        "active"
    } else {
        "expired"
    };
    let when =
        |at: Option<time::OffsetDateTime>| at.map_or_else(|| "\u{2014}".to_owned(), timestamp);
    view! {
        <tr data-prefix=key.prefix.clone() data-state=state class:attention=!key.active>
            <td><code>{key.prefix.clone()}</code>{(key.source == "env").then_some(" (MERCHANT_API_KEY)")}</td>
            <td>{state}</td>
            <td>{timestamp(key.created_at)}</td>
            <td>{when(key.revoked_at.or(key.expires_at))}</td>
            <td>{when(key.last_used_at)}</td>
        </tr>
    }
}

/// A merchant filter for the queue and the search: "Every merchant" or one.
#[component]
pub fn MerchantFilter(
    /// The element id of the select.
    id: &'static str,
    /// The merchant chosen; `None` for every merchant.
    chosen: RwSignal<Option<uuid::Uuid>>,
) -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let merchants =
        LocalResource::new(move || async move { or_sign_in(session, api::merchants().await) });
    view! {
        <label>
            "Merchant "
            <select id=id on:change=move |ev| chosen.set(event_target_value(&ev).parse().ok())>
                <option value="" selected>"Every merchant"</option>
                {move || {
                    merchants
                        .get()
                        .and_then(Result::ok)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|m| view! { <option value=m.merchant_id.to_string()>{m.name}</option> })
                        .collect_view()
                }}
            </select>
        </label>
    }
}
