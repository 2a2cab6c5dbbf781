//! A day's reconciliation of the platform's bill against our ledger: how many
//! rows fell into each class, and every row that did not match.

use super::{Loading, Problem};
use crate::format::{pretty_json, timestamp, today_utc, words};
use crate::route::Route;
use crate::{Session, api, or_sign_in};
use api_types::ReconClass;
use api_types::api::Reconciliation;
use leptos::prelude::*;

/// The date picker and that date's results.
#[component]
pub fn ReconciliationPage() -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let date = RwSignal::new(today_utc());
    let result = LocalResource::new(move || {
        let date = date.get();
        async move { or_sign_in(session, api::reconciliation(&date).await) }
    });
    view! {
        <section class="card" aria-labelledby="recon-title">
            <h1 id="recon-title">"Reconciliation"</h1>
            <div class="filters">
                <label>
                    "Bill date (UTC) "
                    <input
                        id="recon-date"
                        type="date"
                        prop:value=move || date.get()
                        on:change=move |ev| {
                            let value = event_target_value(&ev);
                            if !value.is_empty() {
                                date.set(value);
                            }
                        }
                    />
                </label>
            </div>
            {move || match result.get() {
                None => view! { <Loading /> }.into_any(),
                Some(Err(err)) => view! { <Problem what="Loading the reconciliation failed" err=err /> }.into_any(),
                Some(Ok(recon)) => view! { <Results recon=recon /> }.into_any(),
            }}
        </section>
    }
}

/// Counts per class, then the rows that did not match.
#[component]
fn Results(recon: Reconciliation) -> impl IntoView {
    let Some(at) = recon.reconciled_at else {
        return view! {
            <p id="recon-none" class="muted">{format!("{} has not been reconciled yet.", recon.date)}</p>
        }
        .into_any();
    };
    let mismatches: Vec<_> = recon
        .items
        .into_iter()
        .filter(|item| item.class != ReconClass::Matched)
        .collect();
    view! {
        <p id="recon-summary">
            {format!(
                "{}: reconciled at {}, {} bill rows.",
                recon.date,
                timestamp(at),
                recon.bill_rows.unwrap_or_default(),
            )}
        </p>
        <table class="table counts" id="recon-counts">
            <thead>
                <tr>
                    <th scope="col">"Class"</th>
                    <th scope="col" class="num">"Rows"</th>
                </tr>
            </thead>
            <tbody>
                {recon
                    .counts
                    .into_iter()
                    .map(|count| {
                        view! {
                            <tr data-class=count.class.as_str() class:attention=(count.class != ReconClass::Matched && count.count > 0)>
                                <td>{words(count.class.as_str())}</td>
                                <td class="num">{count.count.to_string()}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        <h2>{format!("Rows that did not match ({})", mismatches.len())}</h2>
        {if mismatches.is_empty() {
            view! { <p class="muted">"Every row matched."</p> }.into_any()
        } else {
            view! {
                <table class="table" id="recon-items">
                    <thead>
                        <tr>
                            <th scope="col">"Row"</th>
                            <th scope="col">"Class"</th>
                            <th scope="col">"Order"</th>
                            <th scope="col">"The bill says"</th>
                            <th scope="col">"We hold"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {mismatches
                            .into_iter()
                            .map(|item| {
                                let show = |value: &Option<serde_json::Value>| match value {
                                    Some(value) => pretty_json(value),
                                    None => "nothing".to_owned(),
                                };
                                view! {
                                    <tr data-class=item.class.as_str()>
                                        <td><code>{item.row_key.clone()}</code></td>
                                        <td>{words(item.class.as_str())}</td>
                                        <td>
                                            <a href=Route::Orders { order_no: Some(item.order_no.clone()) }.path()>
                                                {item.order_no.clone()}
                                            </a>
                                        </td>
                                        <td><pre class="json">{show(&item.bill)}</pre></td>
                                        <td><pre class="json">{show(&item.ledger)}</pre></td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            }
            .into_any()
        }}
    }
    .into_any()
}
