//! HTTP routes, one file per resource.

pub mod admin;
pub mod callbacks;
pub mod demo;
pub mod health;
pub mod orders;
pub mod pay;
pub mod platform;

use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::middleware;
use axum::routing::{get, post};

/// Every `/api` route; unknown `/api` paths answer 404 in our error shape.
pub fn api(state: &AppState) -> Router<AppState> {
    // A route layer, so it covers every admin route and runs before their extractors.
    let admin = Router::new()
        .route("/admin/accounts", post(admin::create_account))
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
    Router::new()
        .merge(admin)
        .route("/orders", post(orders::create_order))
        .route("/orders/{order_no}", get(orders::get_order))
        .route(
            "/orders/{order_no}/request-token",
            post(orders::issue_request_token),
        )
        .route("/orders/{order_no}/pay", post(pay::pay))
        .route("/payments/callback", post(callbacks::receive))
        .route("/demo", get(demo::shop))
        .route("/platform", get(platform::platform))
        .fallback(|| async { ApiError::NotFound })
}
