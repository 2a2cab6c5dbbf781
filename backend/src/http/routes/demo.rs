//! Demo data, made only when `DEMO=true`: a small catalogue and, where no
//! money moves, two demo shoppers with public passwords, so a person can try
//! the checkout (and one shopper trying the other's order) by hand. Ids are
//! random; nothing is made, listed or usable unless demo mode is on, and demo
//! shoppers only while [`shoppers_allowed`] says so.

use crate::config::PlatformChoice;
use crate::db::{self, products, shoppers};
use crate::http::auth::passwords;
use api_types::Currency;
use api_types::api::{DemoShopper, Product};
use secrecy::SecretString;

/// Each demo shopper's opening balance: 1,000.00 in the demo currency.
pub const DEMO_OPENING_BALANCE_CENTS: i64 = 100_000;
/// The demo currency of the sandbox and of a remote platform.
pub const DEMO_CURRENCY: Currency = Currency::EUR;

/// The demo's currency on `platform`: WeChat Pay and Alipay take yuan only.
pub fn currency_for(platform: crate::config::PlatformKind) -> Currency {
    use crate::config::PlatformKind;
    match platform {
        PlatformKind::Sandbox | PlatformKind::Remote => DEMO_CURRENCY,
        PlatformKind::Wechatpay | PlatformKind::Alipay => Currency::CNY,
    }
}

/// Whether demo shoppers, whose passwords are published, may exist and sign
/// in: demo mode is on *and* no money can move (the sandbox, or a simulated
/// platform on this machine's loopback: [`PlatformChoice::is_simulated`]).
/// The one rule for them: start-up makes them only then, and signing in and
/// every request of a demo shopper's session ask the answer start-up kept
/// (`AppState::demo_shoppers_allowed`), so a demo shopper left in the database
/// by an earlier run cannot sign in against a real platform.
pub fn shoppers_allowed(demo: bool, platform: &PlatformChoice) -> bool {
    demo && platform.is_simulated()
}

/// The demo shoppers (sign-in email, password).
pub const DEMO_SHOPPERS: [(&str, &str); 2] = [
    ("ada@shop.test", "ada-demo-password"),
    ("ben@shop.test", "ben-demo-password"),
];

/// The demo catalogue (sku, name, price in cents). In the sandbox an amount
/// ending in 13 cents is declined, so the last item shows a failed payment.
pub const DEMO_PRODUCTS: [(&str, &str, i64); 4] = [
    ("coffee-beans", "Coffee beans, 1 kg", 2_450),
    ("teapot", "Cast-iron teapot", 4_990),
    ("mug", "Stoneware mug", 1_250),
    (
        "declined-demo",
        "Gift card (the sandbox declines it)",
        1_013,
    ),
];

/// Outside demo mode: removes the demo catalogue (demo shoppers stay in the
/// database for their orders' sake, but cannot sign in: [`shoppers_allowed`]).
pub async fn remove(db: &sqlx::PgPool) -> sqlx::Result<()> {
    let removed = products::delete_demo(db).await?;
    if removed > 0 {
        tracing::info!(
            products = removed,
            "demo mode is off: removed the demo catalogue"
        );
    }
    Ok(())
}

/// Adds the demo catalogue in `currency` (prices reset to the demo's).
pub async fn seed_products(db: &sqlx::PgPool, currency: Currency) -> sqlx::Result<()> {
    for (sku, name, price_cents) in DEMO_PRODUCTS {
        products::upsert(
            db,
            &Product {
                sku: sku.into(),
                name: name.into(),
                price_cents,
                currency,
            },
            true,
        )
        .await?;
    }
    Ok(())
}

/// Creates the demo shoppers that do not exist yet, each with an account in
/// `currency` (one is opened for an existing demo shopper who lacks it);
/// returns their sign-in details.
pub async fn seed_shoppers(
    db: &sqlx::PgPool,
    currency: Currency,
) -> anyhow::Result<Vec<DemoShopper>> {
    let mut shown = Vec::new();
    for (email, password) in DEMO_SHOPPERS {
        if let Some(existing) = shoppers::find_by_email(db, email).await? {
            shoppers::open_account(
                db,
                existing.shopper_id,
                DEMO_OPENING_BALANCE_CENTS,
                currency,
            )
            .await?;
        } else {
            let hash = passwords::hash(SecretString::from(password))
                .await
                .map_err(|err| anyhow::anyhow!("{err}"))?;
            let mut tx = db.begin().await?;
            let new = shoppers::NewShopper {
                email,
                password_hash: &hash,
                demo: true,
                balance_cents: DEMO_OPENING_BALANCE_CENTS,
                currency,
            };
            match shoppers::insert_with_account(&mut tx, new).await {
                Ok(_) => tx.commit().await?,
                // Another instance seeded it at the same moment.
                Err(err) if db::is_unique_violation(&err, shoppers::EMAIL_UNIQUE) => {}
                Err(err) => return Err(err.into()),
            }
        }
        shown.push(DemoShopper {
            email: email.into(),
            password: password.into(),
        });
    }
    Ok(shown)
}
