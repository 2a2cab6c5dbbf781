//! PostgreSQL over TLS: `DATABASE_URL` takes libpq's `sslmode` (a managed
//! database that accepts only encrypted connections is given
//! `?sslmode=require`, or `verify-full` with `sslrootcert`), and every
//! connection the app opens, the pool's and the warm stash's, honours it.

use crate::helpers::spawn_app_on;
use api_types::OrderStatus;
use sqlx::{Connection, PgConnection};
use testkit::TestDatabase;

#[tokio::test]
async fn with_sslmode_require_the_app_pays_over_encrypted_connections_only() {
    let database = TestDatabase::new("checkout_test");
    let (name, plain_url) = (
        database.name().to_owned(),
        format!("{}?sslmode=disable", database.url()),
    );
    let app = spawn_app_on(database, |c| {
        c.database_url = format!("{}?sslmode=require", c.database_url.expose()).into();
    })
    .await;

    let mut observer = PgConnection::connect(&plain_url)
        .await
        .expect("an unencrypted look from the side");
    let server_ssl: String = sqlx::query_scalar("SHOW ssl")
        .fetch_one(&mut observer)
        .await
        .expect("SHOW ssl");
    assert_eq!(
        server_ssl, "on",
        "this test needs the PostgreSQL server to offer TLS (Debian's does, with its snakeoil certificate)"
    );
    // A whole payment: the pool, the warm stash (the pay's statement, the
    // session's load) and the callback's path all reach the database.
    let (account, order) = app.account_with_order(10_000, 2_500).await;
    assert_eq!(
        app.pay_until_final(&order.order_no).await.status,
        OrderStatus::Paid
    );
    assert_eq!(app.balance(&account).await, 7_500);

    let (encrypted, plain): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl)
           FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
          WHERE a.datname = $1 AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()",
    )
    .bind(&name)
    .fetch_one(&mut observer)
    .await
    .expect("the database's connections");
    assert!(
        encrypted >= 2,
        "the app holds {encrypted} encrypted connections"
    );
    assert_eq!(plain, 0, "an app connection is not encrypted");
    observer.close().await.ok();
}
