//! The callback statement's stash of connections (`db::warm`), on a real
//! database: a completed statement's connection is used again by the next one
//! without going through the pool; statements take turns in arrival order and
//! never hold more than the stash's size; idle connections go back to the pool
//! and all of them at shutdown; no connection is kept that failed other than by
//! a database's refusal (an I/O error, or the `FATAL` of a terminated session).

use crate::helpers::seeds::database_with_pool;
use backend::db::warm::{WARM_FOR, WarmConnections, is_refusal};
use backend::infra::shutdown::{Phase, Shutdown};
use sqlx::PgConnection;
use std::time::Duration;

async fn backend_pid(conn: &mut PgConnection) -> sqlx::Result<i32> {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(conn)
        .await
}

/// Waits (up to two seconds) until `done` holds.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

#[tokio::test]
async fn a_statement_s_connection_serves_the_next_one_and_goes_back_to_the_pool_when_idle() {
    // One connection in all: whether the pool can hand it out tells where it is.
    let (_database, db) = database_with_pool(1).await;
    let warm = WarmConnections::new(db.clone(), 1);

    let mut first = warm.acquire().await.expect("a connection");
    let first_pid = backend_pid(&mut first).await;
    warm.give_back(first, &first_pid);
    assert_eq!(warm.stashed(), 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        db.try_acquire().is_none(),
        "a stashed connection stays checked out: nothing went through the pool's release"
    );

    let mut second = warm.acquire().await.expect("a connection");
    let second_pid = backend_pid(&mut second).await;
    assert_eq!(
        second_pid.as_ref().ok(),
        first_pid.as_ref().ok(),
        "the next statement runs on the same connection"
    );
    warm.give_back(second, &second_pid);

    let stop = Shutdown::new();
    let sweeper = tokio::spawn(warm.clone().sweep(stop.clone()));
    assert!(
        eventually(|| warm.stashed() == 0).await,
        "an idle stashed connection leaves the stash after {WARM_FOR:?}"
    );
    let from_pool = tokio::time::timeout(Duration::from_secs(2), db.acquire())
        .await
        .expect("and the pool has it again")
        .expect("a connection");
    drop(from_pool);

    // Stashed again, then the shutdown gives it back.
    let conn = warm.acquire().await.expect("a connection");
    warm.give_back(conn, &Ok(()));
    assert_eq!(warm.stashed(), 1);
    stop.advance(Phase::Stopping);
    tokio::time::timeout(Duration::from_secs(2), sweeper)
        .await
        .expect("the sweeper stops at shutdown")
        .expect("and does not panic");
    assert_eq!(warm.stashed(), 0);
    let from_pool = tokio::time::timeout(Duration::from_secs(2), db.acquire())
        .await
        .expect("the pool has it again after the shutdown")
        .expect("a connection");
    drop(from_pool);
}

#[tokio::test]
async fn statements_take_turns_first_come_first_served_and_hand_their_connection_on() {
    let (_database, db) = database_with_pool(6).await;
    let warm = WarmConnections::new(db.clone(), 2);
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut conn = warm.acquire().await.expect("a connection");
        let pid = backend_pid(&mut conn).await.expect("pid");
        held.push((conn, pid));
    }
    // The pool has room, but the path holds its two: the next ones wait, in order.
    let (order_tx, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut waiters = Vec::new();
    for n in 0..2 {
        let (warm, order_tx) = (warm.clone(), order_tx.clone());
        waiters.push(tokio::spawn(async move {
            let mut conn = warm.acquire().await.expect("a connection");
            let pid = backend_pid(&mut conn).await;
            order_tx.send(n).expect("send");
            (conn, pid)
        }));
        // Queued in this order.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(order_rx.try_recv().is_err(), "nobody overtakes a held turn");

    let (conn, pid) = held.pop().expect("held");
    warm.give_back(conn, &Ok(()));
    assert_eq!(
        order_rx.recv().await,
        Some(0),
        "the first in line goes first"
    );
    let (first_conn, first_pid) = waiters.remove(0).await.expect("first waiter");
    assert_eq!(
        first_pid.as_ref().ok(),
        Some(&pid),
        "and gets the connection just given back"
    );
    assert!(order_rx.try_recv().is_err());
    let (conn, _) = held.pop().expect("held");
    warm.give_back(conn, &Ok(()));
    assert_eq!(order_rx.recv().await, Some(1));
    let (second_conn, second_pid) = waiters.remove(0).await.expect("second waiter");
    warm.give_back(first_conn, &first_pid);
    warm.give_back(second_conn, &second_pid);
    assert_eq!(warm.stashed(), 2, "never more than the path's size");
}

#[tokio::test]
async fn the_stash_keeps_no_connection_that_broke() {
    let (_database, db) = database_with_pool(4).await;
    let warm = WarmConnections::new(db.clone(), 2);
    let conn = warm.acquire().await.expect("a connection");
    warm.give_back(conn, &Ok(()));
    assert_eq!(warm.stashed(), 1);

    // A refusal by the database leaves the connection usable: kept.
    let mut conn = warm.acquire().await.expect("a connection");
    let refused = sqlx::query_scalar::<_, i32>("SELECT 1 / 0")
        .fetch_one(&mut *conn)
        .await;
    assert!(
        matches!(&refused, Err(err) if is_refusal(err)),
        "{refused:?}"
    );
    warm.give_back(conn, &refused);
    assert_eq!(warm.stashed(), 1);
    let mut conn = warm.acquire().await.expect("a connection");
    assert_eq!(
        sqlx::query_scalar::<_, i32>("SELECT 7")
            .fetch_one(&mut *conn)
            .await
            .expect("the connection still answers after the refusal"),
        7
    );

    // A connection whose server process is gone fails its next statement
    // without a refusal (an I/O error or the session's FATAL): closed, not kept.
    let pid = backend_pid(&mut conn).await.expect("pid");
    let terminated: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(&db)
        .await
        .expect("terminate");
    assert!(terminated);
    let broken = sqlx::query_scalar::<_, i32>("SELECT 1")
        .fetch_one(&mut *conn)
        .await;
    assert!(
        matches!(&broken, Err(err) if !is_refusal(err)),
        "{broken:?}"
    );
    warm.give_back(conn, &broken);
    assert_eq!(warm.stashed(), 0, "the broken connection is not kept");

    // Every connection handed out afterwards answers.
    for _ in 0..3 {
        let mut conn = warm.acquire().await.expect("a connection");
        let answered = backend_pid(&mut conn).await;
        assert!(answered.is_ok(), "{answered:?}");
        assert_ne!(answered.as_ref().ok(), Some(&pid));
        warm.give_back(conn, &answered);
    }
}
