//! `products`: the catalogue, whose prices are the only prices shoppers pay.

use api_types::Currency;
use api_types::api::Product;
use sqlx::PgExecutor;

/// The whole catalogue, by SKU.
#[tracing::instrument(name = "db.products.list", skip(db))]
pub async fn list(db: impl PgExecutor<'_>) -> sqlx::Result<Vec<Product>> {
    sqlx::query_as!(
        Product,
        r#"SELECT sku, name, price_cents, currency AS "currency: Currency"
           FROM products ORDER BY sku"#,
    )
    .fetch_all(db)
    .await
}

/// One product.
#[tracing::instrument(name = "db.products.find", skip(db))]
pub async fn find(db: impl PgExecutor<'_>, sku: &str) -> sqlx::Result<Option<Product>> {
    sqlx::query_as!(
        Product,
        r#"SELECT sku, name, price_cents, currency AS "currency: Currency"
           FROM products WHERE sku = $1"#,
        sku,
    )
    .fetch_optional(db)
    .await
}

/// Adds a product or sets its name and price; `demo` marks demo-mode products.
#[tracing::instrument(name = "db.products.upsert", skip(db))]
pub async fn upsert(db: impl PgExecutor<'_>, product: &Product, demo: bool) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO products (sku, name, price_cents, currency, demo) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (sku) DO UPDATE
             SET name = EXCLUDED.name, price_cents = EXCLUDED.price_cents,
                 currency = EXCLUDED.currency, demo = EXCLUDED.demo",
        product.sku,
        product.name,
        product.price_cents,
        product.currency.as_str(),
        demo,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Removes the products demo mode seeded; returns how many.
#[tracing::instrument(name = "db.products.delete_demo", skip(db))]
pub async fn delete_demo(db: impl PgExecutor<'_>) -> sqlx::Result<u64> {
    let result = sqlx::query!("DELETE FROM products WHERE demo")
        .execute(db)
        .await?;
    Ok(result.rows_affected())
}
