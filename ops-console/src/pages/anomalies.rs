//! The anomalies queue: filter by state, kind and merchant, open one, read its facts,
//! resolve it with a note. A resolution keeps who and when; nothing is deleted,
//! so a resolved anomaly stays readable under "Resolved" and "All".

use super::merchants::MerchantFilter;
use super::{Loading, Problem};
use crate::format::{pretty_json, timestamp, words};
use crate::route::Route;
use crate::{Session, api, or_sign_in};
use api_types::AnomalyKind;
use api_types::ops::{AnomalyState, ReviewAnomaly};
use leptos::html::Textarea;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The queue, with the anomaly `open` opened beside it.
#[component]
pub fn AnomaliesPage(open: Option<i64>) -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let state = RwSignal::new(AnomalyState::Open);
    let kind = RwSignal::new(None::<AnomalyKind>);
    let merchant = RwSignal::new(None::<uuid::Uuid>);
    let selected = RwSignal::new(open);
    // Bumped after a resolution: the list and the opened anomaly are read again.
    let version = RwSignal::new(0_u32);
    let list = LocalResource::new(move || {
        let (state, kind, merchant) = (state.get(), kind.get(), merchant.get());
        version.track();
        async move { or_sign_in(session, api::anomalies(state, kind, merchant).await) }
    });
    let detail = LocalResource::new(move || {
        let id = selected.get();
        version.track();
        async move {
            match id {
                Some(id) => Some(or_sign_in(session, api::anomaly(id).await)),
                None => None,
            }
        }
    });

    let on_state = move |ev| {
        state.set(match event_target_value(&ev).as_str() {
            "resolved" => AnomalyState::Resolved,
            "all" => AnomalyState::All,
            _ => AnomalyState::Open,
        });
    };
    let on_kind = move |ev| kind.set(event_target_value(&ev).parse().ok());

    view! {
        <div class="split">
            <section class="card" aria-labelledby="queue-title">
                <h1 id="queue-title">"Anomalies"</h1>
                <div class="filters">
                    <label>
                        "State "
                        <select id="filter-state" on:change=on_state>
                            <option value="open" selected>"Open"</option>
                            <option value="resolved">"Resolved"</option>
                            <option value="all">"All"</option>
                        </select>
                    </label>
                    <label>
                        "Kind "
                        <select id="filter-kind" on:change=on_kind>
                            <option value="" selected>"Every kind"</option>
                            {AnomalyKind::ALL
                                .iter()
                                .map(|kind| {
                                    view! { <option value=kind.as_str()>{words(kind.as_str())}</option> }
                                })
                                .collect_view()}
                        </select>
                    </label>
                    <MerchantFilter id="filter-merchant" chosen=merchant />
                    <button type="button" class="secondary" on:click=move |_| version.update(|v| *v += 1)>
                        "Refresh"
                    </button>
                </div>
                {move || match list.get() {
                    None => view! { <Loading /> }.into_any(),
                    Some(Err(err)) => view! { <Problem what="Loading the queue failed" err=err /> }.into_any(),
                    Some(Ok(rows)) if rows.is_empty() => {
                        view! { <p id="queue-empty" class="muted">"Nothing here: no anomaly matches these filters."</p> }
                            .into_any()
                    }
                    Some(Ok(rows)) => view! { <QueueTable rows=rows selected=selected /> }.into_any(),
                }}
            </section>
            <section class="card" id="anomaly-detail" aria-label="The anomaly opened">
                {move || match detail.get() {
                    None => view! { <Loading /> }.into_any(),
                    Some(None) => {
                        view! { <p class="muted">"Open an anomaly from the queue to see its facts and resolve it."</p> }
                            .into_any()
                    }
                    Some(Some(Err(err))) => view! { <Problem what="Loading the anomaly failed" err=err /> }.into_any(),
                    // Another anomaly was opened and is still loading: the one
                    // shown before must not stay on screen (with its resolve
                    // form) under the new selection.
                    Some(Some(Ok(anomaly))) if selected.get() != Some(anomaly.anomaly_id) => {
                        view! { <Loading /> }.into_any()
                    }
                    Some(Some(Ok(anomaly))) => {
                        view! { <AnomalyDetail anomaly=anomaly version=version /> }.into_any()
                    }
                }}
            </section>
        </div>
    }
}

/// The queue's rows, newest first.
#[component]
fn QueueTable(rows: Vec<ReviewAnomaly>, selected: RwSignal<Option<i64>>) -> impl IntoView {
    view! {
        <p class="muted" id="queue-count">{format!("{} shown, newest first", rows.len())}</p>
        <table class="table" id="queue">
            <thead>
                <tr>
                    <th scope="col">"#"</th>
                    <th scope="col">"Raised"</th>
                    <th scope="col">"Kind"</th>
                    <th scope="col">"Order"</th>
                    <th scope="col">"State"</th>
                </tr>
            </thead>
            <tbody>
                {rows
                    .into_iter()
                    .map(|row| {
                        let id = row.anomaly_id;
                        let state = match &row.resolved_by {
                            Some(by) => format!("Resolved by {by}"),
                            None => "Open".to_owned(),
                        };
                        view! {
                            <tr
                                class="anomaly-row"
                                class:selected=move || selected.get() == Some(id)
                                data-anomaly-id=id.to_string()
                                data-kind=row.kind.as_str()
                                data-resolved=row.resolved_at.is_some().to_string()
                            >
                                <td>
                                    <button
                                        type="button"
                                        class="link open-anomaly"
                                        id=format!("open-anomaly-{id}")
                                        on:click=move |_| selected.set(Some(id))
                                    >
                                        {format!("#{id}")}
                                    </button>
                                </td>
                                <td class="nowrap">{timestamp(row.created_at)}</td>
                                <td>
                                    <span class="kind">{words(row.kind.as_str())}</span>
                                </td>
                                <td>
                                    <a href=Route::Orders { order_no: Some(row.order_no.clone()) }.path()>
                                        {row.order_no.clone()}
                                    </a>
                                </td>
                                <td>{state}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// One anomaly: its facts, and either its resolution or the form to resolve it.
#[component]
fn AnomalyDetail(anomaly: ReviewAnomaly, version: RwSignal<u32>) -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let note = NodeRef::<Textarea>::new();
    let pending = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let id = anomaly.anomaly_id;
    let resolve = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        let text = note
            .get_untracked()
            .map(|el| el.value())
            .unwrap_or_default()
            .trim()
            .to_owned();
        if text.is_empty() {
            problem.set(Some(
                "Write what you found and did before resolving.".to_owned(),
            ));
            return;
        }
        pending.set(true);
        problem.set(None);
        spawn_local(async move {
            match or_sign_in(session, api::resolve(id, &text).await) {
                Ok(_) => version.update(|v| *v += 1),
                Err(err) => {
                    problem.set(Some(api::explain(&err)));
                    pending.set(false);
                    // Someone else resolved it meanwhile: show their resolution.
                    if err.code() == Some(api_types::ErrorCode::AnomalyAlreadyResolved) {
                        version.update(|v| *v += 1);
                    }
                }
            }
        });
    };
    let order_link = Route::Orders {
        order_no: Some(anomaly.order_no.clone()),
    }
    .path();
    let resolution = match (&anomaly.resolved_at, &anomaly.resolved_by) {
        (Some(at), by) => view! {
            <div id="resolution" class="resolution">
                <h2>"Resolved"</h2>
                <p>
                    "By "
                    <strong id="resolved-by">{by.clone().unwrap_or_default()}</strong>
                    " at "
                    <span id="resolved-at">{timestamp(*at)}</span>
                </p>
                <blockquote id="resolution-note">{anomaly.resolution_note.clone().unwrap_or_default()}</blockquote>
            </div>
        }
        .into_any(),
        (None, _) => view! {
            <form id="resolve-form" class="form" on:submit=resolve>
                <h2>"Resolve"</h2>
                <label for="resolve-note">"Note: what you found and what you did"</label>
                <textarea id="resolve-note" rows="4" maxlength="2000" node_ref=note></textarea>
                <button id="resolve-button" class="primary" type="submit" disabled=move || pending.get()>
                    {move || if pending.get() { "Resolving\u{2026}" } else { "Resolve with this note" }}
                </button>
                {move || problem.get().map(|text| view! { <p id="resolve-error" class="notice error" role="alert">{text}</p> })}
            </form>
        }
        .into_any(),
    };
    view! {
        <h1 id="anomaly-title">{format!("Anomaly #{id}: {}", words(anomaly.kind.as_str()))}</h1>
        <dl class="facts" data-anomaly-id=id.to_string()>
            <dt>"Kind"</dt>
            <dd><code id="anomaly-kind">{anomaly.kind.as_str()}</code></dd>
            <dt>"Order"</dt>
            <dd><a id="anomaly-order" href=order_link>{anomaly.order_no.clone()}</a></dd>
            <dt>"Raised by"</dt>
            <dd><code>{anomaly.callback_id.clone()}</code></dd>
            <dt>"Raised at"</dt>
            <dd>{timestamp(anomaly.created_at)}</dd>
        </dl>
        <h2>"Facts"</h2>
        <pre id="anomaly-facts" class="json">{pretty_json(&anomaly.details)}</pre>
        {resolution}
    }
}
