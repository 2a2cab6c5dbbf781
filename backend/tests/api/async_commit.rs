//! The three records that are part of no guarantee (a duplicate's delivery,
//! an accepted hand-over, an issued request token) commit without waiting for a
//! WAL flush: each statement turns `synchronous_commit` off for its own
//! transaction. These tests hold the two halves of that: the statement does
//! turn it off, and the setting ends with its transaction, so the next
//! transaction on the same pooled connection (a charge, say) commits
//! synchronously again; and no other statement of the backend touches it.

use crate::helpers::seeds::{attempt, database_with_pool, never_queried};
use backend::db::attempts::{self, Submitted};
use backend::db::orders;
use sqlx::{PgConnection, PgPool};
use std::path::Path;
use uuid::Uuid;

/// The statements allowed to commit asynchronously, by the file that holds them.
const ASYNC_COMMIT_FILES: [&str; 3] = [
    "sql/callback/record_deliveries.sql",
    "sql/pay/mark_submitted.sql",
    "src/db/orders.rs",
];

async fn synchronous_commit(conn: &mut PgConnection) -> String {
    sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(conn)
        .await
        .expect("show")
}

/// A PENDING order with an attempt made a second ago and not handed over;
/// returns the order number and the payment id.
async fn order_with_attempt(db: &PgPool) -> (String, Uuid) {
    let order_no = attempt(db, "async", never_queried(-1, None), "CREATED").await;
    let payment_id =
        sqlx::query_scalar("SELECT payment_id FROM payment_attempts WHERE order_no = $1")
            .bind(&order_no)
            .fetch_one(db)
            .await
            .expect("the attempt");
    (order_no, payment_id)
}

#[tokio::test]
async fn the_audit_records_commit_asynchronously_and_the_setting_ends_with_their_transaction() {
    // One connection: every statement below runs on the same server session.
    let (_database, db) = database_with_pool(1).await;
    let (order_no, payment_id) = order_with_attempt(&db).await;

    // Each record, in a transaction of its own: off inside it, on after it.
    let mut tx = db.begin().await.expect("begin");
    assert_eq!(
        synchronous_commit(&mut tx).await,
        "on",
        "the server default"
    );
    sqlx::query(include_str!("../../sql/callback/record_deliveries.sql"))
        .bind(vec!["cb_async"])
        .bind(vec![Some(order_no.as_str())])
        .bind(vec![Some("payment.succeeded")])
        .bind(vec!["DUPLICATE"])
        .bind(vec![200_i16])
        .execute(&mut *tx)
        .await
        .expect("deliveries");
    assert_eq!(synchronous_commit(&mut tx).await, "off", "delivery log");
    tx.commit().await.expect("commit");

    let mut tx = db.begin().await.expect("begin");
    assert_eq!(
        synchronous_commit(&mut tx).await,
        "on",
        "after the delivery log"
    );
    attempts::mark_submitted(
        &mut *tx,
        &[Submitted {
            payment_id,
            platform_payment_id: "pay_async".parse().ok(),
            qr_code: None,
        }],
    )
    .await
    .expect("mark submitted");
    assert_eq!(synchronous_commit(&mut tx).await, "off", "hand-over record");
    tx.commit().await.expect("commit");

    let mut tx = db.begin().await.expect("begin");
    assert_eq!(
        synchronous_commit(&mut tx).await,
        "on",
        "after the hand-over record"
    );
    orders::record_tokens_issued(
        &mut *tx,
        &[orders::TokenIssued {
            request_token: Uuid::new_v4(),
            order_no: order_no.clone(),
            expires_at: time::OffsetDateTime::now_utc() + time::Duration::minutes(15),
        }],
    )
    .await
    .expect("token record");
    assert_eq!(synchronous_commit(&mut tx).await, "off", "token record");
    tx.commit().await.expect("commit");

    let mut conn = db.acquire().await.expect("acquire");
    assert_eq!(
        synchronous_commit(&mut conn).await,
        "on",
        "the connection commits synchronously again"
    );
    // The records were written, not only the setting.
    let (deliveries, submitted, tokens): (i64, bool, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM callback_deliveries WHERE callback_id = 'cb_async'),
                (SELECT status = 'SUBMITTED' FROM payment_attempts WHERE payment_id = $1),
                (SELECT count(*) FROM request_tokens_issued WHERE order_no = $2)",
    )
    .bind(payment_id)
    .bind(&order_no)
    .fetch_one(&mut *conn)
    .await
    .expect("rows");
    assert_eq!((deliveries, submitted, tokens), (1, true, 1));
}

/// Every file under `dir` (recursively) whose name ends with one of `suffixes`.
fn files(dir: &Path, suffixes: &[&str], found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, suffixes, found);
        } else if suffixes.iter().any(|s| path.to_string_lossy().ends_with(s)) {
            found.push(path);
        }
    }
}

#[test]
fn no_other_statement_touches_synchronous_commit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    files(&root.join("sql"), &[".sql"], &mut sources);
    files(&root.join("src"), &[".rs"], &mut sources);
    let mut touching: Vec<String> = sources
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path)
                .expect("read")
                .to_lowercase()
                .replace(char::is_whitespace, "");
            [
                "set_config('synchronous_commit'",
                "setsynchronous_commit",
                "setlocalsynchronous_commit",
                "(\"synchronous_commit\"",
            ]
            .iter()
            .any(|turns_off| text.contains(turns_off))
        })
        .map(|path| {
            path.strip_prefix(root)
                .expect("under the crate")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    touching.sort();
    let mut allowed = ASYNC_COMMIT_FILES.map(str::to_owned).to_vec();
    allowed.sort();
    assert_eq!(
        touching, allowed,
        "only the audit records may commit asynchronously: never a charge, a hold or a refund"
    );
}
