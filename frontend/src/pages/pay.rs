//! `/pay/{order_no}`: the payment page, for the shopper the order belongs to.
//!
//! The rules live in [`crate::flow`]; this module only renders a
//! [`PayFlow`] and runs the [`Effect`]s it asks for, feeding each answer back
//! as an [`Event`]. A signed-out shopper is sent to the sign-in page (the
//! flow's [`Effect::SignIn`]) and comes back here afterwards.

use crate::components::{NoticeBox, StatusBadge};
use crate::flow::{
    Effect, Event, Outcome, PayFlow, RETURN_AFTER_MS, RETURNING_SOON, RefundLine, SCAN_TO_PAY,
    STAY_HERE, WayBack, balance_text,
};
use crate::{api, or_sign_in, sign_in_again};
use api_types::PaymentMethod;
use api_types::api::{Account, PayRequest, PlatformInfo};
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::sync::Arc;

/// Runs the flow's effects and feeds their outcomes back in.
#[derive(Clone)]
struct Controller {
    flow: RwSignal<PayFlow>,
    accounts: RwSignal<Vec<Account>>,
    order_no: Arc<str>,
}

impl Controller {
    fn dispatch(&self, event: Event) {
        // None once the page is gone: late answers are dropped.
        let Some(effects) = self.flow.try_update(|flow| flow.apply(event)) else {
            return;
        };
        for effect in effects {
            self.run(effect);
        }
    }

    fn run(&self, effect: Effect) {
        let this = self.clone();
        spawn_local(async move {
            let order_no = &*this.order_no;
            let event = match effect {
                Effect::FetchOrder { delay_ms } => {
                    sleep(delay_ms).await;
                    match api::order(order_no).await {
                        Ok(order) => Event::OrderFetched(order),
                        Err(err) => Event::OrderFetchFailed(err),
                    }
                }
                Effect::IssueToken => match api::request_token(order_no).await {
                    Ok(token) => Event::TokenIssued(token),
                    Err(err) => Event::TokenFailed(err),
                },
                Effect::Submit {
                    token,
                    method,
                    delay_ms,
                } => {
                    sleep(delay_ms).await;
                    let body = PayRequest {
                        request_token: token,
                        method,
                    };
                    match api::pay(order_no, &body).await {
                        Ok(accepted) => Event::PayAccepted(accepted),
                        Err(err) => Event::PayFailed(err),
                    }
                }
                Effect::FetchRefunds => match api::refunds(order_no).await {
                    Ok(refunds) => Event::RefundsFetched(refunds),
                    Err(err) => Event::RefundsFetchFailed(err),
                },
                Effect::RefreshBalance => {
                    this.refresh_balance().await;
                    return;
                }
                Effect::SignIn => {
                    sign_in_again();
                    return;
                }
            };
            this.dispatch(event);
        });
    }

    /// The shopper's accounts (`GET /api/me`); the page shows the balance of
    /// the one the order charges. When they cannot be read, no balance is shown.
    async fn refresh_balance(&self) {
        if let Ok(me) = or_sign_in(api::me().await) {
            self.accounts.try_set(me.accounts);
        }
    }
}

async fn sleep(delay_ms: u32) {
    if delay_ms > 0 {
        TimeoutFuture::new(delay_ms).await;
    }
}

/// The payment page of one order.
#[component]
pub fn PayPage(
    /// The order to pay, from the URL.
    order_no: String,
    /// Which platform takes the payment (a QR code is shown for those paid by scanning one).
    platform: ReadSignal<Option<PlatformInfo>>,
) -> impl IntoView {
    let code_src = format!("/api/orders/{order_no}/payment-code.svg");
    let order_no: Arc<str> = order_no.into();
    let controller = Controller {
        flow: RwSignal::new(PayFlow::new()),
        accounts: RwSignal::new(Vec::new()),
        order_no: order_no.clone(),
    };
    for effect in PayFlow::start() {
        controller.run(effect);
    }
    spawn_local({
        let controller = controller.clone();
        async move { controller.refresh_balance().await }
    });
    // The platform's name and the methods it offers, once read: the flow
    // takes the first as the default until the shopper chooses another.
    leptos::prelude::Effect::new({
        let controller = controller.clone();
        move || {
            if let Some(info) = platform.get() {
                controller.dispatch(Event::PlatformRead(info));
            }
        }
    });

    let flow = controller.flow;
    let accounts = controller.accounts;
    // One memo: the page re-renders only when what it shows changes, not on every poll.
    let view_model = Memo::new(move |_| flow.read().view());
    // Its own memo: the link (and its countdown) is drawn again only when the way back changes.
    let way_back = Memo::new(move |_| view_model.read().way_back.clone());
    let balance = move || {
        let method = view_model.read().method;
        balance_text(flow.read().order.as_ref(), method, &accounts.read())
    };

    let description = move || {
        flow.read()
            .order
            .as_ref()
            .and_then(|o| o.description.clone())
    };
    let scan_code = move || {
        view_model.read().scan_code
            && platform
                .read()
                .as_ref()
                .is_some_and(|info| info.pays_by_qr_code)
    };
    let pay_button = move || view_model.read().pay_button;
    let retry_label = move || view_model.read().retry_label;

    let pay = {
        let controller = controller.clone();
        move |_| controller.dispatch(Event::PayPressed)
    };
    let retry = {
        let controller = controller.clone();
        move |_| controller.dispatch(Event::RetryPressed)
    };

    view! {
        <section class="card" aria-labelledby="pay-title" data-testid="pay-page">
            <h1 id="pay-title">"Payment"</h1>
            <dl class="facts">
                <div>
                    <dt>"Order"</dt>
                    <dd>
                        <code id="order-no" class="order-no">
                            {order_no.to_string()}
                        </code>
                    </dd>
                </div>
                {move || {
                    description()
                        .map(|text| {
                            view! {
                                <div>
                                    <dt>"Item"</dt>
                                    <dd id="description" data-testid="description">
                                        {text}
                                    </dd>
                                </div>
                            }
                        })
                }}
                <div>
                    <dt>"Amount"</dt>
                    <dd id="amount" data-testid="amount" class="amount">
                        {move || view_model.read().amount.clone().unwrap_or_else(|| "\u{2026}".into())}
                    </dd>
                </div>
                <div>
                    <dt>"Status"</dt>
                    <dd>
                        {move || {
                            view_model
                                .read()
                                .status
                                .map(|status| view! { <StatusBadge status=status id="status" /> })
                        }}
                    </dd>
                </div>
                // One closure for the line naming what pays and the balance,
                // which only a wallet payment shows.
                {move || {
                    let method = view_model.read().method_name.map(|name| {
                        view! {
                            <div>
                                <dt>"Payment method"</dt>
                                <dd id="method" data-testid="method">
                                    {name}
                                </dd>
                            </div>
                        }
                    });
                    let balance = balance().map(|text| {
                        view! {
                            <div>
                                <dt>"Your balance"</dt>
                                <dd id="balance" data-testid="balance">
                                    {text}
                                </dd>
                            </div>
                        }
                    });
                    (method, balance)
                }}
            </dl>

            // "Pay with", while the shopper may choose. A change of the view
            // patches these same elements, so a radio keeps the focus.
            {
                let controller = controller.clone();
                move || {
                    let view = view_model.read();
                    let chosen = view.method;
                    let controller = controller.clone();
                    (!view.choices.is_empty())
                        .then(|| {
                            let radios = view
                                .choices
                                .iter()
                                .map(|&(method, name)| {
                                    let id = match method {
                                        PaymentMethod::Wallet => "method-wallet",
                                        PaymentMethod::Platform => "method-platform",
                                    };
                                    let controller = controller.clone();
                                    view! {
                                        <label>
                                            <input
                                                type="radio"
                                                name="method"
                                                id=id
                                                data-testid=id
                                                checked=chosen == Some(method)
                                                on:change=move |_| controller.dispatch(Event::MethodChosen(method))
                                            />
                                            {name}
                                        </label>
                                    }
                                })
                                .collect_view();
                            view! {
                                <fieldset id="methods" class="methods">
                                    <legend>"Pay with"</legend>
                                    {radios}
                                </fieldset>
                            }
                        })
                }
            }

            <NoticeBox notice=move || view_model.read().notice />

            <p id="progress" class="progress" aria-live="polite">
                {move || {
                    let progress = view_model.read().progress;
                    if scan_code() { Some(SCAN_TO_PAY) } else { progress }
                        .map(|text| {
                            view! {
                                <span class="spinner" aria-hidden="true"></span>
                                <span>{text}</span>
                            }
                        })
                }}
            </p>

            {move || {
                scan_code()
                    .then(|| {
                        view! {
                            <img id="payment-code" class="payment-code" src=code_src.clone() alt="QR code to pay" />
                        }
                    })
            }}

            <div class="actions">
                <Show when=move || pay_button().is_some()>
                    <button
                        id="pay-button"
                        data-testid="pay-button"
                        class="button button-primary"
                        type="button"
                        disabled=move || !pay_button().is_some_and(|b| b.enabled)
                        aria-busy=move || pay_button().is_some_and(|b| b.busy).to_string()
                        aria-describedby="amount"
                        on:click=pay.clone()
                    >
                        {move || pay_button().map(|b| b.label)}
                    </button>
                </Show>
                <Show when=move || retry_label().is_some()>
                    <button
                        id="retry-button"
                        data-testid="retry-button"
                        class="button button-secondary"
                        type="button"
                        on:click=retry.clone()
                    >
                        {retry_label}
                    </button>
                </Show>
            </div>

            // One closure for the outcome and the refunds under it: they change together.
            {move || {
                let view = view_model.read();
                (view.outcome.clone().map(render_outcome), render_refunds(view.refunds.clone()))
            }}

            // The way back to the merchant: only the order's own URLs (checked by the
            // backend against the merchant's origins); the receipt's one by itself.
            {move || way_back.get().map(|way_back| view! { <WayBackLink way_back=way_back /> })}

            <p class="back">
                <a href="/">"Back to the shop"</a>
            </p>
        </section>
    }
}

/// "Return to {merchant}" (followed by itself after a few seconds, unless the
/// shopper stays) or "Cancel and return to {merchant}".
#[component]
fn WayBackLink(way_back: WayBack) -> impl IntoView {
    let staying = RwSignal::new(false);
    let automatic = way_back.automatic;
    if automatic {
        let href = way_back.href.clone();
        spawn_local(async move {
            TimeoutFuture::new(RETURN_AFTER_MS).await;
            // Not if the shopper chose to stay, or the page moved on meanwhile.
            if staying.try_get_untracked() == Some(false) {
                let _ = window().location().assign(&href);
            }
        });
    }
    view! {
        <p class="way-back" id="way-back" data-testid="way-back">
            <a
                id=if automatic { "return-link" } else { "cancel-link" }
                class="button button-secondary"
                href=way_back.href
            >
                {way_back.label}
            </a>
            {automatic.then(|| view! {
                <Show when=move || !staying.get()>
                    <span id="returning" class="muted">" "{RETURNING_SOON}" "</span>
                    <button id="stay-here" class="button-link" type="button" on:click=move |_| staying.set(true)>
                        {STAY_HERE}
                    </button>
                </Show>
            })}
        </p>
    }
}

fn render_outcome(outcome: Outcome) -> AnyView {
    match outcome {
        Outcome::Paid {
            heading,
            summary,
            paid_at,
            payment_id,
        } => view! {
            <section id="receipt" data-testid="receipt" class="receipt" aria-labelledby="receipt-title">
                <h2 id="receipt-title" data-testid="receipt-title">{heading}</h2>
                <p>{summary}</p>
                <dl class="facts">
                    {paid_at
                        .map(|at| {
                            view! {
                                <div>
                                    <dt>"Paid at"</dt>
                                    <dd id="paid-at">{at}</dd>
                                </div>
                            }
                        })}
                    {payment_id
                        .map(|id| {
                            view! {
                                <div>
                                    <dt>"Payment id"</dt>
                                    <dd>
                                        <code id="payment-id">{id}</code>
                                    </dd>
                                </div>
                            }
                        })}
                </dl>
            </section>
        }
        .into_any(),
        Outcome::Failed { reason } => view! {
            <section id="failure" data-testid="failure" class="failure" aria-labelledby="failure-title">
                <h2 id="failure-title">"Payment failed"</h2>
                <p id="failure-reason">{reason}</p>
                <p>"You were not charged."</p>
            </section>
        }
        .into_any(),
    }
}

/// The refunds under the receipt; nothing when there are none.
fn render_refunds(refunds: Vec<RefundLine>) -> impl IntoView {
    (!refunds.is_empty()).then(|| {
        let lines = refunds
            .into_iter()
            .map(|line| {
                view! {
                    <li data-testid="refund" data-status=line.status.as_str()>
                        <span data-testid="refund-amount" class="amount">{line.amount}</span>
                        <span data-testid="refund-status">{line.status_text}</span>
                        {line.note.map(|note| view! { <small data-testid="refund-note">{note}</small> })}
                    </li>
                }
            })
            .collect_view();
        view! {
            <section id="refunds" data-testid="refunds" class="refunds" aria-labelledby="refunds-title">
                <h2 id="refunds-title">"Refunds"</h2>
                <ul>{lines}</ul>
            </section>
        }
    })
}
