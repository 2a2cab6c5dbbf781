//! `GET /api/orders/{order_no}/payment-code.svg`: the QR code the shopper scans
//! to pay with WeChat Pay or Alipay, drawn here so the payment page carries no
//! QR encoder (its 150 KiB budget).

use crate::error::ApiError;
use crate::http::extract::OrderNoPath;
use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use qrcode::QrCode;
use qrcode::render::svg;

/// The drawn code's smallest side, in CSS pixels.
const MIN_SIDE_PX: u32 = 200;

/// 200 `image/svg+xml` while the shopper's own order is PENDING and its
/// platform gave a payment link; 404 otherwise (no such order, someone
/// else's, already settled, or a platform without QR codes).
#[utoipa::path(get, path = "/orders/{order_no}/payment-code.svg", tag = "shopper", security(("session" = [])),
    params(("order_no" = String, Path, description = "The order number")),
    responses((status = 200, description = "The QR code of the platform's payment link", content_type = "image/svg+xml", body = String),
        crate::http::openapi::ShopperErrors))]
pub async fn payment_code(
    State(state): State<AppState>,
    signed_in: crate::http::auth::session::SignedIn,
    OrderNoPath(order_no): OrderNoPath,
) -> Result<Response, ApiError> {
    let link =
        crate::db::attempts::payable_qr_code(&state.db, order_no.as_str(), signed_in.shopper_id)
            .await?
            .ok_or(ApiError::NotFound)?;
    let code = QrCode::new(link.as_bytes()).map_err(|err| ApiError::Internal(err.into()))?;
    let image = code
        .render::<svg::Color<'_>>()
        .min_dimensions(MIN_SIDE_PX, MIN_SIDE_PX)
        .quiet_zone(true)
        .build();
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "private, no-store"),
        ],
        image,
    )
        .into_response())
}
