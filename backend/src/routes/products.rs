//! `GET /api/products`: the catalogue.

use crate::db::products;
use crate::error::ApiError;
use crate::state::AppState;
use api_types::api::Product;
use axum::Json;
use axum::extract::State;

/// `GET /api/products` -> every product with its price.
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<Product>>, ApiError> {
    Ok(Json(products::list(&state.db).await?))
}
