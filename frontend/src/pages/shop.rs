//! `/`: the shop, for a signed-in shopper.
//!
//! It shows who is signed in and their EUR balance (`GET /api/me`), the
//! catalogue (`GET /api/products`) with a "Buy" button per product, and their
//! orders (`GET /api/orders`). "Buy" places an order (`POST /api/orders`, its
//! `Idempotency-Key` chosen by [`BuyKeys`]) and opens its payment page.
//! ("Sign out" is in the header, [`crate::components::SignOutButton`].)

use crate::api::{self, ApiError};
use crate::components::StatusBadge;
use crate::purchase::{BuyKeys, buy_retry_delay};
use crate::route::Route;
use crate::{go_to, or_sign_in};
use api_types::api::{CreateOrder, Me, Order, Product};
use api_types::{Currency, format_minor};
use gloo_timers::future::TimeoutFuture;
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

/// What the shop shows, read in one go when the page loads.
#[derive(Debug, Clone)]
struct Shop {
    me: Me,
    products: Vec<Product>,
    orders: Vec<Order>,
}

/// Reads the shop's three resources one after the other: one resource on the
/// page instead of three keeps the .wasm smaller, and all three are quick reads.
async fn load_shop() -> Result<Shop, ApiError> {
    let me = or_sign_in(api::me().await)?;
    let products = api::products().await?;
    let orders = or_sign_in(api::orders().await)?;
    Ok(Shop {
        me,
        products,
        orders,
    })
}

/// The shop.
#[component]
pub fn ShopPage() -> impl IntoView {
    // A signal written once, not a `LocalResource`: with the platform's in
    // `App`, those were the app's last resources, and without them the .wasm
    // carries none of their async machinery (about 10 KiB of its gzip budget).
    let shop = RwSignal::new(None);
    spawn_local(async move { shop.set(Some(load_shop().await)) });
    // The SKU being bought, while its order is being placed.
    let buying = RwSignal::new(None::<String>);
    let problem = RwSignal::new(None::<String>);
    let keys = StoredValue::new(BuyKeys::default());
    let press = move |sku: String| {
        if buying.read_untracked().is_some() {
            return;
        }
        let Some(fresh) = new_idempotency_key() else {
            problem.set(Some(
                "This browser cannot make the random key an order needs; please use another one."
                    .to_owned(),
            ));
            return;
        };
        let order = CreateOrder { sku, quantity: 1 };
        let key = keys.with_value(|keys| keys.key_for_press(&order, fresh));
        buying.set(Some(order.sku.clone()));
        problem.set(None);
        spawn_local(async move {
            let outcome = place_order(&order, key).await;
            keys.update_value(|keys| keys.record(&order, key, &outcome));
            match or_sign_in(outcome) {
                // The buttons stay disabled while the payment page loads.
                Ok(order) => go_to(&Route::Pay {
                    order_no: order.order_no,
                }),
                Err(err) => {
                    if !err.is_unauthenticated() {
                        problem.set(Some(buy_problem_text(&err)));
                    }
                    buying.set(None);
                }
            }
        });
    };

    view! {
        <section class="card" aria-labelledby="shop-title">
            <h1 id="shop-title">"Shop"</h1>
            {move || match shop.get() {
                None => EitherOf3::A(view! { <p class="progress">"Loading the shop\u{2026}"</p> }),
                Some(Err(err)) => EitherOf3::B(view! {
                    <p class="notice notice-problem" role="status">
                        {format!("Could not load the shop: {}", describe(&err))}
                    </p>
                }),
                Some(Ok(shop)) => EitherOf3::C(render_shop(shop, buying, problem, press)),
            }}
        </section>
    }
}

fn render_shop(
    shop: Shop,
    buying: RwSignal<Option<String>>,
    problem: RwSignal<Option<String>>,
    press: impl Fn(String) + Copy + 'static,
) -> impl IntoView {
    let Shop {
        me,
        products,
        orders,
    } = shop;
    view! {
        {render_account(me)}
        <h2>"Products"</h2>
        <ul id="products" class="products">
            {products
                .into_iter()
                .map(|product| render_product(product, buying, press))
                .collect_view()}
        </ul>
        <p id="message" class="notice notice-problem" role="status" aria-live="polite">
            {move || problem.get()}
        </p>
        <h2>"Your orders"</h2>
        {if orders.is_empty() {
            Either::Left(view! { <p id="no-orders">"No orders yet."</p> })
        } else {
            Either::Right(view! {
                <ul id="orders" class="orders">
                    {orders.into_iter().map(render_order).collect_view()}
                </ul>
            })
        }}
    }
}

/// Sends the order, re-sending it with the same key while no answer arrives.
async fn place_order(order: &CreateOrder, key: Uuid) -> Result<Order, ApiError> {
    let mut retry = 0;
    loop {
        match api::create_order(order, key).await {
            Err(err) if err.is_transport_failure() => match buy_retry_delay(retry + 1) {
                Some(delay_ms) => {
                    TimeoutFuture::new(delay_ms).await;
                    retry += 1;
                }
                None => return Err(err),
            },
            answered => return answered,
        }
    }
}

/// A new random `Idempotency-Key` (UUID v4) from the browser's CSPRNG, which
/// every browser that runs WebAssembly has.
///
/// `crypto.getRandomValues`, unlike `crypto.randomUUID`, also works on a page
/// served over plain HTTP from another host than localhost.
fn new_idempotency_key() -> Option<Uuid> {
    let mut bytes = [0u8; 16];
    let crypto = web_sys::window()?.crypto().ok()?;
    crypto.get_random_values_with_u8_array(&mut bytes).ok()?;
    Some(uuid::Builder::from_random_bytes(bytes).into_uuid())
}

fn render_account(me: Me) -> impl IntoView {
    let balance = me
        .accounts
        .iter()
        .find(|account| account.currency == Currency::EUR)
        .or_else(|| me.accounts.first())
        .map(|account| format_minor(account.balance_cents, account.currency));
    view! {
        <dl class="facts">
            <div>
                <dt>"Signed in as"</dt>
                <dd id="shopper-email" data-testid="shopper-email">{me.email}</dd>
            </div>
            <div>
                <dt>"Balance"</dt>
                <dd id="balance" data-testid="balance">
                    {balance.unwrap_or_else(|| "no account".to_owned())}
                </dd>
            </div>
        </dl>
    }
}

fn render_product(
    product: Product,
    buying: RwSignal<Option<String>>,
    press: impl Fn(String) + Copy + 'static,
) -> impl IntoView {
    let sku = product.sku;
    let this_one = {
        let sku = sku.clone();
        move || buying.read().as_deref() == Some(sku.as_str())
    };
    let busy = this_one.clone();
    view! {
        <li class="product">
            <div>
                <h3 class="product-name">{product.name}</h3>
                <p class="amount">{format_minor(product.price_cents, product.currency)}</p>
            </div>
            <button
                id=format!("buy-{sku}")
                class="button button-primary"
                type="button"
                disabled=move || buying.read().is_some()
                aria-busy=move || busy().to_string()
                on:click=move |_| press(sku.clone())
            >
                {move || if this_one() { "Placing order\u{2026}" } else { "Buy" }}
            </button>
        </li>
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
                {order.description.clone().unwrap_or_else(|| order.order_no.clone())}
            </a>
            <span class="amount">{format_minor(order.amount_cents, order.currency)}</span>
            <StatusBadge status=order.status />
        </li>
    }
}

fn buy_problem_text(err: &ApiError) -> String {
    if err.is_transport_failure() {
        "We could not reach the server. Pressing \u{201c}Buy\u{201d} again is safe: it will not place a second order.".to_owned()
    } else {
        format!("Could not place the order: {}", describe(err))
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
