//! An order's timeline, and the search that finds orders: by order number,
//! callback id, platform payment id or shopper email, of every merchant or
//! one (a merchant alone lists its newest orders).
//!
//! The timeline lists everything that happened to the order, oldest first:
//! tokens issued, payment attempts and their states, every callback delivery
//! with the answer we gave, queries, ledger rows, refunds and anomalies.

use super::merchants::MerchantFilter;
use super::{Loading, Problem};
use crate::format::{pretty_json, timestamp, timestamp_ms, words};
use crate::route::Route;
use crate::{Session, api, or_sign_in};
use api_types::format_minor;
use api_types::ops::{OpsOrder, OrderTimeline, SearchHit, TimelineKind};
use leptos::html::Input;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The search box, and the timeline of `order_no` when one is given.
#[component]
pub fn OrdersPage(order_no: Option<String>) -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let query = NodeRef::<Input>::new();
    let hits = RwSignal::new(None::<Result<Vec<SearchHit>, api::ApiError>>);
    let searching = RwSignal::new(false);
    let merchant = RwSignal::new(None::<uuid::Uuid>);
    let search = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = query
            .get_untracked()
            .map(|el| el.value())
            .unwrap_or_default()
            .trim()
            .to_owned();
        let merchant = merchant.get_untracked();
        // A merchant alone lists its newest orders.
        if (text.is_empty() && merchant.is_none()) || searching.get_untracked() {
            return;
        }
        searching.set(true);
        spawn_local(async move {
            hits.set(Some(or_sign_in(
                session,
                api::search(&text, merchant).await,
            )));
            searching.set(false);
        });
    };
    let timeline = order_no.map(|order_no| {
        let resource = LocalResource::new(move || {
            let order_no = order_no.clone();
            async move { or_sign_in(session, api::timeline(&order_no).await) }
        });
        view! {
            {move || match resource.get() {
                None => view! { <Loading /> }.into_any(),
                Some(Err(err)) => view! { <Problem what="Loading the timeline failed" err=err /> }.into_any(),
                Some(Ok(timeline)) => view! { <Timeline timeline=timeline /> }.into_any(),
            }}
        }
    });

    view! {
        <section class="card" aria-labelledby="search-title">
            <h1 id="search-title">"Find an order"</h1>
            <form id="search-form" class="inline-form" role="search" on:submit=search>
                <label for="search-q" class="sr-only">"Order number, callback id, payment id or shopper email"</label>
                <input
                    id="search-q"
                    type="search"
                    placeholder="Order number, callback id, payment id or shopper email"
                    node_ref=query
                />
                <MerchantFilter id="search-merchant" chosen=merchant />
                <button id="search-button" class="primary" type="submit" disabled=move || searching.get()>
                    "Search"
                </button>
            </form>
            {move || match hits.get() {
                None => ().into_any(),
                Some(Err(err)) => view! { <Problem what="The search failed" err=err /> }.into_any(),
                Some(Ok(hits)) if hits.is_empty() => {
                    view! { <p id="search-empty" class="muted">"No order matches."</p> }.into_any()
                }
                Some(Ok(hits)) => view! { <SearchHits hits=hits /> }.into_any(),
            }}
        </section>
        {timeline}
    }
}

/// The orders a search found.
#[component]
fn SearchHits(hits: Vec<SearchHit>) -> impl IntoView {
    view! {
        <ul id="search-results" class="hits">
            {hits
                .into_iter()
                .map(|hit| {
                    let href = Route::Orders { order_no: Some(hit.order.order_no.clone()) }.path();
                    view! {
                        <li class="search-hit" data-order-no=hit.order.order_no.clone()>
                            <a href=href>{hit.order.order_no.clone()}</a>
                            " \u{2014} "
                            {hit.order.shopper_email.clone()}
                            ", "
                            {format_minor(hit.order.amount_cents, hit.order.currency)}
                            ", "
                            <span class="status">{hit.order.status.as_str()}</span>
                            <span class="muted">{format!(" (matched by {})", words(&hit.matched_by).to_lowercase())}</span>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// The order now, then every event, oldest first.
#[component]
fn Timeline(timeline: OrderTimeline) -> impl IntoView {
    let OrderTimeline { order, events } = timeline;
    view! {
        <section class="card" id="timeline" aria-labelledby="timeline-title">
            <h1 id="timeline-title">{format!("Order {}", order.order_no)}</h1>
            <OrderSummary order=order />
            <h2>{format!("Timeline ({} events, oldest first)", events.len())}</h2>
            <ol id="timeline-events" class="timeline">
                {events
                    .into_iter()
                    .map(|event| {
                        view! {
                            <li class="event" data-kind=kind_name(event.kind)>
                                <span class="event-time nowrap">{timestamp_ms(event.at)}</span>
                                <span class=format!("event-kind kind-{}", kind_name(event.kind))>
                                    {kind_label(event.kind)}
                                </span>
                                <span class="event-title">{event.title.clone()}</span>
                                <details>
                                    <summary>"Facts"</summary>
                                    <pre class="json">{pretty_json(&event.details)}</pre>
                                </details>
                            </li>
                        }
                    })
                    .collect_view()}
            </ol>
        </section>
    }
}

/// The order's facts.
#[component]
fn OrderSummary(order: OpsOrder) -> impl IntoView {
    view! {
        <dl class="facts" id="order-summary" data-status=order.status.as_str()>
            <dt>"Status"</dt>
            <dd><span class="status" id="order-status">{order.status.as_str()}</span></dd>
            <dt>"Amount"</dt>
            <dd>{format_minor(order.amount_cents, order.currency)}</dd>
            <dt>"Refunded"</dt>
            <dd id="order-refunded">{format_minor(order.refunded_cents, order.currency)}</dd>
            <dt>"Shopper"</dt>
            <dd>{order.shopper_email}</dd>
            <dt>"Placed"</dt>
            <dd>{timestamp(order.created_at)}</dd>
        </dl>
    }
}

/// The wire name of an event kind (`delivery`), for styling and tests.
pub fn kind_name(kind: TimelineKind) -> &'static str {
    match kind {
        TimelineKind::OrderPlaced => "order_placed",
        TimelineKind::TokenIssued => "token_issued",
        TimelineKind::AttemptCreated => "attempt_created",
        TimelineKind::AttemptSubmitted => "attempt_submitted",
        TimelineKind::Query => "query",
        TimelineKind::Delivery => "delivery",
        TimelineKind::Ledger => "ledger",
        TimelineKind::Refund => "refund",
        TimelineKind::Anomaly => "anomaly",
        TimelineKind::OrderFinal => "order_final",
    }
}

/// A short label for an event kind.
pub fn kind_label(kind: TimelineKind) -> &'static str {
    match kind {
        TimelineKind::OrderPlaced => "Order",
        TimelineKind::TokenIssued => "Token",
        TimelineKind::AttemptCreated | TimelineKind::AttemptSubmitted => "Attempt",
        TimelineKind::Query => "Query",
        TimelineKind::Delivery => "Callback",
        TimelineKind::Ledger => "Ledger",
        TimelineKind::Refund => "Refund",
        TimelineKind::Anomaly => "Anomaly",
        TimelineKind::OrderFinal => "Final",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_the_wire_names() {
        for kind in [
            TimelineKind::OrderPlaced,
            TimelineKind::TokenIssued,
            TimelineKind::AttemptCreated,
            TimelineKind::AttemptSubmitted,
            TimelineKind::Query,
            TimelineKind::Delivery,
            TimelineKind::Ledger,
            TimelineKind::Refund,
            TimelineKind::Anomaly,
            TimelineKind::OrderFinal,
        ] {
            let wire = serde_json::to_value(kind).expect("serialises");
            assert_eq!(wire, kind_name(kind), "{kind:?}");
        }
    }
}
