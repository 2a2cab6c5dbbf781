//! HTTP routes, one file per resource.

pub mod admin;
pub mod alipay_notify;
pub mod callbacks;
pub mod demo;
pub mod health;
pub mod merchant;
pub mod merchants;
pub mod notify;
pub mod ops;
pub mod orders;
pub mod partner;
pub mod pay;
pub mod payment_code;
pub mod platform;
pub mod products;
pub mod refunds;
pub mod session;
pub mod wechatpay_notify;

use crate::error::ApiError;
use crate::http::auth::{bearer, merchant as merchant_auth};
use crate::http::web_security::{Csrf, csrf_guard};
use crate::state::AppState;
use axum::middleware;
use tower_sessions::SessionManagerLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Every `/api` route, with its OpenAPI description (every route is registered
/// with `routes!`, so none can exist undescribed); unknown `/api` paths answer
/// 404 in our error shape.
///
/// Three kinds of caller, three guards that run before any handler:
/// - shoppers, by session cookie: [`csrf_guard`] on their state-changing routes;
/// - the operator (`/admin/*`), by the admin token; merchants (`/merchant/*`),
///   each by its own API key;
/// - the operator's console (`/ops/*`), by an operator session (the admin
///   token exchanged once at `POST /ops/session`), behind [`csrf_guard`];
/// - payment platforms (`/payments/callback`), by signature, never rate-limited.
pub fn api(
    state: &AppState,
    csrf: Csrf,
    sessions: SessionManagerLayer<crate::http::auth::session::Sessions>,
) -> OpenApiRouter<AppState> {
    // Route layers, so they cover every route of the group and run before its extractors.
    let admin = OpenApiRouter::new()
        .routes(routes!(admin::create_shopper))
        .routes(routes!(admin::put_product))
        .routes(routes!(admin::get_account))
        .routes(routes!(admin::callback_history))
        .routes(routes!(admin::list_anomalies))
        .routes(routes!(admin::reconciliation))
        .routes(routes!(refunds::admin_create, refunds::admin_list))
        .routes(routes!(merchants::create, merchants::list))
        .routes(routes!(merchants::rotate_key))
        .routes(routes!(merchants::revoke_key))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            bearer::require,
        ));
    let merchant = OpenApiRouter::new()
        .routes(routes!(merchant::create_order, merchant::list_orders))
        .routes(routes!(merchant::get_order))
        .routes(routes!(refunds::merchant_create, refunds::merchant_list))
        .routes(routes!(merchant::balance))
        .routes(routes!(merchant::balance_entries))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            merchant_auth::require,
        ));
    // The console: same cookie, CSRF guard and sign-in limits as shoppers.
    let ops = OpenApiRouter::new()
        .routes(routes!(ops::sign_in, ops::sign_out))
        .routes(routes!(ops::me))
        .routes(routes!(ops::list_anomalies))
        .routes(routes!(ops::get_anomaly))
        .routes(routes!(ops::resolve_anomaly))
        .routes(routes!(ops::timeline))
        .routes(routes!(ops::search))
        .routes(routes!(ops::activity))
        .routes(routes!(ops::reconciliation))
        .routes(routes!(ops::books))
        .routes(routes!(ops::merchants))
        .route_layer(middleware::from_fn_with_state(csrf.clone(), csrf_guard))
        .route_layer(sessions.clone());
    let shopper = OpenApiRouter::new()
        .routes(routes!(session::sign_in, session::sign_out))
        .routes(routes!(session::me))
        .routes(routes!(orders::create_order, orders::list_orders))
        .routes(routes!(orders::get_order))
        .routes(routes!(refunds::shopper_list))
        .routes(routes!(payment_code::payment_code))
        .routes(routes!(orders::issue_request_token))
        .routes(routes!(pay::pay))
        .route_layer(middleware::from_fn_with_state(csrf, csrf_guard))
        .route_layer(sessions);
    OpenApiRouter::new()
        .merge(admin)
        .merge(merchant)
        .merge(shopper)
        .merge(ops)
        .routes(routes!(products::list))
        .routes(routes!(callbacks::receive))
        .routes(routes!(wechatpay_notify::receive))
        .routes(routes!(alipay_notify::receive))
        .routes(routes!(platform::platform))
        .routes(routes!(crate::http::openapi::document))
        .fallback(|| async { ApiError::NotFound })
}
