//! HTTP routes, one file per resource.

pub mod admin;
pub mod callbacks;
pub mod demo;
pub mod health;
pub mod merchant;
pub mod orders;
pub mod pay;
pub mod platform;
pub mod products;
pub mod session;

use crate::error::ApiError;
use crate::state::AppState;
use crate::web_security::{Csrf, csrf_guard};
use axum::Router;
use axum::middleware;
use axum::routing::{get, post, put};
use tower_sessions::SessionManagerLayer;
use tower_sessions_sqlx_store::PostgresStore;

/// Every `/api` route; unknown `/api` paths answer 404 in our error shape.
///
/// Three kinds of caller, three guards that run before any handler:
/// - shoppers, by session cookie: [`csrf_guard`] on their state-changing routes;
/// - the operator (`/admin/*`) and merchants (`/merchant/*`), by bearer key;
/// - payment platforms (`/payments/callback`), by signature, never rate-limited.
pub fn api(
    state: &AppState,
    csrf: Csrf,
    sessions: SessionManagerLayer<PostgresStore>,
) -> Router<AppState> {
    // Route layers, so they cover every route of the group and run before its extractors.
    let admin = Router::new()
        .route("/admin/shoppers", post(admin::create_shopper))
        .route("/admin/products/{sku}", put(admin::put_product))
        .route("/admin/accounts/{account_id}", get(admin::get_account))
        .route(
            "/admin/callbacks/{callback_id}",
            get(admin::callback_history),
        )
        .route("/admin/anomalies", get(admin::list_anomalies))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            admin::require_admin_token,
        ));
    let merchant = Router::new()
        .route("/merchant/orders", post(merchant::create_order))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            merchant::require_merchant_key,
        ));
    let shopper = Router::new()
        .route("/session", post(session::sign_in).delete(session::sign_out))
        .route("/me", get(session::me))
        .route(
            "/orders",
            post(orders::create_order).get(orders::list_orders),
        )
        .route("/orders/{order_no}", get(orders::get_order))
        .route(
            "/orders/{order_no}/request-token",
            post(orders::issue_request_token),
        )
        .route("/orders/{order_no}/pay", post(pay::pay))
        .route_layer(middleware::from_fn_with_state(csrf, csrf_guard))
        .route_layer(sessions);
    Router::new()
        .merge(admin)
        .merge(merchant)
        .merge(shopper)
        .route("/products", get(products::list))
        .route("/payments/callback", post(callbacks::receive))
        .route("/platform", get(platform::platform))
        .fallback(|| async { ApiError::NotFound })
}
