//! `GET /api/products`: the catalogue.

use crate::db::products;
use crate::error::ApiError;
use crate::http::openapi::PublicErrors;
use crate::state::AppState;
use api_types::api::Product;
use axum::Json;
use axum::extract::State;

/// `GET /api/products` -> every product with its price.
#[utoipa::path(get, path = "/products", tag = "public",
    responses((status = 200, description = "The catalogue", body = Vec<Product>), PublicErrors))]
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<Product>>, ApiError> {
    Ok(Json(products::list(&state.db).await?))
}

/// A SKU's shape (`products_sku_shape` in the schema): 1 to 64 letters, digits,
/// `.`, `_` or `-`, starting with a letter or digit.
pub fn is_valid_sku(sku: &str) -> bool {
    !sku.is_empty()
        && sku.len() <= 64
        && sku.starts_with(|c: char| c.is_ascii_alphanumeric())
        && sku
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}
