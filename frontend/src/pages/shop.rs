//! `/`: a tiny demo shop, to create orders to pay.
//!
//! It shows the demo account from `GET /api/demo` (balance and orders) and a
//! "Buy" button that creates an order and opens its payment page.

use crate::api::{self, ApiError};
use crate::components::StatusBadge;
use crate::route::Route;
use api_types::api::{CreateOrder, DemoShop, Order};
use api_types::{ErrorCode, format_minor};
use leptos::prelude::*;

/// What the demo sells: one product, priced in the account's currency.
const PRODUCT_NAME: &str = "Coffee beans, 1 kg";
/// The product's price in minor units.
const PRODUCT_PRICE_MINOR: i64 = 1_250;

/// The demo shop.
#[component]
pub fn ShopPage() -> impl IntoView {
    let shop = LocalResource::new(api::demo);
    let buy = Action::new_local(|input: &CreateOrder| {
        let input = input.clone();
        async move { api::create_order(&input).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(order)) = buy.value().get() {
            crate::go_to(&Route::Pay {
                order_no: order.order_no,
            });
        }
    });
    let buy_error = move || match buy.value().get() {
        Some(Err(err)) => Some(format!("Could not create the order: {}", describe(&err))),
        _ => None,
    };

    view! {
        <section class="card" aria-labelledby="shop-title">
            <h1 id="shop-title">"Demo shop"</h1>
            {move || match shop.get() {
                None => view! { <p class="progress">"Loading the shop\u{2026}"</p> }.into_any(),
                Some(Err(err)) => view! {
                    <p id="message" class="notice notice-problem" role="status">
                        {shop_error(&err)}
                    </p>
                }
                .into_any(),
                Some(Ok(shop)) => render_shop(shop, buy, buy_error).into_any(),
            }}
        </section>
    }
}

fn render_shop(
    shop: DemoShop,
    buy: Action<CreateOrder, Result<Order, ApiError>>,
    buy_error: impl Fn() -> Option<String> + Send + Sync + 'static,
) -> impl IntoView {
    let account = shop.account;
    let currency = account.currency;
    let request = CreateOrder {
        account_id: account.account_id,
        amount_cents: PRODUCT_PRICE_MINOR,
        currency,
    };
    let pending = buy.pending();
    view! {
        <dl class="facts">
            <div>
                <dt>"Account"</dt>
                <dd>
                    <code id="account-id">{account.account_id.to_string()}</code>
                </dd>
            </div>
            <div>
                <dt>"Balance"</dt>
                <dd id="balance" data-testid="balance">
                    {format_minor(account.balance_cents, currency)}
                </dd>
            </div>
        </dl>

        <div class="product">
            <div>
                <h2 class="product-name">{PRODUCT_NAME}</h2>
                <p class="amount">{format_minor(PRODUCT_PRICE_MINOR, currency)}</p>
            </div>
            <button
                id="buy-button"
                data-testid="buy-button"
                class="button button-primary"
                type="button"
                disabled=move || pending.get()
                aria-busy=move || pending.get().to_string()
                on:click=move |_| {
                    buy.dispatch_local(request.clone());
                }
            >
                {move || if pending.get() { "Creating order\u{2026}" } else { "Buy" }}
            </button>
        </div>
        <p id="message" class="notice notice-problem" role="status" aria-live="polite">
            {buy_error}
        </p>

        <h2>"Your orders"</h2>
        {if shop.orders.is_empty() {
            view! { <p>"No orders yet."</p> }.into_any()
        } else {
            view! {
                <ul id="orders" class="orders">
                    {shop.orders.into_iter().map(render_order).collect_view()}
                </ul>
            }
            .into_any()
        }}
    }
}

fn render_order(order: Order) -> impl IntoView {
    let href = Route::Pay {
        order_no: order.order_no.clone(),
    }
    .path();
    view! {
        <li class="order">
            <a href=href>
                <code>{order.order_no.clone()}</code>
            </a>
            <span class="amount">{format_minor(order.amount_cents, order.currency)}</span>
            <StatusBadge status=order.status />
        </li>
    }
}

fn shop_error(err: &ApiError) -> String {
    if matches!(err.code(), Some(ErrorCode::NotFound)) || err.status() == Some(404) {
        "Demo mode is off on this server. Open a payment link (/pay/\u{2026}) instead.".to_owned()
    } else {
        format!("Could not load the shop: {}", describe(err))
    }
}

fn describe(err: &ApiError) -> String {
    match err {
        ApiError::Server { body, .. } => body.error.message.clone(),
        ApiError::Network(_) | ApiError::Http { .. } => {
            "the server could not be reached; please try again.".to_owned()
        }
        ApiError::Decode(_) => "the server answered something unexpected.".to_owned(),
    }
}
