//! Which open attempt the query worker claims (`db::attempts::claim_due_query`),
//! and which PENDING refund (`db::refunds::claim_due_query`): only those that
//! are due, the one due longest ago first, never one whose order another
//! transaction holds; and a claim reads the due entries of its indexes, not
//! every attempt or refund in flight.
//!
//! These run on a migrated database with no backend, so no worker claims the
//! rows first.

use crate::helpers::seeds::{
    Times, account, attempt, database_with_pool, never_queried, order, queried,
};
use backend::db::attempts::{self, CLAIM_DUE_QUERY_SQL, DUE_CANDIDATES, MARK_SUBMITTED_SQL};
use backend::db::refunds::{self, CLAIM_DUE_REFUND_SQL};
use sqlx::PgPool;
use testkit::TestDatabase;
use uuid::Uuid;

/// Seconds after a hand-over before the first query, as the worker is configured.
const AFTER: f64 = 60.0;

async fn database() -> (TestDatabase, PgPool) {
    database_with_pool(8).await
}

/// What the query worker claims: an open attempt (named by its order
/// number) or a PENDING refund (named by its refund number).
#[derive(Clone, Copy)]
enum Due {
    Attempt,
    Refund,
}

/// A claim's transaction: it keeps the claimed order locked until dropped.
type Claim = sqlx::Transaction<'static, sqlx::Postgres>;

/// Claims one `due` in a transaction of its own, which keeps the claimed
/// order locked until dropped.
async fn claim(db: &PgPool, due: Due) -> (Option<String>, Claim) {
    let mut tx = db.begin().await.expect("begin");
    let claimed = match due {
        Due::Attempt => attempts::claim_due_query(&mut tx, AFTER)
            .await
            .expect("claim")
            .map(|c| c.order_no),
        Due::Refund => refunds::claim_due_query(&mut tx, AFTER)
            .await
            .expect("claim")
            .map(|c| c.refund_no),
    };
    (claimed, tx)
}

/// Claims `due` until nothing is left, each claim keeping its order locked,
/// so that the next one skips it: what was claimed, in order, and the claims
/// still holding their orders.
async fn claim_all(db: &PgPool, due: Due) -> (Vec<String>, Vec<Claim>) {
    let mut held = Vec::new();
    let mut order = Vec::new();
    loop {
        let (claimed, tx) = claim(db, due).await;
        let Some(claimed) = claimed else { break };
        order.push(claimed);
        held.push(tx);
        assert!(order.len() <= 8, "claimed more than there are: {order:?}");
    }
    (order, held)
}

#[tokio::test]
async fn only_due_attempts_are_claimed_the_one_due_longest_ago_first_and_none_that_is_held() {
    let (_database, db) = database().await;
    // Not due: handed over 30 s ago; made long ago but handed over 10 s ago;
    // queried before and next due in 10 s; settled long ago.
    attempt(&db, "fresh", never_queried(-31, Some(-30)), "SUBMITTED").await;
    attempt(
        &db,
        "late_hand_over",
        never_queried(-300, Some(-10)),
        "SUBMITTED",
    )
    .await;
    attempt(&db, "queried_later", queried(10), "SUBMITTED").await;
    attempt(&db, "settled", never_queried(-900, Some(-899)), "SUCCEEDED").await;
    // Due: 10 s ago (queried before), 30 s ago (handed over 90 s ago), 60 s ago
    // (never handed over, made 120 s ago: due from its creation), 200 s ago (UNKNOWN).
    attempt(&db, "requery", queried(-10), "SUBMITTED").await;
    attempt(&db, "first", never_queried(-91, Some(-90)), "SUBMITTED").await;
    attempt(
        &db,
        "never_handed_over",
        never_queried(-120, None),
        "CREATED",
    )
    .await;
    attempt(&db, "unknown", queried(-200), "UNKNOWN").await;

    let (order, mut held) = claim_all(&db, Due::Attempt).await;
    assert_eq!(
        order,
        [
            "due_unknown",
            "due_never_handed_over",
            "due_first",
            "due_requery"
        ],
        "the due attempts, the one due longest ago first"
    );

    // Let one go: it is the one claimed next; the others are still held.
    held.remove(1).rollback().await.expect("rollback");
    let (again, _tx) = claim(&db, Due::Attempt).await;
    assert_eq!(again.as_deref(), Some("due_never_handed_over"));
}

/// Sums, over every node of an `EXPLAIN (ANALYZE, FORMAT JSON)` plan that reads
/// `table`, the rows it returned and the rows its filter removed.
fn rows_read(plan: &serde_json::Value, table: &str) -> f64 {
    sum_over_nodes(plan, &|node| {
        if node["Relation Name"] != table {
            return 0.0;
        }
        let loops = node["Actual Loops"].as_f64().unwrap_or(1.0);
        (node["Actual Rows"].as_f64().unwrap_or(0.0)
            + node["Rows Removed by Filter"].as_f64().unwrap_or(0.0)
            + node["Rows Removed by Index Recheck"]
                .as_f64()
                .unwrap_or(0.0))
            * loops
    })
}

/// `figure` of every node of an `EXPLAIN (FORMAT JSON)` plan, summed.
fn sum_over_nodes(plan: &serde_json::Value, figure: &dyn Fn(&serde_json::Value) -> f64) -> f64 {
    figure(plan)
        + plan["Plans"]
            .as_array()
            .map(|plans| plans.iter().map(|plan| sum_over_nodes(plan, figure)).sum())
            .unwrap_or(0.0)
}

/// One account with 20,005 orders `flight_1` ... `flight_20005`, PENDING, or
/// PAID with `paid`: the orders of the work in flight below.
async fn orders_in_flight(db: &PgPool, paid: bool) {
    let account_id = account(db, "EUR", 100_000_000, 0).await;
    sqlx::query(
        "INSERT INTO orders (order_no, account_id, amount_cents, currency, status, expires_at, paid_at)
         SELECT 'flight_' || k, $1, 100, 'EUR', CASE WHEN $2 THEN 'PAID' ELSE 'PENDING' END,
                now() + interval '1 day', CASE WHEN $2 THEN now() END
         FROM generate_series(1, 20005) k",
    )
    .bind(account_id)
    .bind(paid)
    .execute(db)
    .await
    .expect("orders");
}

/// `EXPLAIN (ANALYZE)`s the claim `sql` over fresh statistics and asserts it
/// found one due row of `table` and read at most 4 x [`DUE_CANDIDATES`] of its
/// 20,005 rows in flight.
async fn assert_claim_reads_few(db: &PgPool, sql: &str, table: &str) {
    sqlx::query(&format!("ANALYZE {table}, orders"))
        .execute(db)
        .await
        .expect("analyze");
    let mut tx = db.begin().await.expect("begin");
    let plan: serde_json::Value =
        sqlx::query_scalar(&format!("EXPLAIN (ANALYZE, FORMAT JSON) {sql}"))
            .bind(AFTER)
            .bind(DUE_CANDIDATES)
            .fetch_one(&mut *tx)
            .await
            .expect("explain");
    let plan = &plan[0]["Plan"];
    let read = rows_read(plan, table);
    assert!(
        read <= 4.0 * DUE_CANDIDATES as f64,
        "a claim read {read} rows of {table}, 20,005 in flight:\n{plan:#}"
    );
    assert_eq!(
        plan["Actual Rows"], 1,
        "the claim found a due row:\n{plan:#}"
    );
}

#[tokio::test]
async fn a_claim_reads_the_due_attempts_not_every_attempt_in_flight() {
    let (_database, db) = database().await;
    // 20,000 attempts in flight, handed over in the last 50 s (none due), and
    // 5 due: a claim must not read its way through the 20,000.
    orders_in_flight(&db, false).await;
    sqlx::query(
        "INSERT INTO payment_attempts (payment_id, request_token, order_no, amount_cents, currency, method,
                                       response_status, response_body, status, created_at, submitted_at)
         SELECT gen_random_uuid(), gen_random_uuid(), 'flight_' || k, 100, 'EUR', 'wallet', 202, '{}', 'SUBMITTED',
                now() - make_interval(secs => CASE WHEN k > 20000 THEN 600 ELSE k % 50 END),
                now() - make_interval(secs => CASE WHEN k > 20000 THEN 600 ELSE k % 50 END)
         FROM generate_series(1, 20005) k",
    )
    .execute(&db)
    .await
    .expect("attempts");
    assert_claim_reads_few(&db, CLAIM_DUE_QUERY_SQL, "payment_attempts").await;
}

/// A PAID order of its own and a PENDING refund of it made, handed over and
/// next to be queried at `times`, or a SUCCEEDED one with `settled`; returns
/// the refund number.
async fn refund(db: &PgPool, name: &str, times: Times, settled: bool) -> String {
    let account_id = account(db, "EUR", 10_000, 0).await;
    let order_no = format!("due_refund_{name}");
    let refund_no = format!("rf_{name}");
    order(db, &order_no, account_id, true).await;
    sqlx::query(
        "INSERT INTO refunds (refund_no, order_no, amount_cents, currency, reason, status,
                              platform_payment_id, requested_by, created_at, submitted_at,
                              next_query_at, settled_at)
         VALUES ($1, $2, 100, 'EUR', 'test', CASE WHEN $3 THEN 'SUCCEEDED' ELSE 'PENDING' END,
                 'pay_' || $1, 'merchant', now() + make_interval(secs => $4),
                 now() + make_interval(secs => $5), now() + make_interval(secs => $6),
                 CASE WHEN $3 THEN now() END)",
    )
    .bind(&refund_no)
    .bind(&order_no)
    .bind(settled)
    .bind(times.created as f64)
    .bind(times.submitted.map(|s| s as f64))
    .bind(times.next_query.map(|s| s as f64))
    .execute(db)
    .await
    .expect("refund");
    refund_no
}

#[tokio::test]
async fn only_due_refunds_are_claimed_the_one_due_longest_ago_first_and_none_that_is_held() {
    let (_database, db) = database().await;
    // Not due: handed over 30 s ago; made long ago but handed over 10 s ago;
    // queried before and next due in 10 s; settled long ago.
    refund(&db, "fresh", never_queried(-31, Some(-30)), false).await;
    refund(&db, "late_hand_over", never_queried(-300, Some(-10)), false).await;
    refund(&db, "queried_later", queried(10), false).await;
    refund(&db, "settled", never_queried(-900, Some(-899)), true).await;
    // Due: 10 s ago (queried before), 30 s ago (handed over 90 s ago), 60 s ago
    // (never accepted, made 120 s ago: due from its creation), 200 s ago.
    refund(&db, "requery", queried(-10), false).await;
    refund(&db, "first", never_queried(-91, Some(-90)), false).await;
    refund(&db, "never_accepted", never_queried(-120, None), false).await;
    refund(&db, "long_ago", queried(-200), false).await;

    let (order, mut held) = claim_all(&db, Due::Refund).await;
    assert_eq!(
        order,
        ["rf_long_ago", "rf_never_accepted", "rf_first", "rf_requery"],
        "the due refunds, the one due longest ago first"
    );

    // Let one go: it is the one claimed next; the others are still held.
    held.remove(2).rollback().await.expect("rollback");
    let (again, _tx) = claim(&db, Due::Refund).await;
    assert_eq!(again.as_deref(), Some("rf_first"));
}

#[tokio::test]
async fn a_refund_claim_reads_the_due_refunds_not_every_refund_in_flight() {
    let (_database, db) = database().await;
    // 20,000 refunds in flight, handed over in the last 50 s (none due), and
    // 5 due: a claim must not read its way through the 20,000.
    orders_in_flight(&db, true).await;
    sqlx::query(
        "INSERT INTO refunds (refund_no, order_no, amount_cents, currency, reason,
                              platform_payment_id, requested_by, created_at, submitted_at)
         SELECT 'rf_' || k, 'flight_' || k, 100, 'EUR', 'test', 'pay_' || k, 'merchant',
                now() - make_interval(secs => CASE WHEN k > 20000 THEN 600 ELSE k % 50 END),
                now() - make_interval(secs => CASE WHEN k > 20000 THEN 600 ELSE k % 50 END)
         FROM generate_series(1, 20005) k",
    )
    .execute(&db)
    .await
    .expect("refunds");
    assert_claim_reads_few(&db, CLAIM_DUE_REFUND_SQL, "refunds").await;
}

/// Sums the shared buffers (hit or read) of every node of an `EXPLAIN
/// (ANALYZE, BUFFERS, FORMAT JSON)` plan that scans `table` (the update node
/// itself, which writes the new row versions, is left out).
fn buffers_scanned(plan: &serde_json::Value, table: &str) -> f64 {
    sum_over_nodes(plan, &|node| {
        if node["Relation Name"] != table || node["Node Type"] == "ModifyTable" {
            return 0.0;
        }
        node["Shared Hit Blocks"].as_f64().unwrap_or(0.0)
            + node["Shared Read Blocks"].as_f64().unwrap_or(0.0)
    })
}

#[tokio::test]
async fn recording_hand_overs_probes_each_payment_not_every_hand_over_since_the_last_vacuum() {
    let (_database, db) = database().await;
    // What a busy hour leaves behind: 20,000 attempts made and handed over,
    // each hand-over a new row version (not HOT), so the partial index of
    // unsubmitted attempts still holds an entry for each of them until a
    // VACUUM; autovacuum is held off so that stays true while the test runs.
    sqlx::query("ALTER TABLE payment_attempts SET (autovacuum_enabled = false)")
        .execute(&db)
        .await
        .expect("no autovacuum");
    orders_in_flight(&db, false).await;
    sqlx::query(
        "INSERT INTO payment_attempts (payment_id, request_token, order_no, amount_cents, currency, method,
                                       response_status, response_body, created_at)
         SELECT gen_random_uuid(), gen_random_uuid(), 'flight_' || k, 100, 'EUR', 'wallet', 202, '{}',
                now() - make_interval(secs => 20005 - k)
         FROM generate_series(1, 20005) k",
    )
    .execute(&db)
    .await
    .expect("attempts");
    sqlx::query(
        "UPDATE payment_attempts SET submitted_at = now(), status = 'SUBMITTED'
         WHERE order_no <> ALL (SELECT 'flight_' || k FROM generate_series(20001, 20005) k)",
    )
    .execute(&db)
    .await
    .expect("20,000 handed over");
    sqlx::query("ANALYZE payment_attempts")
        .execute(&db)
        .await
        .expect("analyze");
    let waiting: Vec<Uuid> = sqlx::query_scalar(
        "SELECT payment_id FROM payment_attempts WHERE submitted_at IS NULL ORDER BY order_no",
    )
    .fetch_all(&db)
    .await
    .expect("the five waiting");
    assert_eq!(waiting.len(), 5);
    let platform_ids: Vec<Option<String>> = (0..5).map(|k| Some(format!("pay_{k}"))).collect();
    let qr_codes: Vec<Option<String>> = vec![None; 5];

    let mut tx = db.begin().await.expect("begin");
    let plan: serde_json::Value = sqlx::query_scalar(&format!(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {MARK_SUBMITTED_SQL}"
    ))
    .bind(&waiting)
    .bind(&platform_ids)
    .bind(&qr_codes)
    .fetch_one(&mut *tx)
    .await
    .expect("explain");
    let plan = &plan[0]["Plan"];
    // A primary-key probe is 3 index pages and the heap page; a scan of the
    // partial index reads every page of its 20,000 dead entries (over 50), a
    // scan of the table more.
    let scanned = buffers_scanned(plan, "payment_attempts");
    assert!(
        scanned <= 6.0 * waiting.len() as f64,
        "recording 5 hand-overs scanned {scanned} pages of payment_attempts:\n{plan:#}"
    );
    let recorded: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payment_attempts WHERE payment_id = ANY($1) AND status = 'SUBMITTED'
           AND submitted_at IS NOT NULL AND platform_payment_id LIKE 'pay_%'",
    )
    .bind(&waiting)
    .fetch_one(&mut *tx)
    .await
    .expect("recorded");
    assert_eq!(recorded, 5, "the statement recorded the five hand-overs");
    tx.rollback().await.expect("rollback");

    // As the backend runs it: never kept prepared on the connection, so no
    // generic plan made while the table was small serves it later (with the
    // filter above, such a plan was a scan of the whole table).
    let mut conn = db.acquire().await.expect("a connection");
    for (payment_id, platform_id) in waiting.iter().zip(&platform_ids) {
        attempts::mark_submitted(
            &mut *conn,
            &[attempts::Submitted {
                payment_id: *payment_id,
                platform_payment_id: platform_id.as_deref().and_then(|id| id.parse().ok()),
                qr_code: None,
            }],
        )
        .await
        .expect("recorded");
    }
    let kept: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_prepared_statements
         WHERE statement LIKE '%Hand-overs the platform accepted%'
           AND statement NOT LIKE '%pg_prepared_statements%'",
    )
    .fetch_one(&mut *conn)
    .await
    .expect("prepared statements");
    assert_eq!(kept, 0, "the hand-over record is planned for each batch");
    let recorded: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payment_attempts WHERE payment_id = ANY($1) AND status = 'SUBMITTED'",
    )
    .bind(&waiting)
    .fetch_one(&mut *conn)
    .await
    .expect("recorded");
    assert_eq!(recorded, 5, "each call recorded its hand-over");
}
